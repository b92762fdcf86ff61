"""update_reservation_flights: the whole new itinerary, checked against the reservation.

* if the itinerary changes, the current cabin must not be basic economy;
* the new itinerary keeps origin, destination and trip type;
* changing cabin requires that no segment was flown;
* new or re-priced segments (new flight/date, or any segment when the cabin changes) must be
  ``available`` with enough seats for every passenger;
* the payment must be a credit card or gift card in the user's profile.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from maitred.actions.packs.tau2_airline._common import (
    FLOWN,
    RES,
    any_status,
    route_problem,
    seat_problem,
)
from maitred.actions.rules import PolicyPredicate, Violation, policy_rule
from maitred.contract.predicate import StateView

TOOLS = ("update_reservation_flights",)


def _keys(segments: Sequence[Mapping[str, Any]]) -> set[tuple[str, str]]:
    return {(str(s["flight_number"]), str(s["date"])) for s in segments}


@policy_rule(
    code="AIRLINE_FLIGHTS_BASIC_ECONOMY",
    tools=TOOLS,
    reads=[RES, "args.flights"],
    fields=("flights",),
)
def flights_not_basic_economy(view: StateView) -> Violation | None:
    """Basic economy flights cannot be changed."""
    res = view[RES]
    changed = _keys(view["args.flights"]) != _keys(res["flights"])
    if changed and res["cabin"] == "basic_economy":
        return Violation(
            "the reservation is basic economy, whose flights cannot be changed (its cabin can "
            "be upgraded first, keeping the same flights)",
            ("flights",),
        )
    return None


@policy_rule(
    code="AIRLINE_FLIGHTS_ROUTE_CHANGED",
    tools=TOOLS,
    reads=[RES, "args.flights", "state.flights"],
    fields=("flights",),
)
def flights_keep_route(view: StateView) -> Violation | None:
    """The new itinerary keeps the origin, destination and trip type."""
    res = view[RES]
    why = route_problem(
        view["state.flights"],
        view["args.flights"],
        str(res["origin"]),
        str(res["destination"]),
        str(res["flight_type"]),
    )
    if why is None:
        return None
    return Violation(
        f"{why}; a change must keep the reservation's origin {res['origin']}, destination "
        f"{res['destination']} and trip type {res['flight_type']}",
        ("flights",),
    )


@policy_rule(
    code="AIRLINE_FLIGHTS_CABIN_AFTER_FLOWN",
    tools=TOOLS,
    reads=[RES, "args.cabin", "state.flights"],
    fields=("cabin",),
)
def flights_cabin_not_after_flown(view: StateView) -> Violation | None:
    """The cabin cannot change once a segment has been flown."""
    res = view[RES]
    if view["args.cabin"] != res["cabin"] and any_status(
        view["state.flights"], res["flights"], FLOWN
    ):
        return Violation(
            f"a segment has been flown, so the cabin cannot change from {res['cabin']} to "
            f"{view['args.cabin']}",
            ("cabin",),
        )
    return None


@policy_rule(
    code="AIRLINE_FLIGHTS_UNAVAILABLE",
    tools=TOOLS,
    reads=[RES, "args.flights", "args.cabin", "state.flights"],
    fields=("flights",),
)
def flights_available(view: StateView) -> Violation | None:
    """New or re-priced segments must be available with a seat for every passenger."""
    res, cabin, flights = view[RES], view["args.cabin"], view["state.flights"]
    kept = _keys(res["flights"]) if cabin == res["cabin"] else set()
    for i, seg in enumerate(view["args.flights"]):
        if (str(seg["flight_number"]), str(seg["date"])) in kept:
            continue
        why = seat_problem(flights, seg, cabin, len(res["passengers"]))
        if why is not None:
            return Violation(why, (f"flights[{i}]",))
    return None


@policy_rule(
    code="AIRLINE_FLIGHTS_PAYMENT",
    tools=TOOLS,
    reads=[RES, "args.payment_id", "state.users"],
    fields=("payment_id",),
)
def flights_payment(view: StateView) -> Violation | None:
    """The payment must be a credit card or gift card in the user's profile."""
    pid = view["args.payment_id"]
    user = view["state.users"].get(view[RES]["user_id"], {})
    method = user.get("payment_methods", {}).get(pid)
    if method is None:
        return Violation(f"payment method {pid!r} is not in the user's profile", ("payment_id",))
    if method.get("source") not in ("credit_card", "gift_card"):
        return Violation(
            f"a flight change must be paid by credit card or gift card, not {method.get('source')}",
            ("payment_id",),
        )
    return None


def predicates() -> list[PolicyPredicate]:
    """The flight-change rules, in evaluation order."""
    return [
        flights_not_basic_economy,
        flights_keep_route,
        flights_cabin_not_after_flown,
        flights_available,
        flights_payment,
    ]
