"""An authenticated subject the state store has no record of, through the real gateway.

The token is valid (a signed JWT from the configured issuer, every claim in order), but its
account (``sub``) is in no document of the state store. The decision kernel's rule for that
case (``account_not_found``: the provider answered and knows no such account) hides every tool
whose contract reads state, without asking a predicate, while a tool that reads no state is
served as to anyone. docs/gateway/auth.md ("An account the state store does not know") says
what is checked here.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from fastmcp import Client
from tests.mcp.test_auth import Site, site  # noqa: F401  (the deployment, started afresh here)

pytestmark = pytest.mark.slow  # starts the gateway and an upstream as subprocesses


def test_an_unknown_account_sees_only_tools_that_read_no_state(site: Site) -> None:  # noqa: F811
    before = len(site.upstream_calls())
    ghost = site.issuer.mint(sub="acc-ghost", org_id="acme", scope="shop:read shop:write")
    got: dict[str, Any] = {}

    async def main() -> None:
        async with Client(site.url, auth=ghost) as client:
            got["tools"] = sorted(t.name for t in await client.list_tools())
            refused = await client.call_tool("export_report", {"year": 2026}, raise_on_error=False)
            got["refused"] = (refused.is_error, json.loads(refused.content[0].text))

    anyio.run(main)
    # export_report's exit predicate reads account.plan: hidden, though the token is valid
    assert got["tools"] == ["crash", "get_plan", "upgrade"]
    is_error, payload = got["refused"]
    assert is_error and payload["code"] == "TOOL_NOT_OFFERED" and payload["executed"] is False
    assert "acc-ghost" not in payload["message"] and "export_report" not in payload["message"]
    assert site.upstream_calls()[before:] == []  # the refused call never reached the upstream
    # the log says why: the listing turn failed closed for the account, the call was refused
    (turn,) = [t for t in site.turns() if t["account_id"] == "acc-ghost"]
    assert turn["provider_error"].startswith("account_not_found: the state provider has no ")
    assert {p["skill"]: bool(p["visible"]) for p in turn["pairs"]} == {
        "crash": True,
        "get_plan": True,
        "upgrade": True,
        "export_report": False,
    }
    row = next(r for r in site.decisions() if r["decision_id"] == payload["decision_id"])
    assert (row["turn_id"], row["tenant"]) == (turn["turn_id"], "acme")
