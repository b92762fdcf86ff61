"""send_certificate: who may get a goodwill certificate, and how much.

The reservation in question is the one **last read** in the session
(``session.last_read.get_reservation_details``); it must belong to the user. Eligible: the user
is silver or gold, or that reservation is insured or business. Amount: 100 x passengers if a
segment of it was cancelled, else 50 x passengers if one was delayed; otherwise none is due.
"""

from __future__ import annotations

from maitred.actions.packs.tau2_airline._common import any_status
from maitred.actions.rules import PolicyPredicate, Violation, policy_rule
from maitred.contract.predicate import StateView

TOOLS = ("send_certificate",)
USER = "state.users[args.user_id]"
LAST = "state.reservations[session.last_read.get_reservation_details]"


@policy_rule(
    code="AIRLINE_CERTIFICATE_NOT_ELIGIBLE",
    tools=TOOLS,
    reads=["args.user_id", USER, LAST],
    optional=[LAST],
    fields=("user_id",),
)
def certificate_eligible(view: StateView) -> Violation | None:
    """Silver and gold members, or an insured or business reservation, may get a certificate."""
    res = view[LAST]
    if res is not None and res.get("user_id") != view["args.user_id"]:
        return Violation(
            f"the reservation read last belongs to {res.get('user_id')}, not "
            f"{view['args.user_id']}: read the user's own reservation first",
            ("user_id",),
        )
    if view[USER].get("membership") in ("silver", "gold"):
        return None
    if res is not None and (res.get("insurance") == "yes" or res.get("cabin") == "business"):
        return None
    return Violation(
        "a regular member without an insured or business reservation (read last) is not "
        "eligible for a certificate",
        ("user_id",),
    )


@policy_rule(
    code="AIRLINE_CERTIFICATE_AMOUNT",
    tools=TOOLS,
    reads=["args.amount", LAST, "state.flights"],
    optional=[LAST],
    fields=("amount",),
)
def certificate_amount(view: StateView) -> Violation | None:
    """100 x passengers for a cancelled segment, 50 x passengers for a delayed one."""
    res = view[LAST]
    if res is None:
        return Violation(
            "read the reservation with the disrupted flight (get_reservation_details) first: "
            "the amount depends on it",
            ("amount",),
        )
    pax, flights = len(res["passengers"]), view["state.flights"]
    if any_status(flights, res["flights"], frozenset({"cancelled"})):
        due = 100 * pax
    elif any_status(flights, res["flights"], frozenset({"delayed"})):
        due = 50 * pax
    else:
        return Violation(
            "no flight in the reservation was cancelled or delayed; no certificate is due",
            ("amount",),
        )
    if float(view["args.amount"]) != due:
        return Violation(
            f"the certificate must be {due} ({due // pax} x {pax} passenger(s)), "
            f"not {view['args.amount']}",
            ("amount",),
        )
    return None


def predicates() -> list[PolicyPredicate]:
    """The certificate rules, in evaluation order."""
    return [certificate_eligible, certificate_amount]
