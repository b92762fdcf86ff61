"""book_reservation: passengers, payment methods, route, seats, bags and the price.

* at most 5 passengers;
* every payment method is in the user's profile, with at most 1 certificate, 1 credit card and
  3 gift cards, and a gift card or certificate covers the amount charged to it;
* the flights chain from origin to destination (and back, for a round trip);
* every segment is ``available`` with a seat in the cabin for every passenger;
* ``nonfree_baggages`` = max(0, total - free x passengers);
* the amounts sum to fare x passengers, + 30 per passenger with insurance, + 50 per nonfree bag.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from maitred.actions.packs.tau2_airline._common import (
    BAG_FEE,
    INSURANCE_FEE,
    expected_nonfree,
    fare,
    route_problem,
    seat_problem,
)
from maitred.actions.rules import PolicyPredicate, Violation, policy_rule
from maitred.contract.predicate import StateView

TOOLS = ("book_reservation",)
USER = "state.users[args.user_id]"
MAX_PASSENGERS = 5
MAX_PER_SOURCE = {"certificate": 1, "credit_card": 1, "gift_card": 3}


@policy_rule(
    code="AIRLINE_BOOKING_TOO_MANY_PASSENGERS",
    tools=TOOLS,
    reads=["args.passengers"],
    fields=("passengers",),
)
def booking_passenger_limit(view: StateView) -> Violation | None:
    """A reservation holds at most five passengers."""
    count = len(view["args.passengers"])
    if not 1 <= count <= MAX_PASSENGERS:
        return Violation(
            f"a reservation needs 1 to {MAX_PASSENGERS} passengers, not {count}", ("passengers",)
        )
    return None


@policy_rule(
    code="AIRLINE_BOOKING_PAYMENT_METHODS",
    tools=TOOLS,
    reads=[USER, "args.payment_methods"],
    fields=("payment_methods",),
)
def booking_payment_methods(view: StateView) -> Violation | None:
    """Payments come from the profile: at most 1 certificate, 1 credit card, 3 gift cards."""
    methods: Mapping[str, Any] = view[USER].get("payment_methods", {})
    used: Counter[str] = Counter()
    for i, pay in enumerate(view["args.payment_methods"]):
        method = methods.get(pay["payment_id"])
        if method is None:
            return Violation(
                f"payment method {pay['payment_id']!r} is not in the user's profile",
                (f"payment_methods[{i}].payment_id",),
            )
        source = str(method["source"])
        used[source] += 1
        if used[source] > MAX_PER_SOURCE.get(source, 0):
            return Violation(
                f"at most {MAX_PER_SOURCE.get(source, 0)} {source} payment(s) per booking",
                (f"payment_methods[{i}]",),
            )
        if source in ("gift_card", "certificate") and float(pay["amount"]) > float(
            method.get("amount", 0)
        ):
            return Violation(
                f"{pay['payment_id']} holds {method.get('amount', 0)}, less than {pay['amount']}",
                (f"payment_methods[{i}].amount",),
            )
    return None


@policy_rule(
    code="AIRLINE_BOOKING_ROUTE",
    tools=TOOLS,
    reads=["args.flights", "args.origin", "args.destination", "args.flight_type", "state.flights"],
    fields=("flights",),
)
def booking_route(view: StateView) -> Violation | None:
    """The flights chain from origin to destination (and back to origin for a round trip)."""
    why = route_problem(
        view["state.flights"],
        view["args.flights"],
        str(view["args.origin"]),
        str(view["args.destination"]),
        str(view["args.flight_type"]),
    )
    return None if why is None else Violation(why, ("flights",))


@policy_rule(
    code="AIRLINE_BOOKING_UNAVAILABLE",
    tools=TOOLS,
    reads=["args.flights", "args.cabin", "args.passengers", "state.flights"],
    fields=("flights",),
)
def booking_seats(view: StateView) -> Violation | None:
    """Every segment must be available with a seat in the cabin for every passenger."""
    pax, cabin = len(view["args.passengers"]), str(view["args.cabin"])
    for i, seg in enumerate(view["args.flights"]):
        why = seat_problem(view["state.flights"], seg, cabin, pax)
        if why is not None:
            return Violation(why, (f"flights[{i}]",))
    return None


@policy_rule(
    code="AIRLINE_BOOKING_NONFREE_MISMATCH",
    tools=TOOLS,
    reads=[USER, "args.cabin", "args.passengers", "args.total_baggages", "args.nonfree_baggages"],
    fields=("nonfree_baggages",),
)
def booking_nonfree(view: StateView) -> Violation | None:
    """nonfree_baggages must be max(0, total - free bags x passengers)."""
    due = expected_nonfree(
        int(view["args.total_baggages"]),
        len(view["args.passengers"]),
        str(view[USER]["membership"]),
        str(view["args.cabin"]),
    )
    if int(view["args.nonfree_baggages"]) != due:
        return Violation(
            f"nonfree_baggages must be {due}, not {view['args.nonfree_baggages']}",
            ("nonfree_baggages",),
        )
    return None


def booking_price(args: Mapping[str, Any], flights: Mapping[str, Any]) -> int:
    """fare x passengers + 30 x passengers with insurance + 50 x nonfree bags."""
    pax = len(args["passengers"])
    total = sum(fare(flights, seg, str(args["cabin"])) for seg in args["flights"]) * pax
    if args["insurance"] == "yes":
        total += INSURANCE_FEE * pax
    return total + BAG_FEE * int(args["nonfree_baggages"])


@policy_rule(
    code="AIRLINE_BOOKING_AMOUNT_MISMATCH",
    tools=TOOLS,
    reads=[
        "args.flights",
        "args.cabin",
        "args.passengers",
        "args.insurance",
        "args.nonfree_baggages",
        "args.payment_methods",
        "state.flights",
    ],
    fields=("payment_methods",),
)
def booking_amount(view: StateView) -> Violation | None:
    """The payment amounts must sum to the price."""
    keys = ("flights", "cabin", "passengers", "insurance", "nonfree_baggages")
    price = booking_price({k: view[f"args.{k}"] for k in keys}, view["state.flights"])
    paid = sum(float(p["amount"]) for p in view["args.payment_methods"])
    if abs(paid - price) > 1e-6:
        return Violation(
            f"the payments sum to {paid:g} but the price is {price} (fares x passengers, "
            f"+{INSURANCE_FEE} per passenger with insurance, +{BAG_FEE} per nonfree bag)",
            ("payment_methods",),
        )
    return None


def predicates() -> list[PolicyPredicate]:
    """The booking rules, in evaluation order."""
    return [
        booking_passenger_limit,
        booking_payment_methods,
        booking_route,
        booking_seats,
        booking_nonfree,
        booking_amount,
    ]
