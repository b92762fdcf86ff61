"""``disclosure: find_tools``: the list is find_tools alone, and a need discloses -- in its
answer, with name, description and input schema -- only the tools that fit it *and* pass the
gate for the session's account now; the list never changes because of it.

A fastmcp Client talks to the gateway in memory; the gateway talks to the recording upstream
over stdio, as in production.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as mt
import pytest
from tests.mcp.conftest import Site
from tests.mcp.test_gateway import names, rejection, run_gateway

from maitred.conversation.finding import MAX_NEED_CHARS, MAX_NEEDS
from maitred.log.base import open_log
from maitred.log.verify import verify


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


def test_a_found_tool_is_disclosed_with_its_schema_and_a_blocked_one_stays_hidden(
    site: Site,
) -> None:
    _find_mode(site)

    async def scenario(client: Any, seen: list[Any]) -> None:
        assert names(await client.list_tools()) == ["find_tools", "call_tool"]
        early = await client.call_tool("get_plan", {"account": "acc-1"}, raise_on_error=False)
        assert rejection(early)["code"] == "TOOL_NOT_OFFERED"
        assert "find_tools" in rejection(early)["hint"]

        report = await find(client, "export the yearly report")
        assert report["tools"] == []  # the free plan hides it, however well it matches
        assert [b["name"] for b in report["blocked"]] == ["export_report"]
        assert "free_plan" in report["blocked"][0]["why"][0]
        blocked = await client.call_tool("export_report", {"year": 2025}, raise_on_error=False)
        assert rejection(blocked)["code"] == "TOOL_NOT_OFFERED"

        plan = await find(client, "which plan is my account on")
        found = {t["name"]: t for t in plan["tools"]}
        assert found["get_plan"]["description"] and found["get_plan"]["upstream"] == "shop"
        assert names(await client.list_tools()) == [
            "find_tools",
            "call_tool",
        ]  # the answer has what a
        assert found["get_plan"]["inputSchema"]["type"] == "object"  # call needs: its schema
        answer = await client.call_tool("get_plan", {"account": "acc-1"})
        assert answer.content[0].text == "free"

        site.set_plan("pro")  # outside the gateway; now the report can be exported
        again = await find(client, "export the yearly report")
        assert [t["name"] for t in again["tools"]] == ["export_report"]
        done = await client.call_tool("export_report", {"year": 2025})
        assert done.content[0].text == "report 2025"
        earlier = await client.call_tool("get_plan", {"account": "acc-1"})  # still disclosed
        assert earlier.content[0].text == "pro"
        assert names(await client.list_tools()) == ["find_tools", "call_tool"]
        assert changes(seen) == 0  # a disclosure is a result: the list never changed

    run_gateway(site, scenario)
    assert site.upstream_calls() == ["get_plan", "export_report", "get_plan"]
    report = verify(str(site.log))  # each allowed call names the turn that disclosed its tool
    assert report.ok, report.summary()
    with open_log(str(site.log)) as log:
        finds = list(log.iter_turns())
    assert [t["message_text"] for t in finds] == [
        "export the yearly report",
        "which plan is my account on",
        "export the yearly report",
    ]  # every need is a logged turn, with what the gate blocked; a listing decides nothing
    first = {p["skill"]: p for p in finds[0]["pairs"]}
    assert first["export_report"]["visible"] is False


def test_find_tools_needs_a_need(site: Site) -> None:
    _find_mode(site)

    async def scenario(client: Any, seen: list[Any]) -> None:
        empty = await client.call_tool("find_tools", {"need": " "}, raise_on_error=False)
        assert rejection(empty)["code"] == "ARGS_MISSING"

    run_gateway(site, scenario)


def test_a_refused_find_tools_call_is_a_logged_decision_the_model_can_quote(site: Site) -> None:
    """Needs it cannot take (``ARGS_INVALID``) and a call past a rate (``RATE_LIMITED``) are
    refused like every call: a logged action decision whose id is in the payload and in
    ``_meta``, found in the log with the call, and nothing routed."""
    _find_mode(site)
    text = site.config.read_text(encoding="utf-8")
    site.config.write_text(text + "rate_limits: {per_tool: {find_tools: 2/minute}}\n")
    got: dict[str, Any] = {}

    async def scenario(client: Any, seen: list[Any]) -> None:
        got["bad"] = await client.call_tool("find_tools", {"needs": []}, raise_on_error=False)
        got["found"] = await find(client, "which plan is my account on")
        got["limited"] = await client.call_tool(
            "find_tools", {"need": "which plan is my account on"}, raise_on_error=False
        )

    run_gateway(site, scenario)
    bad, limited = rejection(got["bad"]), rejection(got["limited"])
    assert (bad["code"], bad["fields"]) == ("ARGS_INVALID", ["needs"])
    assert "'needs' is an empty list" in bad["message"] and ".." not in bad["message"]
    assert limited["code"] == "RATE_LIMITED" and limited["retry_after_s"] >= 1
    for result, payload in ((got["bad"], bad), (got["limited"], limited)):
        assert (
            payload["decision_id"] and result.meta["maitred/decision_id"] == payload["decision_id"]
        )
    with open_log(str(site.log), read_only=True) as log:
        rows = {r["decision_id"]: r for r in log.iter_action_decisions()}
        turns = [t["message_text"] for t in log.iter_turns()]
        assert verify(log).ok
    for payload in (bad, limited):
        row = rows[payload["decision_id"]]
        assert (row["tool"], row["code"], row["mutates"]) == ("find_tools", payload["code"], False)
    assert json.loads(rows[bad["decision_id"]]["decision_json"])["call"]["arguments"] == {
        "needs": []
    }
    assert turns.count("which plan is my account on") == 1  # the refused calls routed nothing


def test_without_find_tools_mode_there_is_no_find_tools(site: Site) -> None:
    async def scenario(client: Any, seen: list[Any]) -> None:
        assert "find_tools" not in names(await client.list_tools())
        result = await client.call_tool("find_tools", {"need": "x"}, raise_on_error=False)
        assert rejection(result)["code"] == "TOOL_UNKNOWN"

    run_gateway(site, scenario)


def _find_turns(site: Site) -> list[dict[str, Any]]:
    """The logged ``find_tools`` turns, in order (listings left out)."""
    with open_log(str(site.log)) as log:
        return [t for t in log.iter_turns() if t["message_text"] != "tools/list"]


def _exposed(turn: dict[str, Any]) -> list[str]:
    """What a logged turn exposed, in rank order."""
    return [p["skill"] for p in sorted(turn["pairs"], key=lambda p: p["rank"]) if p["exposed"]]


def _tool_names(answer: dict[str, Any]) -> list[str]:
    return [t["name"] for t in answer["tools"]]


STEPS = [
    "which plan is my account on",
    "die without answering",
    "move my account to another plan",
    "export the yearly report",
]


def test_several_needs_are_answered_per_need_each_tool_once(site: Site) -> None:
    _find_mode(site)
    answers: list[dict[str, Any]] = []

    async def scenario(client: Any, seen: list[Any]) -> None:
        result = await client.call_tool("find_tools", {"need": STEPS[0], "needs": STEPS[1:]})
        assert not result.is_error and result.structured_content == json.loads(
            result.content[0].text
        )
        answers.append(result.structured_content)
        assert changes(seen) == 0  # the answer discloses; the list does not change
        listed = names(await client.list_tools())
        answers.append({"listed": listed})
        plan = await client.call_tool("get_plan", {"account": "acc-1"})
        assert plan.content[0].text == "free"
        report = await client.call_tool("export_report", {"year": 2025}, raise_on_error=False)
        assert rejection(report)["code"] == "TOOL_NOT_OFFERED"

    run_gateway(site, scenario)
    answer, listed = answers[0], answers[1]["listed"]
    assert list(answer) == ["needs", "call_with"]  # how to run what was found, said once
    assert answer["call_with"].startswith("call_tool with")
    per_need = answer["needs"]
    assert [n["need"] for n in per_need] == STEPS  # `need` first, then `needs`, in order
    turns = _find_turns(site)
    assert [t["message_text"] for t in turns] == STEPS  # each need its own logged turn
    assert [n["turn_id"] for n in per_need] == [t["turn_id"] for t in turns]
    earlier: list[str] = []
    for entry, turn in zip(per_need, turns, strict=True):
        exposed = _exposed(turn)
        assert _tool_names(entry) == [n for n in exposed if n not in earlier]
        assert entry["listed_above"] == [n for n in exposed if n in earlier]
        earlier += [n for n in exposed if n not in earlier]
    assert any(entry["listed_above"] for entry in per_need)  # the steps share a tool
    shown = [name for entry in per_need for name in _tool_names(entry)]
    assert len(shown) == len(set(shown)) and {"get_plan", "crash"} <= set(shown)
    for entry in per_need:
        assert all(t["description"] and t["upstream"] == "shop" for t in entry["tools"])
    # the free plan hides the report for every need; it is named, blocked, under its need only
    assert "export_report" not in shown
    assert [b["name"] for b in per_need[3]["blocked"]] == ["export_report"]
    assert per_need[3]["tools"] == [] and "hint" in per_need[3]
    assert listed == ["find_tools", "call_tool"]
    for entry in per_need:  # each answer carries the upstream's schema as listed
        assert all(t["inputSchema"].get("type") == "object" for t in entry["tools"])
    assert site.upstream_calls() == ["get_plan"]


def test_a_hidden_tool_is_named_for_no_need_and_nothing_is_disclosed(site: Site) -> None:
    _find_mode(site)
    needs = ["export the yearly report", "export the report of 2025", "the yearly report"]

    async def scenario(client: Any, seen: list[Any]) -> None:
        result = await client.call_tool("find_tools", {"needs": needs})
        answer = json.loads(result.content[0].text)
        per_need = answer["needs"]
        assert [n["need"] for n in per_need] == needs
        for entry in per_need:
            assert "export_report" not in _tool_names(entry) + entry["listed_above"]
        blocked = [[b["name"] for b in entry["blocked"]] for entry in per_need]
        assert blocked == [["export_report"]] * len(needs)  # with every need that matched it
        assert names(await client.list_tools()) == ["find_tools", "call_tool"]
        report = await client.call_tool("export_report", {"year": 2025}, raise_on_error=False)
        assert rejection(report)["code"] == "TOOL_NOT_OFFERED"

        site.set_plan("pro")  # the same needs, now the gate lets the report through
        result = await client.call_tool("find_tools", {"needs": needs})
        again = json.loads(result.content[0].text)
        assert _tool_names(again["needs"][0]) == ["export_report"]
        assert all(e["blocked"] == [] for e in again["needs"])
        assert names(await client.list_tools()) == ["find_tools", "call_tool"]
        done = await client.call_tool("export_report", {"year": 2025})
        assert done.content[0].text == "report 2025"

    run_gateway(site, scenario)
    turns = _find_turns(site)
    assert [t["message_text"] for t in turns] == needs * 2
    for turn in turns[:3]:  # every need of the first call was decided by the gate: hidden
        pairs = {p["skill"]: p for p in turn["pairs"]}
        assert pairs["export_report"]["visible"] is False


def test_one_need_is_answered_as_it_always_was(site: Site) -> None:
    _find_mode(site)
    need = "which plan is my account on"
    got: list[dict[str, Any]] = []

    async def scenario(client: Any, seen: list[Any]) -> None:
        got.append(await find(client, need))
        result = await client.call_tool("find_tools", {"needs": [need]})
        got.append(json.loads(result.content[0].text))

    run_gateway(site, scenario)
    single, multi = got
    assert sorted(single) == ["blocked", "call_with", "need", "tools", "turn_id"]
    assert single["need"] == need and "get_plan" in _tool_names(single)
    (entry,) = multi["needs"]  # `needs` of one is answered per need all the same
    assert entry["listed_above"] == []
    same = {k: v for k, v in entry.items() if k not in ("listed_above", "turn_id")}
    assert same == {k: v for k, v in single.items() if k not in ("turn_id", "call_with")}
    assert multi["call_with"] == single["call_with"]  # said once, beside the needs


@pytest.mark.parametrize(
    ("arguments", "code", "fields"),
    [
        ({}, "ARGS_MISSING", ["need", "needs"]),
        ({"need": " "}, "ARGS_MISSING", ["need"]),
        ({"need": None, "needs": None}, "ARGS_MISSING", ["need", "needs"]),
        ({"needs": []}, "ARGS_INVALID", ["needs"]),
        ({"needs": "export the yearly report"}, "ARGS_INVALID", ["needs"]),
        ({"needs": [f"need {i}" for i in range(MAX_NEEDS + 1)]}, "ARGS_INVALID", ["needs"]),
        (
            {"need": "a", "needs": [f"need {i}" for i in range(MAX_NEEDS)]},
            "ARGS_INVALID",
            ["needs"],
        ),
        ({"needs": ["which plan", 3]}, "ARGS_INVALID", ["needs[1]"]),
        ({"needs": ["which plan", "  "]}, "ARGS_INVALID", ["needs[1]"]),
        ({"needs": ["x" * (MAX_NEED_CHARS + 1)]}, "ARGS_INVALID", ["needs[0]"]),
        ({"need": " ", "needs": ["which plan"]}, "ARGS_INVALID", ["need"]),
        ({"need": 5}, "ARGS_INVALID", ["need"]),
        ({"need": "x" * (MAX_NEED_CHARS + 1)}, "ARGS_INVALID", ["need"]),
    ],
)
def test_bad_needs_are_refused_naming_the_field(
    site: Site, arguments: dict[str, Any], code: str, fields: list[str]
) -> None:
    _find_mode(site)

    async def scenario(client: Any, seen: list[Any]) -> None:
        result = await client.call_tool("find_tools", arguments, raise_on_error=False)
        refused = rejection(result)
        assert (refused["code"], refused["fields"]) == (code, fields)
        assert refused["executed"] is False and "needs" in refused["message"]
        assert names(await client.list_tools()) == ["find_tools", "call_tool"]
        assert changes(seen) == 0

    run_gateway(site, scenario)
    assert _find_turns(site) == []  # nothing was routed


def test_the_schema_tells_the_model_both_fields_and_their_bounds(site: Site) -> None:
    _find_mode(site)

    async def scenario(client: Any, seen: list[Any]) -> None:
        tool, runs = await client.list_tools()
        assert (tool.name, runs.name) == ("find_tools", "call_tool")
        schema = tool.input_schema
        assert set(schema["properties"]) == {"need", "needs"} and "required" not in schema
        needs = schema["properties"]["needs"]
        assert (needs["type"], needs["minItems"], needs["maxItems"]) == ("array", 1, MAX_NEEDS)
        assert needs["items"]["maxLength"] == MAX_NEED_CHARS and needs["description"]
        assert schema["properties"]["need"]["description"] and "needs" in tool.description

    run_gateway(site, scenario)
