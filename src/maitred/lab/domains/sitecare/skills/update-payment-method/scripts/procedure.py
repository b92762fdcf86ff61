"""update-payment-method: send the secure link and retry an open invoice."""

from __future__ import annotations

from typing import Any

from maitred.contract import ProcedureContext


def run(ctx: ProcedureContext) -> dict[str, Any]:
    """Replace the payment method; retry the invoice when billing is past due."""
    account = ctx.snapshot.account
    ctx.exit_if("no_billing_account")
    ctx.exit_if("billing_cancelled")
    ctx.tools.call("send_payment_method_link", account=account, expires_in_s=1800)
    retried = ctx.state.get("billing.status") == "past_due"
    if retried:
        ctx.tools.call("retry_invoice", account=account)
    return {"status": "link_sent", "retried_invoice": retried}
