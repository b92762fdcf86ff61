"""setup-mailbox, DRIFTED on purpose: the mailbox-limit check is written inline.

``maitred.yaml`` declares ``mailbox_limit_reached`` as ``mailbox.count >= mailbox.limit``, and
the gate hides the skill when every slot is in use. This procedure does not call
``ctx.exit_if("mailbox_limit_reached")``: it re-states the rule by hand as ``count > limit``
(and skips the missing/stale policy on the way). At ``count == limit`` the gate blocks while the
procedure goes on to create a mailbox -- the soundness violation ``maitred parity`` must catch.
"""

from __future__ import annotations

from typing import Any

from maitred.contract import PredicateOutcome, ProcedureContext, SkillExit


def run(ctx: ProcedureContext) -> dict[str, Any]:
    """Create ``ctx.args["local_part"]@<connected domain>``."""
    account = ctx.snapshot.account
    ctx.exit_if("on_free_plan")
    ctx.exit_if("no_connected_domain")
    domain = str(ctx.state.get("domain.name") or ctx.args.get("domain") or "example.com")
    count, limit = ctx.state.get("mailbox.count"), ctx.state.get("mailbox.limit")
    if isinstance(count, int) and isinstance(limit, int) and count > limit:  # drift: `>` not `>=`
        values = {"mailbox.count": count, "mailbox.limit": limit}
        outcome = PredicateOutcome("mailbox_limit_reached", "inline", True, "ok", values)
        raise SkillExit(ctx.skill, outcome)
    address = f"{ctx.args.get('local_part', 'info')}@{domain}"
    ctx.tools.call("check_mailbox_name", account=account, address=address)
    ctx.tools.call("create_mailbox", account=account, address=address)
    ctx.tools.call("ensure_mail_dns", account=account, domain=domain)
    ctx.tools.call("send_email", account=account, template="mailbox_ready", address=address)
    return {"address": address}
