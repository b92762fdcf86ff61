"""``call_tool``: in ``disclosure: find_tools`` mode the list is ``find_tools`` and ``call_tool``,
and ``call_tool(name, arguments)`` *is* the call ``name(arguments)``: the same decision, the
same refusal, the same log row, the same approval round, the upstream's result as it is.

A fastmcp Client talks to the gateway in memory; the gateway talks to the recording upstream
of ``conftest.py`` over stdio, as in production. The framework tests (pydantic-ai, the OpenAI
Agents SDK, LangGraph) are ``test_call_tool_agents.py``.

The sameness test runs each outcome twice in one session, directly and through
``call_tool``, and compares everything but the ids: the payload the model reads, the
decision the log holds (code, verdict, message, fields, arguments, the turn that disclosed
the tool, the approval), the code the call is counted under and what reached the upstream.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult
from tests.mcp.conftest import SIDECAR, Process, Site, child_env
from tests.mcp.test_gateway import names, rejection
from tests.mcp.test_tasks import SERVER as TASKS_SERVER
from tests.mcp.test_tasks import Handle, Tasks, task
from tests.mcp.test_tasks import Site as TasksSite
from tests.mcp.test_tasks import call as task_call

from maitred.conversation.finding import CALL_TOOL_SCHEMA
from maitred.errors import ConfigError
from maitred.gateway import load_config
from maitred.gateway.build import gate_of, open_gateway
from maitred.log.base import open_log
from maitred.log.verify import verify

APPROVAL = """\
      - name: enterprise_needs_a_yes
        approve: args.plan != "pro"
        reads: [args.plan]
        message: The plans above pro are billed yearly.
"""


def _find_mode(site: Site, extra: str = "") -> None:
    text = site.config.read_text(encoding="utf-8")
    site.config.write_text("disclosure: find_tools\n" + extra + text, encoding="utf-8")
    (site.root / "shop.maitred.yaml").write_text(SIDECAR + APPROVAL, encoding="utf-8")


def wrapped(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


Scenario = Callable[[Client[Any]], Awaitable[None]]


@dataclass
class Run:
    """What a scenario saw: the results of its calls, the questions a person was asked."""

    results: list[Any] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


def _counts(metrics: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in metrics.splitlines():
        if line.startswith("maitred_gateway_calls_total{"):
            code = line.split('code="', 1)[1].split('"', 1)[0]
            out[code] = int(float(line.rsplit(" ", 1)[1]))
    return out


def run(
    site: Site,
    scenario: Callable[[Client[Any], Run], Awaitable[None]],
    *,
    answer: str | None = None,
    mode: str = "legacy",
) -> Run:
    """Open the gateway for ``site`` and run ``scenario``; a person answers approval
    questions with ``answer`` (``accept``/``decline``; ``None``: the client cannot ask)."""
    seen = Run()

    async def ask(message: str, response_type: Any, params: Any, context: Any) -> Any:
        seen.asked.append(message)
        return ElicitResult(action=answer or "decline", content={"value": answer == "accept"})

    async def main() -> None:
        server, engines = await open_gateway(load_config(site.config))
        try:
            client = Client(
                server,
                elicitation_handler=ask if answer is not None else None,
                mode=mode,  # type: ignore[arg-type]
            )
            async with client:
                await scenario(client, seen)
            seen.counts = _counts(gate_of(server).metrics.render().decode("utf-8"))
        finally:
            engines.close()

    anyio.run(main)
    return seen


async def find(client: Client[Any], need: str) -> dict[str, Any]:
    result = await client.call_tool("find_tools", {"need": need})
    assert not result.is_error
    found: dict[str, Any] = result.structured_content
    return found


def _decisions(site: Site) -> list[dict[str, Any]]:
    with open_log(str(site.log), read_only=True) as log:
        rows = sorted(log.iter_action_decisions(), key=lambda r: r["logged_at"])
        assert verify(log).ok
    return [json.loads(r["decision_json"]) for r in rows]


#: what differs between two decisions on the same call made one after the other
_IDS = frozenset({"decision_id", "id", "now", "decided_at", "of", "retry_after_s", "trace_id"})


def _same(value: Any) -> Any:
    """``value`` without its ids and clocks (a rate's seconds to wait included)."""
    if isinstance(value, dict):
        return {k: _same(v) for k, v in value.items() if k not in _IDS}
    if isinstance(value, list):
        return [_same(v) for v in value]
    if isinstance(value, str):
        return re.sub(r"\b[0-9a-f]{32}\b|\bd-[0-9a-f-]+\b|\b\d+(\.\d+)?\s?s\b", "<id>", value)
    return value


def _seen(result: Any) -> dict[str, Any]:
    """A call's result as the model and the client read it (ids left out)."""
    text = result.content[0].text if result.content else ""
    try:
        body: Any = json.loads(text)
    except ValueError:
        body = text
    meta = dict(result.meta or {})
    return {
        "is_error": result.is_error,
        "body": _same(body),
        "structured": _same(result.structured_content),
        "meta": sorted(meta),
    }


#: each outcome: (plan before, needs found first, plan at the call, the call, era, a person's
#: answer) and the code the call gets
Outcome = tuple[str, list[str], str, tuple[str, dict[str, Any]], str, str | None, str]
PLAN = ("get_plan", {"account": "acc-1"})
ENTERPRISE = ("upgrade", {"account": "acc-1", "plan": "enterprise"})
REPORT = ("export_report", {"year": 2025})
WHICH, MOVE = "which plan is my account on", "move my account to another plan"
EXPORT, DIE = "export the yearly report", "die without answering"
BAD_TYPE, NOT_I_JSON = ("get_plan", {"account": 5}), ("get_plan", {"account": "\ud800"})
OTHER = ("upgrade", {"account": "acc-2", "plan": "pro"})
BROKEN = "broken"  # the accounts file is not JSON: the state provider fails
L, A = "legacy", "auto"  # a handshake-era client; a 2026-07-28 one (a round for a question)
OUTCOMES: dict[str, Outcome] = {
    "allowed": ("free", [WHICH], "free", PLAN, L, None, "OK"),
    "unknown": ("free", [], "free", ("no_such_tool", {}), L, None, "TOOL_UNKNOWN"),
    "not-found-yet": ("free", [], "free", PLAN, L, None, "TOOL_NOT_OFFERED"),
    "blocked": ("free", [EXPORT], "free", REPORT, L, None, "TOOL_NOT_OFFERED"),
    "not-executable-now": ("pro", [EXPORT], "free", REPORT, L, None, "TOOL_NOT_EXECUTABLE"),
    "state-unavailable": ("pro", [EXPORT], BROKEN, REPORT, L, None, "STATE_UNAVAILABLE"),
    "args-missing": ("free", [WHICH], "free", ("get_plan", {}), L, None, "ARGS_MISSING"),
    "args-invalid": ("free", [WHICH], "free", BAD_TYPE, L, None, "ARGS_INVALID"),
    "args-not-i-json": ("free", [WHICH], "free", NOT_I_JSON, L, None, "ARGS_INVALID"),
    "call-policy": ("free", [MOVE], "free", OTHER, L, None, "SHOP_OTHER_ACCOUNT"),
    "rate-limited": ("free", [WHICH], "free", PLAN, L, None, "RATE_LIMITED"),
    "upstream-failed": ("free", [DIE], "free", ("crash", {}), L, None, "UPSTREAM_FAILED"),
    "approval-required": ("free", [MOVE], "free", ENTERPRISE, L, None, "APPROVAL_REQUIRED"),
    "approval-declined": ("free", [MOVE], "free", ENTERPRISE, L, "decline", "APPROVAL_DECLINED"),
    "approved": ("free", [MOVE], "free", ENTERPRISE, L, "accept", "OK"),
    "approved-in-a-round": ("free", [MOVE], "free", ENTERPRISE, A, "accept", "OK"),
    "declined-in-a-round": ("free", [MOVE], "free", ENTERPRISE, A, "decline", "APPROVAL_DECLINED"),
}


def _set_state(site: Site, plan: str) -> None:
    if plan == BROKEN:
        site.accounts.write_text("{not json", encoding="utf-8")
    else:
        site.set_plan(plan)


def _code(result: Any) -> str:
    return str(rejection(result)["code"]) if result.is_error else "OK"


@pytest.mark.parametrize("outcome", sorted(OUTCOMES))
def test_call_tool_and_a_direct_call_get_the_same_decision(site: Site, outcome: str) -> None:
    """Every outcome (the task's is ``test_a_task_is_made_alike``): the same payload, log rows,
    approval question, counts and upstream calls, ids aside."""
    before, needs, at_call, (name, arguments), mode, answer, code = OUTCOMES[outcome]
    limited = outcome == "rate-limited"
    _find_mode(site, "rate_limits: {per_tool: {get_plan: 1/hour}}\n" if limited else "")
    site.set_plan(before)

    async def scenario(client: Client[Any], seen: Run) -> None:
        for need in needs:
            await find(client, need)
        if limited:  # the one call the hour allows
            assert not (await client.call_tool(name, arguments)).is_error
        for how in ("direct", "call_tool"):
            _set_state(site, at_call)  # an approved upgrade moved the plan: back to where it was
            called = (
                (name, arguments) if how == "direct" else ("call_tool", wrapped(name, arguments))
            )
            seen.results.append(await client.call_tool(*called, raise_on_error=False))

    seen = run(site, scenario, answer=answer, mode=mode)
    direct, through = seen.results
    assert _code(direct) == _code(through) == code
    assert _seen(through) == _seen(direct)
    if direct.is_error:  # each refusal names its own logged decision
        ids = {rejection(r)["decision_id"] for r in seen.results}
        assert len(ids) == 2 and None not in ids
    decisions = [d for d in _decisions(site) if d["call"]["name"] != "find_tools"]
    decisions = decisions[1:] if limited else decisions
    half = len(decisions) // 2
    assert half >= 1 and len(decisions) == 2 * half  # an approval is two decisions a call
    assert [_same(d) for d in decisions[half:]] == [_same(d) for d in decisions[:half]]
    assert {d["call"]["name"] for d in decisions} == {name}  # logged as the target's call
    assert len(seen.asked) == (2 if answer else 0) and len(set(seen.asked)) <= 1
    counted = {c: n for c, n in seen.counts.items() if c not in ("FIND_TOOLS",) and n}
    if mode == "auto":  # the question went back to the client first: asked, then answered
        assert counted == {"APPROVAL_ASKED": 2, code: 2}
    else:
        assert counted == ({code: 2, "OK": 1} if limited else {code: 2})
    calls = site.upstream_calls()
    assert calls == ([name] if limited else calls[: len(calls) // 2] * 2)
    assert len(calls) == (2 if code in ("OK", "UPSTREAM_FAILED") and not limited else int(limited))


def test_the_list_is_find_tools_and_call_tool_and_a_found_tool_runs_through_it(
    site: Site,
) -> None:
    _find_mode(site)

    async def scenario(client: Client[Any], seen: Run) -> None:
        tools = {t.name: t for t in await client.list_tools()}
        assert list(tools) == ["find_tools", "call_tool"]
        assert tools["call_tool"].input_schema == CALL_TOOL_SCHEMA
        # the result is the named tool's: no schema of call_tool's own for a client to check
        assert tools["call_tool"].output_schema is None
        assert "call_tool" in (tools["find_tools"].description or "")
        early = await client.call_tool(
            "call_tool", wrapped("get_plan", {"account": "acc-1"}), raise_on_error=False
        )
        assert rejection(early)["code"] == "TOOL_NOT_OFFERED"
        assert "find_tools" in rejection(early)["hint"]  # what to do: find it first
        found = await find(client, "which plan is my account on")
        assert "get_plan" in [t["name"] for t in found["tools"]]
        assert found["call_with"].startswith("call_tool with")
        seen.results.append(
            await client.call_tool("call_tool", wrapped("get_plan", {"account": "acc-1"}))
        )
        seen.results.append(await client.call_tool("get_plan", {"account": "acc-1"}))
        several = (await client.call_tool("find_tools", {"needs": ["plan", "report"]})).data
        assert "call_with" in several and all("call_with" not in n for n in several["needs"])
        assert names(await client.list_tools()) == ["find_tools", "call_tool"]

    seen = run(site, scenario)
    through, direct = seen.results
    assert through.content[0].text == direct.content[0].text == "free"  # the upstream's own
    assert through.structured_content == direct.structured_content
    assert through.is_error is direct.is_error is False
    assert through.meta["maitred/decision_id"] != direct.meta["maitred/decision_id"]
    assert site.upstream_calls() == ["get_plan", "get_plan"]
    rows = _decisions(site)
    assert [(r["call"]["name"], r["code"]) for r in rows if r["call"]["name"] != "find_tools"] == [
        ("get_plan", "TOOL_NOT_OFFERED"),
        ("get_plan", "OK"),
        ("get_plan", "OK"),
    ]
    assert seen.counts["OK"] == 2


@pytest.mark.parametrize(
    ("arguments", "code", "fields"),
    [
        ({}, "ARGS_MISSING", ["name"]),
        ({"name": None}, "ARGS_MISSING", ["name"]),
        ({"name": 7}, "TOOL_UNKNOWN", ["name"]),
        ({"name": "get_plan", "arguments": "acc-1"}, "ARGS_INVALID", ["arguments"]),
        ({"name": "get_plan", "arguments": ["acc-1"]}, "ARGS_INVALID", ["arguments"]),
        ({"name": "get_plan", "account": "acc-1"}, "ARGS_INVALID", ["account"]),
        ({"name": "call_tool", "arguments": {}}, "ARGS_INVALID", ["name"]),
    ],
)
def test_a_call_tool_call_that_names_no_call_is_refused_naming_the_field(
    site: Site, arguments: dict[str, Any], code: str, fields: list[str]
) -> None:
    _find_mode(site)

    async def scenario(client: Client[Any], seen: Run) -> None:
        await find(client, "which plan is my account on")
        seen.results.append(await client.call_tool("call_tool", arguments, raise_on_error=False))

    (result,) = run(site, scenario).results
    refused = rejection(result)
    assert (refused["code"], refused["fields"]) == (code, fields)
    assert refused["executed"] is False and "'name'" in refused["message"]
    assert result.meta["maitred/decision_id"] == refused["decision_id"]
    (row,) = [d for d in _decisions(site) if d["call"]["name"] != "find_tools"]
    assert (row["call"]["name"], row["code"], row["mutates"]) == ("call_tool", code, False)
    assert row["decision_id"] == refused["decision_id"]
    assert site.upstream_calls() == []


def test_an_unknown_tool_through_call_tool_is_the_gates_tool_unknown(site: Site) -> None:
    _find_mode(site)

    async def scenario(client: Client[Any], seen: Run) -> None:
        seen.results.append(
            await client.call_tool("call_tool", wrapped("drop_tables", {}), raise_on_error=False)
        )

    (result,) = run(site, scenario).results
    assert rejection(result)["code"] == "TOOL_UNKNOWN"
    assert "drop_tables" not in rejection(result)["message"]  # names no tool
    (row,) = _decisions(site)
    assert (row["call"]["name"], row["code"]) == ("drop_tables", "TOOL_UNKNOWN")


def test_call_tool_is_named_in_the_config_and_is_none_without_find_tools(site: Site) -> None:
    plain = run(
        site,
        lambda client, seen: _append(
            seen,
            client.call_tool(
                "call_tool", wrapped("get_plan", {"account": "acc-1"}), raise_on_error=False
            ),
        ),
    )
    assert rejection(plain.results[0])["code"] == "TOOL_UNKNOWN"  # disclosure: all has none
    _find_mode(site, "find: {call_tool: run_found}\n")

    async def scenario(client: Client[Any], seen: Run) -> None:
        assert names(await client.list_tools()) == ["find_tools", "run_found"]
        found = await find(client, "which plan is my account on")
        assert found["call_with"].startswith("run_found with")
        seen.results.append(
            await client.call_tool("run_found", wrapped("get_plan", {"account": "acc-1"}))
        )
        seen.results.append(
            await client.call_tool("call_tool", wrapped("get_plan", {}), raise_on_error=False)
        )

    ran, other = run(site, scenario).results
    assert ran.content[0].text == "free"
    assert rejection(other)["code"] == "TOOL_UNKNOWN"


async def _append(seen: Run, call: Awaitable[Any]) -> None:
    seen.results.append(await call)


def test_an_upstream_tool_named_call_tool_needs_another_name(site: Site) -> None:
    _find_mode(site, "find: {call_tool: get_plan}\n")
    with pytest.raises(ConfigError, match=re.escape("find: {call_tool: <name>}")):
        run(site, lambda client, seen: anyio.sleep(0))
    text = site.config.read_text(encoding="utf-8")
    site.config.write_text(text.replace("get_plan}", "find_tools}"), encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape("find.call_tool")):
        load_config(site.config)


@pytest.fixture
def tasks_site(tmp_path: Path) -> Iterator[TasksSite]:
    """The tasks upstream of ``test_tasks.py`` (streamable HTTP), on the free plan."""
    env = {**child_env(), "CALLS_FILE": str(tmp_path / "calls.jsonl")}
    upstream = Process([sys.executable, str(TASKS_SERVER), "0"], env, r"PORT=(\d+)")
    found = TasksSite(tmp_path, f"http://127.0.0.1:{upstream.match.group(1)}/mcp")
    found.set_plan("free")
    try:
        yield found
    finally:
        upstream.stop()


def test_a_task_is_made_alike(tasks_site: TasksSite) -> None:
    """A call that becomes a task upstream: decided, recorded as the caller's and handed over
    the same way through ``call_tool`` as directly (``tasks/create`` rows alike)."""
    config = tasks_site.config("account: acc-1\ndisclosure: find_tools\n")
    handles: list[Any] = []

    async def main() -> None:
        server, engines = await open_gateway(load_config(config))
        try:
            async with Client(server, extensions=[Tasks()]) as client:  # type: ignore[arg-type]
                tasks_site.set_plan("pro")
                await find(client, "render a long report")
                args = {"title": "Q4"}
                handles.append(await task_call(client, "render_report", args))
                handles.append(await task_call(client, "call_tool", wrapped("render_report", args)))
                for handle in handles:
                    assert (await task(client, "tasks/get", handle.task_id))["status"] == "working"
        finally:
            engines.close()

    anyio.run(main)
    assert all(isinstance(h, Handle) and h.task_id.startswith("task-") for h in handles)
    assert handles[0].task_id != handles[1].task_id
    assert tasks_site.served() == ["task created", "task created", "tasks/get", "tasks/get"]
    with open_log(str(tasks_site.root / "gateway.sqlite"), read_only=True) as log:
        rows = [json.loads(r["decision_json"]) for r in log.iter_action_decisions()]
        assert verify(log).ok
    by_id = {r["decision_id"]: r for r in rows}
    made = [by_id[h.task_id] for h in handles]  # the record of each task, under its id
    calls = [by_id[made_one["call"]["arguments"]["decision"]] for made_one in made]
    assert [c["call"]["name"] for c in calls] == ["render_report"] * 2
    assert _same(calls[1]) == _same(calls[0]) and calls[0]["code"] == "OK"
    own = ("decision", "upstreamTaskId")  # each task's own call and upstream id
    kept = [{k: v for k, v in m["call"]["arguments"].items() if k not in own} for m in made]
    assert kept[1] == kept[0] and {m["code"] for m in made} == {"OK"}
