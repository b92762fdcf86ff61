"""``call_tool``: in ``disclosure: find_tools`` mode the list is ``find_tools`` and ``call_tool``,
and ``call_tool(name, arguments)`` *is* the call ``name(arguments)``: the same decision, the
same refusal, the same log row, the same approval round, the upstream's result as it is.

A fastmcp Client talks to the gateway in memory; the gateway talks to the recording upstream
of ``conftest.py`` over stdio, as in production. This module holds the list, the wrapper's
own refusals and its name, and the helpers the other ``call_tool`` modules share. The
framework tests (pydantic-ai, the OpenAI Agents SDK, LangGraph) are
``test_call_tool_agents.py``; the sameness tests, which make each call directly and through
``call_tool`` and find the same decision for every code a ``tools/call`` can come to (allowed,
each refusal code, an approval, a task), are ``test_call_tool_sameness.py``, whose docstring
lists the outcomes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult
from tests.mcp.conftest import SIDECAR, Site
from tests.mcp.test_gateway import names, rejection
from tests.mcp.test_pins import PinSite

from maitred.conversation.finding import CALL_TOOL_SCHEMA
from maitred.errors import ConfigError
from maitred.gateway import load_config
from maitred.gateway.build import gate_of, open_gateway
from maitred.log.base import open_log
from maitred.log.verify import verify

#: the shop's approval rule, and a call policy over the account's state (its STATE_MISSING,
#: PREDICATE_ERROR and STATE_STALE are ``test_call_tool_sameness.py``'s)
APPROVAL = """\
      - name: enterprise_needs_a_yes
        approve: args.plan != "pro"
        reads: [args.plan]
        message: The plans above pro are billed yearly.
      - name: not_the_plan_it_is_on
        expr: state.account.plan == args.plan
        reads: [state.account.plan, args.plan]
        max_age_s: 3600
        code: SHOP_SAME_PLAN
        message: The account is on that plan already
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


def _decisions(site: Site | PinSite) -> list[dict[str, Any]]:
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
