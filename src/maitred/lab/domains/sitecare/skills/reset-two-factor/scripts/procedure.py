"""reset-two-factor: turn off two-step verification for a verified owner."""

from __future__ import annotations

from typing import Any

from maitred.contract import ProcedureContext, exit_predicate
from maitred.contract.predicate import StateView

#: At most one reset per day; a second one within 24 hours is escalated instead.
RESET_COOLDOWN_S = 86400


@exit_predicate(reads=["security.last_reset_at"], on_missing="offer", max_age_s=3600)
def reset_within_24_hours(state: StateView) -> bool:
    """Two-step verification was already reset in the last 24 hours."""
    reset_at = state["security.last_reset_at"]
    if reset_at is None:
        return False  # never reset
    return bool(state.now - reset_at < RESET_COOLDOWN_S)


def run(ctx: ProcedureContext) -> dict[str, Any]:
    """Reset two-step verification and notify the owner."""
    account = ctx.snapshot.account
    ctx.exit_if("two_factor_not_enabled")
    ctx.exit_if("identity_not_verified")
    ctx.exit_if("reset_within_24_hours")
    ctx.tools.call("reset_two_factor", account=account, sign_out_everywhere=True)
    ctx.tools.call("send_security_notice", account=account, event="two_factor_reset")
    return {"status": "two_factor_reset"}
