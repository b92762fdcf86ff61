"""cancel_reservation: exists and is live, nothing flown, and one eligibility path holds.

Eligibility (any one): booked within the 24 hours before now (exactly 24 hours still counts),
a segment was cancelled by the airline, the cabin is business, or the reservation is insured
and the stated reason (session context ``cancel_reason``) is health or weather. Without a
stated reason the insurance path does not apply unless the pack setting
``insurance_needs_reason`` is false.
"""

from __future__ import annotations

from maitred.actions.packs.tau2_airline._common import (
    DAY_S,
    FLOWN,
    RES,
    any_status,
    wall_seconds,
)
from maitred.actions.rules import PolicyPredicate, Violation, policy_rule
from maitred.contract.predicate import StateView

TOOLS = ("cancel_reservation",)
INSURED_REASONS = ("health", "weather")


@policy_rule(
    code="AIRLINE_RESERVATION_NOT_FOUND",
    tools=TOOLS,
    reads=["args.reservation_id", RES],
    optional=[RES],
    fields=("reservation_id",),
)
def cancel_reservation_exists(view: StateView) -> Violation | None:
    """The reservation must exist."""
    if view[RES] is None:
        rid = view["args.reservation_id"]
        return Violation(f"reservation {rid!r} does not exist", ("reservation_id",))
    return None


@policy_rule(
    code="AIRLINE_CANCEL_ALREADY_CANCELLED",
    tools=TOOLS,
    reads=[RES],
    fields=("reservation_id",),
)
def cancel_not_already_cancelled(view: StateView) -> Violation | None:
    """A cancelled reservation cannot be cancelled again."""
    if view[RES].get("status") == "cancelled":
        return Violation("the reservation is already cancelled", ("reservation_id",))
    return None


@policy_rule(
    code="AIRLINE_CANCEL_SEGMENT_FLOWN",
    tools=TOOLS,
    reads=[RES, "state.flights"],
    fields=("reservation_id",),
)
def cancel_nothing_flown(view: StateView) -> Violation | None:
    """A reservation with a flown segment (flying or landed) cannot be cancelled."""
    if any_status(view["state.flights"], view[RES]["flights"], FLOWN):
        return Violation(
            "a segment of this reservation has already been flown, so it cannot be cancelled; "
            "transfer to a human agent if the user insists",
            ("reservation_id",),
        )
    return None


def cancel_eligibility(insurance_needs_reason: bool = True) -> PolicyPredicate:
    """The eligibility rule, configured by the pack's ``insurance_needs_reason`` setting."""
    reason_key = "session.context.cancel_reason"

    @policy_rule(
        code="AIRLINE_CANCEL_NOT_ELIGIBLE",
        tools=TOOLS,
        reads=[RES, "state.flights", reason_key],
        optional=[reason_key],
        name="cancel_eligibility",
        fields=("reservation_id",),
    )
    def rule(view: StateView) -> Violation | None:
        """Cancellation needs: booked within 24h, an airline cancellation, business, or
        insurance with a health or weather reason."""
        res = view[RES]
        age = view.now - wall_seconds(str(res["created_at"]))
        if 0 <= age <= DAY_S:
            return None
        if any_status(view["state.flights"], res["flights"], frozenset({"cancelled"})):
            return None
        if res.get("cabin") == "business":
            return None
        reason = str(view[reason_key] or "").strip().lower()
        if res.get("insurance") == "yes" and (
            reason in INSURED_REASONS or (not reason and not insurance_needs_reason)
        ):
            return None
        said = f"the stated reason is {reason!r}" if reason else "no reason was stated"
        return Violation(
            f"this {res.get('cabin')} reservation was booked {age / 3600:.1f} hours ago, no "
            f"flight in it was cancelled by the airline, and insurance is "
            f"{res.get('insurance')!r} ({said}); it is not eligible for cancellation",
            ("reservation_id",),
        )

    return rule


def predicates(insurance_needs_reason: bool = True) -> list[PolicyPredicate]:
    """The cancellation rules, in evaluation order."""
    return [
        cancel_reservation_exists,
        cancel_not_already_cancelled,
        cancel_nothing_flown,
        cancel_eligibility(insurance_needs_reason),
    ]
