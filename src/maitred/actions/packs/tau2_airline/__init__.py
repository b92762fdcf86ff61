"""Policy pack ``tau2-airline``: the tau2-bench airline policy as action-gate predicates.

Put it in front of the tau2 airline tools (or :mod:`maitred.actions.sim.airline`, which
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

Every rule has a stable code (:func:`codes`); each write is first checked by must-read-before-
write (``AIRLINE_MUST_READ_RESERVATION`` / ``AIRLINE_MUST_READ_USER``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maitred.actions.gate import ActionGate
from maitred.actions.packs.tau2_airline import baggage, booking, cancel, certificate, flights
from maitred.actions.packs.tau2_airline._common import DEFAULT_NOW, wall_seconds
from maitred.actions.policy import Policy, PolicyPredicate, ToolSpec, Tracking
from maitred.actions.session import must_read_before_write
from maitred.errors import ConfigError

NAME = "tau2-airline"
DEFAULTS: Mapping[str, Any] = {"now": DEFAULT_NOW, "insurance_needs_reason": True}

READ_TOOLS: Mapping[str, tuple[str, ...]] = {
    "get_reservation_details": ("reservation_id",),
    "get_user_details": ("user_id",),
    "search_direct_flight": ("origin", "destination", "date"),
    "search_onestop_flight": ("origin", "destination", "date"),
    "get_flight_status": ("flight_number", "date"),
    "list_all_airports": (),
}
WRITE_TOOLS: Mapping[str, tuple[str, ...]] = {
    "book_reservation": (
        "user_id", "origin", "destination", "flight_type", "cabin", "flights", "passengers",
        "payment_methods", "total_baggages", "nonfree_baggages", "insurance",
    ),
    "cancel_reservation": ("reservation_id",),
    "update_reservation_flights": ("reservation_id", "cabin", "flights", "payment_id"),
    "update_reservation_baggages": (
        "reservation_id", "total_baggages", "nonfree_baggages", "payment_id",
    ),
    "update_reservation_passengers": ("reservation_id", "passengers"),
    "send_certificate": ("user_id", "amount"),
}  # fmt: skip
RESERVATION_WRITES = (
    "cancel_reservation",
    "update_reservation_flights",
    "update_reservation_baggages",
    "update_reservation_passengers",
)
TRACKING = Tracking(
    reads={"get_reservation_details": "reservation_id", "get_user_details": "user_id"},
    creates={"book_reservation": ("get_reservation_details", "reservation_id")},
)


def predicates(insurance_needs_reason: bool = True) -> list[PolicyPredicate]:
    """Every rule of the pack, in evaluation order per tool."""
    return [
        must_read_before_write(
            RESERVATION_WRITES,
            id_arg="reservation_id",
            read_tool="get_reservation_details",
            code="AIRLINE_MUST_READ_RESERVATION",
        ),
        must_read_before_write(
            ("book_reservation", "send_certificate"),
            id_arg="user_id",
            read_tool="get_user_details",
            code="AIRLINE_MUST_READ_USER",
        ),
        *cancel.predicates(insurance_needs_reason),
        *flights.predicates(),
        *baggage.predicates(),
        *booking.predicates(),
        *certificate.predicates(),
    ]


def settings_with(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The pack's settings: :data:`DEFAULTS` updated by ``overrides`` (unknown names refused)."""
    out = dict(DEFAULTS)
    for key, value in (overrides or {}).items():
        if key not in DEFAULTS:
            raise ConfigError(
                f"pack {NAME!r} has no setting {key!r}; choose one of {sorted(DEFAULTS)}"
            )
        if value is not None:
            out[key] = value
    try:
        wall_seconds(str(out["now"]))
    except ValueError:
        raise ConfigError(
            f"pack {NAME!r}: now={out['now']!r} is not an ISO time such as {DEFAULT_NOW}"
        ) from None
    return out


def build_policy(overrides: Mapping[str, Any] | None = None) -> Policy:
    """The pack as a :class:`Policy` (settings as in :func:`settings_with`)."""
    settings = settings_with(overrides)
    specs = [ToolSpec(n, False, req) for n, req in READ_TOOLS.items()]
    specs += [ToolSpec(n, True, req) for n, req in WRITE_TOOLS.items()]
    preds = predicates(bool(settings["insurance_needs_reason"]))
    return Policy.build(NAME, specs, preds, TRACKING, settings)


def make_gate(overrides: Mapping[str, Any] | None = None) -> ActionGate:
    """An :class:`ActionGate` for the pack whose clock is the pack's fixed ``now``."""
    policy = build_policy(overrides)
    at = wall_seconds(str(policy.settings["now"]))
    return ActionGate(policy, clock=lambda: at)


def codes() -> list[str]:
    """Every rule code of the pack, sorted."""
    return sorted({p.code for p in predicates()})


__all__ = [
    "DEFAULTS",
    "DEFAULT_NOW",
    "NAME",
    "TRACKING",
    "build_policy",
    "codes",
    "make_gate",
    "predicates",
    "settings_with",
]
