"""What the model sees from the gateway: one rejection payload, no catalog, a decision id.

Issue 16, defect 6: ``TOOL_UNKNOWN`` listed every tool, hidden ones included, so a model told
"no such tool" learned the names the gate had hidden. Now no rejection text names a tool the
session was not shown, and every result -- rejected, or forwarded from the upstream -- carries
the decision-log id of its decision in ``_meta`` (``maitred/decision_id``).
"""

from __future__ import annotations

import json
from typing import Any

from fastmcp import Client
from tests.mcp.conftest import Site
from tests.mcp.test_gateway import names, rejection, run_gateway

from maitred.log.base import open_log

DECISION_ID_META = "maitred/decision_id"  # the documented key (gateway/server.py)
HIDDEN = "export_report"  # hidden on the free plan (the site's sidecar)


def test_no_rejection_names_a_hidden_tool(site: Site) -> None:
    texts: list[str] = []
    payloads: list[tuple[dict[str, Any], Any]] = []

    async def scenario(client: Client[Any], seen: list[Any]) -> None:
        assert HIDDEN not in names(await client.list_tools())
        calls: list[tuple[str, dict[str, Any]]] = [
            ("drop_tables", {}),  # unknown: no "the tools are: ..." list
            (HIDDEN, {"year": 2025}),  # hidden, named anyway
            ("get_plan", {"account": 7}),  # a schema error
            ("upgrade", {"account": "acc-2", "plan": "pro"}),  # a call policy
        ]
        for name, args in calls:
            result = await client.call_tool(name, args, raise_on_error=False)
            texts.append(result.content[0].text)
            payloads.append((rejection(result), (result.meta or {}).get(DECISION_ID_META)))

    run_gateway(site, scenario)
    assert len(texts) == 4
    for text in texts:
        assert HIDDEN not in text, text
    assert "drop_tables" not in texts[0] and "not available in this conversation" in texts[0]
    for payload, meta_id in payloads:
        assert payload.get("decision_id") == meta_id and meta_id


def test_meta_decision_id_matches_the_log_row_for_allowed_and_rejected(site: Site) -> None:
    ids: dict[str, str] = {}

    async def scenario(client: Client[Any], seen: list[Any]) -> None:
        await client.list_tools()
        allowed = await client.call_tool("get_plan", {"account": "acc-1"})
        assert not allowed.is_error and allowed.content[0].text == "free"
        ids["allowed"] = (allowed.meta or {}).get(DECISION_ID_META, "")
        refused = await client.call_tool(HIDDEN, {"year": 2025}, raise_on_error=False)
        ids["rejected"] = (refused.meta or {}).get(DECISION_ID_META, "")
        assert rejection(refused)["decision_id"] == ids["rejected"]

    run_gateway(site, scenario)
    with open_log(str(site.log)) as log:
        rows = {r["decision_id"]: r for r in log.iter_action_decisions()}
    assert (rows[ids["allowed"]]["tool"], rows[ids["allowed"]]["verdict"]) == ("get_plan", "allow")
    assert (rows[ids["rejected"]]["tool"], rows[ids["rejected"]]["code"]) == (
        HIDDEN,
        "TOOL_NOT_OFFERED",
    )
    for row in rows.values():  # the logged call id is never empty, though the client gave none
        assert json.loads(row["decision_json"])["call"]["id"]
