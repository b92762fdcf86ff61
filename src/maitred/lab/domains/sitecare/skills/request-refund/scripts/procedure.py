"""request-refund: file a refund of the last payment within the 14-day guarantee."""

from __future__ import annotations

from typing import Any

from maitred.contract import ProcedureContext, exit_predicate
from maitred.contract.predicate import StateView

#: The money-back guarantee: a payment can be refunded for 14 days (inclusive).
REFUND_WINDOW_S = 14 * 86400


@exit_predicate(reads=["billing.last_payment_at"], max_age_s=21600)
def payment_older_than_14_days(state: StateView) -> bool:
    """The last payment is more than 14 days old (or there is none)."""
    paid_at = state["billing.last_payment_at"]
    if paid_at is None:
        return True
    return bool(state.now - paid_at > REFUND_WINDOW_S)


def run(ctx: ProcedureContext) -> dict[str, Any]:
    """Refund the last payment in full."""
    account = ctx.snapshot.account
    ctx.exit_if("nothing_charged")
    payment = ctx.tools.call("get_last_payment", account=account)
    ctx.exit_if("payment_older_than_14_days")
    ctx.exit_if("refund_already_requested")
    amount = ctx.state.get("billing.last_payment_amount")
    ctx.tools.call("file_refund", account=account, payment=payment, amount_cents=amount)
    ctx.tools.call("send_email", account=account, template="refund_filed", amount_cents=amount)
    return {"status": "refund_filed", "amount_cents": amount}
