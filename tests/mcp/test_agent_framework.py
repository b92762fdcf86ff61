"""An agent framework connected through MCP: pydantic-ai's MCP client in front of `maitred mcp`.

The gateway runs as a client would launch it (``maitred mcp --config F`` as a subprocess over
stdio) in front of the recording upstream of ``conftest.py``; the agent is pydantic-ai's
``Agent`` with an :class:`~pydantic_ai.mcp.MCPToolset` on that pipe, and its model is a scripted
:class:`~pydantic_ai.models.function.FunctionModel` (no LLM): each step the script reads what
the framework hands the model (the tool definitions, the tool results) and makes the next
call. That is the view an LLM would get, so these tests show what an agent's model sees:

* a tool the account's state hides is not among the tools the framework offers the model;
* a call the gateway rejects (a hidden tool named from a stale list, or a call policy) comes
  back to the model as the call's error result, with the gateway's code and message, and the
  upstream never ran it;
* pydantic-ai caches the tool list and lists again only when the gateway sends
  ``notifications/tools/list_changed``.

The same for the OpenAI Agents SDK and LangGraph, over HTTP: ``test_openai_agents.py``,
``test_langgraph.py``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp.client.transports import StdioTransport
from tests.mcp.conftest import Site

from maitred.log.base import open_log

pytest.importorskip("pydantic_ai", reason="pydantic-ai-slim[mcp] is in the dev extra")

from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

SRC = Path(__file__).resolve().parents[2] / "src"

#: one scripted model step: what the model saw so far -> the calls it makes (none: it answers)
Step = Callable[["Seen"], Sequence[tuple[str, dict[str, Any]]]]


@dataclass
class Seen:
    """What the framework handed the scripted model, step by step."""

    tools: list[list[str]] = field(default_factory=list)  # the offered tool names, per step
    returns: list[ToolReturnPart] = field(default_factory=list)  # every tool result it got


def gateway(site: Site) -> StdioTransport:
    """``maitred mcp --config`` for ``site``, launched over stdio as an MCP client would."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(SRC)}
    args = ["-m", "maitred.cli.main", "mcp", "--config", str(site.config)]
    return StdioTransport(sys.executable, args, env=env, keep_alive=False)


def run_agent(site: Site, steps: Sequence[Step], before: Callable[[], None] = lambda: None) -> Seen:
    """Run one agent turn whose model plays ``steps``; ``before`` runs once the tools are listed."""
    seen = Seen()

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.tools.append([t.name for t in info.function_tools])
        last = messages[-1]
        if isinstance(last, ModelRequest):
            seen.returns += [p for p in last.parts if isinstance(p, ToolReturnPart)]
        step = len(seen.tools) - 1
        if step == 0:
            before()
        calls = steps[step](seen) if step < len(steps) else []
        if not calls:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart(name, args) for name, args in calls])

    async def main() -> None:
        toolset: MCPToolset[None] = MCPToolset(gateway(site), init_timeout=60, read_timeout=60)
        agent = Agent(FunctionModel(model), toolsets=[toolset], retries=3)
        async with agent:
            result = await agent.run("help me with my account")
        assert result.output == "done"

    anyio.run(main)
    return seen


def gateway_error(part: ToolReturnPart) -> dict[str, Any]:
    """The gateway's rejection, as the model reads it in the call's error result."""
    assert part.outcome == "retried"  # an error the model is asked to act on, not a result
    assert part.retry is not None and part.retry.cause == "model_retry"  # the MCP server said so
    assert isinstance(part.content, str)
    payload: dict[str, Any] = json.loads(part.content)  # the gateway's isError text, as sent
    assert payload["code"] in part.model_response_str()  # what goes into the model's prompt
    return payload


def test_a_hidden_tool_is_not_offered_to_the_model(site: Site) -> None:
    seen = run_agent(
        site, [lambda s: [("get_plan", {"account": "acc-1"}), ("export_report", {"year": 2025})]]
    )
    assert seen.tools[0] == ["get_plan", "upgrade", "crash"]  # acc-1 is on free: no export
    plan, export = (
        next(p for p in seen.returns if p.tool_name == n) for n in ("get_plan", "export_report")
    )
    assert plan.outcome == "success" and plan.content == "free"  # through to the upstream
    # named anyway, a tool the list never offered is refused by the framework itself (it has no
    # such tool to call); the gateway's own call-time refusal is the stale-list test below
    assert export.outcome == "retried" and export.retry is not None
    assert export.retry.cause == "unknown_tool"
    assert site.upstream_calls() == ["get_plan"]


def test_a_policy_breaking_call_is_a_tool_error_the_model_sees_and_never_runs(
    site: Site,
) -> None:
    seen = run_agent(site, [lambda s: [("upgrade", {"account": "acc-2", "plan": "pro"})]])
    error = gateway_error(seen.returns[0])
    assert error["code"] == "SHOP_OTHER_ACCOUNT" and error["fields"] == ["account"]
    assert "signed-in account" in error["message"]
    assert site.upstream_calls() == []


def test_a_hidden_tool_called_from_a_stale_list_is_refused_at_call_time(site: Site) -> None:
    """The list was shown on pro; the plan drops to free before the call: the gateway re-checks."""
    site.set_plan("pro")
    seen = run_agent(
        site,
        [lambda s: [("export_report", {"year": 2025})]],
        before=lambda: site.set_plan("free"),
    )
    assert "export_report" in seen.tools[0]  # the framework still offers it (nothing changed)
    error = gateway_error(seen.returns[0])
    assert error["code"] == "TOOL_NOT_EXECUTABLE" and error["executed"] is False
    assert "free_plan" in error["message"]
    assert site.upstream_calls() == []
    with open_log(str(site.log)) as log:  # and the gateway logged why
        decisions = [(r["tool"], r["code"]) for r in log.iter_action_decisions()]
    assert decisions == [("export_report", "TOOL_NOT_EXECUTABLE")]


def test_the_tool_list_is_cached_until_the_gateway_announces_a_change(site: Site) -> None:
    """pydantic-ai caches the list (``cache_tools``, on by default) and drops it on
    ``notifications/tools/list_changed``: a change nobody announced is not seen, one the
    gateway announced after a write is seen at the next step."""
    seen = run_agent(
        site,
        [
            lambda s: [("get_plan", {"account": "acc-1"})],
            lambda s: [("upgrade", {"account": "acc-1", "plan": "pro"})],
        ],
        before=lambda: site.set_plan("pro"),  # written elsewhere; this config has no watch
    )
    free, pro = ["get_plan", "upgrade", "crash"], ["get_plan", "export_report", "upgrade", "crash"]
    assert [p.content for p in seen.returns] == ["pro", "acc-1 is on pro"]  # both went through
    # step 1: the plan is pro, but nothing announced it: the cached list; step 2: the write's
    # list_changed dropped the cache and the framework listed again
    assert seen.tools == [free, free, pro]
