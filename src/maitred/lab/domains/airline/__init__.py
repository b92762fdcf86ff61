"""airline: a second demo domain -- an airline's customer-service assistant.

Thirteen Agent Skills folders under ``skills/``, modelled on the tau2-bench airline domain whose
tools and policy :mod:`maitred.actions.packs.tau2_airline` and :mod:`maitred.lab.sim.airline`
implement: book, search, cancel, change flights, change cabin, add bags, fix passenger details,
flight status, disruption certificates, look up a reservation, track a refund, explain travel
insurance and hand over to a person. Each folder's ``maitred.yaml`` declares a cost (1-3),
whether the skill writes, and CEL exit predicates over these state roots:

* ``user`` -- the signed-in customer: ``membership`` (regular, silver, gold),
  ``reservation_count``, ``payment_method_count``, ``card_on_file`` (a credit or gift card, the
  methods that can pay for changes);
* ``reservation`` -- the reservation under discussion: ``status`` (active, cancelled), ``cabin``
  (basic_economy, economy, business), ``insurance`` (yes, no), ``created_at`` (unix seconds),
  ``amount_paid``, ``segments_remaining``, and the flags ``segment_flown``,
  ``segment_cancelled``, ``segment_delayed`` (by the airline) and ``certificate_sent``;
* ``flight`` -- the flight under discussion: ``departs_at`` (unix seconds);
* ``inventory.sales_open`` and ``support.queue_open`` -- airline-wide flags.

The skills carry no procedures; the action gate's ``tau2-airline`` pack checks each write.
:mod:`maitred.lab.domains.airline._phrases` holds how customers ask for each skill.
"""

from __future__ import annotations

from pathlib import Path


def skills_dir() -> Path:
    """The folder holding the airline skill folders (SKILL.md + maitred.yaml)."""
    return Path(__file__).resolve().parent / "skills"


__all__ = ["skills_dir"]
