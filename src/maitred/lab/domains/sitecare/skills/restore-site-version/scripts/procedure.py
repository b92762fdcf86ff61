"""restore-site-version: roll a site back to an earlier saved version."""

from __future__ import annotations

from typing import Any

from maitred.contract import ProcedureContext


def run(ctx: ProcedureContext) -> dict[str, Any]:
    """Restore ``ctx.args["version"]``, or the version before the current one."""
    account = ctx.snapshot.account
    ctx.exit_if("site_deleted_or_suspended")
    ctx.tools.call("list_site_versions", account=account)
    ctx.exit_if("no_earlier_version")
    count = ctx.state.get("site.version_count")
    fallback = count - 1 if isinstance(count, int) and count > 1 else 1
    version = ctx.args.get("version", fallback)
    ctx.tools.call("restore_site_version", account=account, version=version, keep_current=True)
    return {"restored": version}
