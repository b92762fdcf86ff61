"""upgrade-plan: quote and apply a move to a higher plan."""

from __future__ import annotations

from typing import Any

from maitred.contract import ProcedureContext

_NEXT = {"free": "basic", "basic": "premium", "premium": "business"}


def run(ctx: ProcedureContext) -> dict[str, Any]:
    """Upgrade to ``ctx.args["plan"]``, or one tier up from the current plan."""
    account = ctx.snapshot.account
    ctx.exit_if("already_on_top_plan")
    current = str(ctx.state.get("account.plan") or "free")
    target = str(ctx.args.get("plan") or _NEXT.get(current, "premium"))
    ctx.exit_if("email_not_verified")
    ctx.exit_if("payment_past_due")
    quote = ctx.tools.call("quote_plan_change", account=account, plan=target)
    ctx.tools.call("change_plan", account=account, plan=target, quote=quote)
    ctx.tools.call("send_email", account=account, template="plan_upgraded", plan=target)
    return {"from": current, "to": target}
