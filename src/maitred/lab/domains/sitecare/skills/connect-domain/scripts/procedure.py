"""connect-domain: add a custom domain to the site and start DNS verification.

Side effects go through ``ctx.tools`` only, so an audit sandbox records them instead.
"""

from __future__ import annotations

from typing import Any

from maitred.contract import ProcedureContext


def run(ctx: ProcedureContext) -> dict[str, Any]:
    """Connect ``ctx.args["domain"]`` (or the account's own domain) to the site."""
    account = ctx.snapshot.account
    ctx.exit_if("on_free_plan")
    site = ctx.tools.call("get_site", account=account)
    ctx.exit_if("site_not_live")
    domain = str(ctx.args.get("domain") or ctx.state.get("domain.name") or "example.com")
    ctx.tools.call("lookup_domain", account=account, domain=domain)
    ctx.exit_if("domain_expired")
    ctx.exit_if("domain_already_connected")
    ctx.tools.call("add_site_domain", account=account, site=site, domain=domain)
    ctx.tools.call("verify_dns", account=account, domain=domain)
    return {"domain": domain, "status": "pending_dns"}
