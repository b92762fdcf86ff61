"""cancel-subscription: set a paid subscription to end at the close of the period."""

from __future__ import annotations

from typing import Any

from maitred.contract import ProcedureContext


def run(ctx: ProcedureContext) -> dict[str, Any]:
    """Record the churn reason and cancel at period end."""
    account = ctx.snapshot.account
    ctx.exit_if("on_free_plan")
    ctx.tools.call("get_subscription", account=account)
    ctx.exit_if("no_active_subscription")
    ctx.exit_if("already_set_to_cancel")
    reason = str(ctx.args.get("reason") or "not given")
    ctx.tools.call("record_churn_reason", account=account, reason=reason)
    ctx.tools.call("cancel_subscription", account=account, at_period_end=True)
    ends = ctx.state.get("subscription.renews_at")
    ctx.tools.call("send_email", account=account, template="subscription_cancelled", ends=ends)
    return {"status": "cancel_at_period_end", "ends_at": ends}
