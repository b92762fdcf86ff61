"""change-site-url: change the free sitecare address and redirect the old one."""

from __future__ import annotations

from typing import Any

from maitred.contract import ProcedureContext, exit_predicate
from maitred.contract.predicate import StateView

#: A site's free address may change at most once per 30 days.
URL_CHANGE_COOLDOWN_S = 30 * 86400


@exit_predicate(reads=["site.url_changed_at"], on_missing="offer", max_age_s=86400)
def url_changed_within_30_days(state: StateView) -> bool:
    """The address was already changed less than 30 days ago."""
    changed_at = state["site.url_changed_at"]
    if changed_at is None:
        return False  # never changed
    return bool(state.now - changed_at < URL_CHANGE_COOLDOWN_S)


def run(ctx: ProcedureContext) -> dict[str, Any]:
    """Change the address to ``ctx.args["slug"]``."""
    account = ctx.snapshot.account
    ctx.exit_if("site_not_live")
    ctx.exit_if("custom_domain_connected")
    ctx.exit_if("url_changed_within_30_days")
    slug = str(ctx.args.get("slug") or "my-new-site")
    ctx.tools.call("check_site_slug", account=account, slug=slug)
    old = ctx.tools.call("change_site_slug", account=account, slug=slug)
    ctx.tools.call("create_redirect", account=account, old=old, slug=slug, days=90)
    return {"slug": slug}
