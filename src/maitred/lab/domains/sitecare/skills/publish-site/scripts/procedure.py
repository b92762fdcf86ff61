"""publish-site: make the latest saved version of the site live."""

from __future__ import annotations

from typing import Any

from maitred.contract import ProcedureContext, exit_predicate
from maitred.contract.predicate import StateView

#: Plans that may publish premium features (galleries with video, member areas, stores).
PREMIUM_PLANS = frozenset({"premium", "business"})


@exit_predicate(reads=["site.premium_features", "account.plan"], max_age_s=604800)
def premium_features_need_upgrade(state: StateView) -> bool:
    """The site uses premium features the account's plan does not include."""
    uses_premium = state["site.premium_features"]
    # a flag is a bool, or 0/1 from SQLite; anything else is an error, and an error blocks
    if uses_premium not in (True, False) or isinstance(uses_premium, float):
        raise TypeError(f"site.premium_features must be a flag, got {uses_premium!r}")
    return bool(uses_premium) and state["account.plan"] not in PREMIUM_PLANS


def run(ctx: ProcedureContext) -> dict[str, Any]:
    """Check, publish and purge the cache."""
    account = ctx.snapshot.account
    ctx.exit_if("site_not_publishable")
    ctx.exit_if("email_not_verified")
    ctx.tools.call("prepublish_check", account=account)
    ctx.exit_if("premium_features_need_upgrade")
    ctx.tools.call("publish_site", account=account)
    ctx.tools.call("purge_cache", account=account)
    return {"status": "published"}
