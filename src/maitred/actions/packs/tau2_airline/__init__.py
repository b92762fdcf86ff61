"""Policy pack ``tau2-airline``: the tau2-bench airline policy as action-gate predicates.

Put it in front of the tau2 airline tools (or :mod:`maitred.lab.sim.airline`, which
implements the same tools over the same database schema)::

    from maitred.actions import Session, ToolCall
    from maitred.actions.packs import tau2_airline

    gate = tau2_airline.make_gate()                  # now = 2024-05-15T15:00:00 Eastern
    session = Session(context={"cancel_reason": "health"})
    decision = gate.check(ToolCall("cancel_reservation", {"reservation_id": "ZFA04Y"}),
                          db, session)

Settings (:data:`DEFAULTS`): ``now`` -- the business clock, an ISO time (naive = Eastern);
``insurance_needs_reason`` -- when true (default) the insurance path of cancellation needs a
stated health or weather reason in the session context.

The pack is an ordinary catalog: the tau2 airline tools (``tools.json``, with their argument
schemas) and their contracts (``tools.maitred.yaml``: which tools mutate, what a read records,
and every rule, in order), loaded through :func:`maitred.skills.load_catalog` like a user's own
tools file. Every rule has a stable code (:func:`codes`); each write is first checked by
must-read-before-write (``AIRLINE_MUST_READ_RESERVATION`` / ``AIRLINE_MUST_READ_USER``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from maitred.actions.gate import ActionGate
from maitred.actions.packs import Pack
from maitred.actions.packs.tau2_airline._common import DEFAULT_NOW, wall_seconds
from maitred.actions.rules import Rulebook, Tracking
from maitred.errors import ConfigError
from maitred.skills.model import Catalog

NAME = "tau2-airline"
#: the tool definitions; their contracts are in ``tools.maitred.yaml`` beside them
TOOLS_FILE = Path(__file__).with_name("tools.json")
DEFAULTS: Mapping[str, Any] = {"now": DEFAULT_NOW, "insurance_needs_reason": True}


def _check(settings: Mapping[str, Any]) -> None:
    try:
        wall_seconds(str(settings["now"]))
    except ValueError:
        raise ConfigError(
            f"pack {NAME!r}: now={settings['now']!r} is not an ISO time such as {DEFAULT_NOW}"
        ) from None


PACK = Pack(NAME, TOOLS_FILE, DEFAULTS, lambda s: wall_seconds(str(s["now"])), _check)
"""The pack (entry point ``tau2-airline`` of ``maitred.policy_packs``)."""


def settings_with(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The pack's settings: :data:`DEFAULTS` updated by ``overrides`` (unknown names refused)."""
    return PACK.settings(overrides)


def load_tools(overrides: Mapping[str, Any] | None = None) -> Catalog:
    """The airline tools with their contracts, loaded as any tools file is."""
    return PACK.catalog(overrides)


def build_rulebook(overrides: Mapping[str, Any] | None = None) -> Rulebook:
    """The pack as a :class:`Rulebook` (settings as in :func:`settings_with`)."""
    return PACK.rulebook(overrides)


def make_gate(overrides: Mapping[str, Any] | None = None) -> ActionGate:
    """An :class:`ActionGate` for the pack whose clock is the pack's fixed ``now``."""
    return PACK.make_gate(overrides)


def tracking() -> Tracking:
    """What sessions record for the airline tools (from the tools' contracts)."""
    return build_rulebook().tracking


def codes() -> list[str]:
    """Every rule code of the pack, sorted."""
    return sorted({p.code for t in build_rulebook().tools.values() for p in t.predicates})


__all__ = [
    "DEFAULTS",
    "DEFAULT_NOW",
    "NAME",
    "PACK",
    "TOOLS_FILE",
    "build_rulebook",
    "codes",
    "load_tools",
    "make_gate",
    "settings_with",
    "tracking",
]
