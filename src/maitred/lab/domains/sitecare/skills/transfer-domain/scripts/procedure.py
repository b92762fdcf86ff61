"""transfer-domain: issue an EPP code and record a transfer out to another registrar."""

from __future__ import annotations

from typing import Any

from maitred.contract import ProcedureContext, exit_predicate
from maitred.contract.predicate import StateView

#: ICANN forbids a registrar transfer within 60 days of registration.
TRANSFER_LOCK_S = 60 * 86400


@exit_predicate(reads=["domain.registered_at"], max_age_s=86400)
def registered_within_60_days(state: StateView) -> bool:
    """The domain was registered less than 60 days ago (ICANN transfer lock)."""
    registered_at = state["domain.registered_at"]
    if registered_at is None:
        return True  # never registered: nothing can be transferred either
    return bool(state.now - registered_at < TRANSFER_LOCK_S)


def run(ctx: ProcedureContext) -> dict[str, Any]:
    """Issue the auth code for the account's domain and record the transfer request."""
    account = ctx.snapshot.account
    ctx.exit_if("no_registered_domain")
    domain = str(ctx.state.get("domain.name") or ctx.args.get("domain") or "example.com")
    ctx.tools.call("lookup_domain", account=account, domain=domain)
    ctx.exit_if("domain_expired")
    ctx.exit_if("registered_within_60_days")
    ctx.exit_if("registrar_lock_on")
    code = ctx.tools.call("issue_auth_code", account=account, domain=domain)
    ctx.tools.call("email_auth_code", account=account, domain=domain, code=code)
    ctx.tools.call(
        "record_transfer_out", account=account, domain=domain, to=ctx.args.get("registrar")
    )
    return {"domain": domain, "status": "auth_code_sent"}
