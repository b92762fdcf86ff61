"""``disclosure: find_tools``: the list starts with find_tools alone, and a need discloses only
the tools that fit it *and* pass the gate for the session's account now.

A fastmcp Client talks to the gateway in memory; the gateway talks to the recording upstream
over stdio, as in production.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as mt
from tests.mcp.conftest import Site
from tests.mcp.test_gateway import names, rejection, run_gateway

from maitred.log.base import open_log


def _find_mode(site: Site) -> None:
    text = site.config.read_text(encoding="utf-8")
    site.config.write_text("disclosure: find_tools\n" + text, encoding="utf-8")


async def find(client: Any, need: str) -> dict[str, Any]:
    result = await client.call_tool("find_tools", {"need": need})
    assert not result.is_error
    answer: dict[str, Any] = json.loads(result.content[0].text)
    return answer


def changes(seen: list[Any]) -> int:
    return sum(isinstance(m, mt.ToolListChangedNotification) for m in seen)


def test_a_found_tool_becomes_visible_and_a_blocked_one_stays_hidden(site: Site) -> None:
    _find_mode(site)

    async def scenario(client: Any, seen: list[Any]) -> None:
        assert names(await client.list_tools()) == ["find_tools"]
        early = await client.call_tool("get_plan", {"account": "acc-1"}, raise_on_error=False)
        assert rejection(early)["code"] == "TOOL_NOT_OFFERED"
        assert "find_tools" in rejection(early)["hint"]

        report = await find(client, "export the yearly report")
        assert report["tools"] == []  # the free plan hides it, however well it matches
        assert [b["name"] for b in report["blocked"]] == ["export_report"]
        assert "free_plan" in report["blocked"][0]["why"][0]
        assert names(await client.list_tools()) == ["find_tools"]
        blocked = await client.call_tool("export_report", {"year": 2025}, raise_on_error=False)
        assert rejection(blocked)["code"] == "TOOL_NOT_OFFERED"

        plan = await find(client, "which plan is my account on")
        assert "get_plan" in [t["name"] for t in plan["tools"]]
        assert plan["tools"][0]["description"] and plan["tools"][0]["upstream"] == "shop"
        assert changes(seen) == 1  # the list grew: list_changed
        listed = names(await client.list_tools())
        assert listed[0] == "find_tools" and "get_plan" in listed
        assert "export_report" not in listed
        answer = await client.call_tool("get_plan", {"account": "acc-1"})
        assert answer.content[0].text == "free"

        site.set_plan("pro")  # outside the gateway; now the report can be exported
        again = await find(client, "export the yearly report")
        assert [t["name"] for t in again["tools"]] == ["export_report"]
        assert changes(seen) == 2
        done = await client.call_tool("export_report", {"year": 2025})
        assert done.content[0].text == "report 2025"

    run_gateway(site, scenario)
    assert site.upstream_calls() == ["get_plan", "export_report"]
    with open_log(str(site.log)) as log:
        finds = [t for t in log.iter_turns() if t["message_text"] != "tools/list"]
    assert [t["message_text"] for t in finds] == [
        "export the yearly report",
        "which plan is my account on",
        "export the yearly report",
    ]  # every need is a logged turn, with what the gate blocked
    first = {p["skill"]: p for p in finds[0]["pairs"]}
    assert first["export_report"]["visible"] is False


def test_find_tools_needs_a_need(site: Site) -> None:
    _find_mode(site)

    async def scenario(client: Any, seen: list[Any]) -> None:
        empty = await client.call_tool("find_tools", {"need": " "}, raise_on_error=False)
        assert rejection(empty)["code"] == "ARGS_MISSING"

    run_gateway(site, scenario)


def test_without_find_tools_mode_there_is_no_find_tools(site: Site) -> None:
    async def scenario(client: Any, seen: list[Any]) -> None:
        assert "find_tools" not in names(await client.list_tools())
        result = await client.call_tool("find_tools", {"need": "x"}, raise_on_error=False)
        assert rejection(result)["code"] == "TOOL_UNKNOWN"

    run_gateway(site, scenario)
