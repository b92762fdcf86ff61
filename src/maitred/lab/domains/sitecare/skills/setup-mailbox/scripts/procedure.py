"""setup-mailbox: create a mailbox on the connected domain."""

from __future__ import annotations

from typing import Any

from maitred.contract import ProcedureContext


def run(ctx: ProcedureContext) -> dict[str, Any]:
    """Create ``ctx.args["local_part"]@<connected domain>``."""
    account = ctx.snapshot.account
    ctx.exit_if("on_free_plan")
    ctx.exit_if("no_connected_domain")
    domain = str(ctx.state.get("domain.name") or ctx.args.get("domain") or "example.com")
    ctx.exit_if("mailbox_limit_reached")
    address = f"{ctx.args.get('local_part', 'info')}@{domain}"
    ctx.tools.call("check_mailbox_name", account=account, address=address)
    ctx.tools.call("create_mailbox", account=account, address=address)
    ctx.tools.call("ensure_mail_dns", account=account, domain=domain)
    ctx.tools.call("send_email", account=account, template="mailbox_ready", address=address)
    return {"address": address}
