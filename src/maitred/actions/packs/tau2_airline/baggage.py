"""update_reservation_baggages and update_reservation_passengers.

Baggage: the total may not decrease; ``nonfree_baggages`` must equal
max(0, total - free x passengers), free bags per passenger by the user's membership and the
cabin (regular 0/1/2, silver 1/2/3, gold 2/3/4 for basic economy/economy/business); the payment
must be in the user's profile. Passengers: the count may not change.
"""

from __future__ import annotations

from maitred.actions.packs.tau2_airline._common import FREE_BAGS, RES, expected_nonfree
from maitred.actions.rules import PolicyPredicate, Violation, policy_rule
from maitred.contract.predicate import StateView

BAGS = ("update_reservation_baggages",)


@policy_rule(
    code="AIRLINE_BAGGAGE_DECREASE",
    tools=BAGS,
    reads=[RES, "args.total_baggages"],
    fields=("total_baggages",),
)
def baggage_no_decrease(view: StateView) -> Violation | None:
    """Checked bags can be added, never removed."""
    current, wanted = int(view[RES]["total_baggages"]), int(view["args.total_baggages"])
    if wanted < current:
        return Violation(
            f"total_baggages may not decrease (the reservation has {current}, asked {wanted})",
            ("total_baggages",),
        )
    return None


@policy_rule(
    code="AIRLINE_BAGGAGE_NONFREE_MISMATCH",
    tools=BAGS,
    reads=[RES, "args.total_baggages", "args.nonfree_baggages", "state.users"],
    fields=("nonfree_baggages",),
)
def baggage_nonfree(view: StateView) -> Violation | None:
    """nonfree_baggages must be max(0, total - free bags x passengers)."""
    res = view[RES]
    membership = view["state.users"][res["user_id"]]["membership"]
    pax = len(res["passengers"])
    total = int(view["args.total_baggages"])
    due = expected_nonfree(total, pax, membership, res["cabin"])
    asked = int(view["args.nonfree_baggages"])
    if asked != due:
        free = FREE_BAGS[membership][res["cabin"]]
        return Violation(
            f"nonfree_baggages must be {due}, not {asked}: a {membership} member in "
            f"{res['cabin']} has {free} free bag(s) per passenger x {pax} passenger(s) "
            f"for {total} bag(s)",
            ("nonfree_baggages",),
        )
    return None


@policy_rule(
    code="AIRLINE_BAGGAGE_PAYMENT",
    tools=BAGS,
    reads=[RES, "args.payment_id", "state.users"],
    fields=("payment_id",),
)
def baggage_payment(view: StateView) -> Violation | None:
    """The payment must be in the user's profile."""
    pid = view["args.payment_id"]
    user = view["state.users"][view[RES]["user_id"]]
    if pid not in user.get("payment_methods", {}):
        return Violation(f"payment method {pid!r} is not in the user's profile", ("payment_id",))
    return None


@policy_rule(
    code="AIRLINE_PASSENGER_COUNT_CHANGED",
    tools=("update_reservation_passengers",),
    reads=[RES, "args.passengers"],
    fields=("passengers",),
)
def passenger_count(view: StateView) -> Violation | None:
    """The number of passengers cannot change (details of each passenger can)."""
    have, asked = len(view[RES]["passengers"]), len(view["args.passengers"])
    if have != asked:
        return Violation(
            f"the reservation has {have} passenger(s); an update must keep {have}, not {asked}",
            ("passengers",),
        )
    return None


def predicates() -> list[PolicyPredicate]:
    """Baggage and passenger rules, in evaluation order."""
    return [baggage_no_decrease, baggage_nonfree, baggage_payment, passenger_count]
