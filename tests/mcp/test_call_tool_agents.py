"""Agent frameworks in front of 1,000 tools with only ``find_tools`` and ``call_tool``.

Frameworks let the model call only the tools ``tools/list`` shows; in ``disclosure:
find_tools`` mode that list is ``find_tools`` and ``call_tool`` and never changes, so this is
how a framework's agent reaches a large catalog through the gateway. Each test runs one
framework -- pydantic-ai's ``MCPToolset``, the OpenAI Agents SDK's
``MCPServerStreamableHttp``, LangGraph through ``langchain-mcp-adapters`` (its own venv, as in
``test_langgraph.py``) -- over streamable HTTP with a bearer token, in front of
``catalog_server.py``'s 1,000 tools (``catalog_site.py``), and the model is the same script
(``agent_script.py``, no LLM): it finds a tool for its need, runs the first one found
through ``call_tool``, and names two tools it was never given. Each test shows:

* the model is offered ``find_tools`` and ``call_tool``, at every step, and nothing else;
* the tool it found ran upstream, and its result reached the model as the upstream wrote it;
* a tool the account's state hides (``export_report``) is refused through ``call_tool`` with
  the code a direct call gets (``TOOL_NOT_OFFERED``), its name in no refusal;
* a tool the token's scopes do not reach (``delete_backup``) is named in no ``find_tools``
  answer, even to a need it fits, and is refused (``INSUFFICIENT_SCOPE``) when named;
* every call is logged as the call it named, and nothing refused reached the upstream.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.mcp.agent_script import HIDDEN, NEED, SCOPED, SCOPED_NEED, answer_to, calls
from tests.mcp.catalog_site import TOKEN, CatalogSite, serve_catalog

pytestmark = pytest.mark.slow  # the gateway, its upstream (and LangGraph's agent) run apart

AGENT = Path(__file__).with_name("langgraph_agent.py")
OFFERED = ["find_tools", "call_tool"]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CatalogSite]:
    """One gateway for the three frameworks: 1,000 tools take a while to start."""
    served = serve_catalog(tmp_path_factory.mktemp("catalog"))
    try:
        yield served
    finally:
        served.gateway.stop()


@pytest.fixture
def catalog(gateway: CatalogSite) -> CatalogSite:
    """The gateway, its upstream's calls and its log seen from this test on only."""
    return gateway.since_now()


def check_run(catalog: CatalogSite, offered: list[list[str]], results: list[Any]) -> None:
    """What every framework's run must show (the module docstring), from the tool names the
    model was offered per step and the tool results it read, as text, in call order."""
    assert offered == [OFFERED] * 3  # three model steps, the same two tools at each
    found = answer_to(NEED, results)
    assert found["tools"][0]["name"] == "create_invoice"  # the one of 1,000 that fits
    assert found["call_with"].startswith("call_tool with")
    scoped = answer_to(SCOPED_NEED, results)
    assert SCOPED[0] not in json.dumps(scoped)  # not disclosed, not named as blocked
    assert scoped["tools"]  # other tools fit that need (delete_*, *_backup)
    ran, hidden, lacking = (_json(r) for r in results[2:])
    assert ran == 'create_invoice done: {"name": "ACME"}'  # the upstream's text, as it is
    assert hidden["code"] == "TOOL_NOT_OFFERED" and HIDDEN[0] not in hidden["message"]
    assert "find_tools" in hidden["hint"]
    assert lacking["code"] == "INSUFFICIENT_SCOPE" and "backup:admin" in lacking["message"]
    assert catalog.upstream_calls() == ["create_invoice"]
    logged = {d["decision_id"]: d for d in catalog.decisions()}  # this run's
    for refused, tool in ((hidden, HIDDEN[0]), (lacking, SCOPED[0])):
        row = logged[refused["decision_id"]]
        assert (row["call"]["name"], row["code"]) == (tool, refused["code"])
    # the calls are logged as the calls they named (an answered find_tools is a turn)
    assert sorted(d["call"]["name"] for d in logged.values()) == sorted(
        ["create_invoice", HIDDEN[0], SCOPED[0]]
    )


def _json(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def test_pydantic_ai(catalog: CatalogSite) -> None:
    pytest.importorskip("pydantic_ai", reason="pydantic-ai-slim[mcp] is in the dev extra")
    from fastmcp.client.transports import StreamableHttpTransport
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

    offered: list[list[str]] = []
    returns: list[ToolReturnPart] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append([t.name for t in info.function_tools])
        last = messages[-1]
        if isinstance(last, ModelRequest):
            returns.extend(p for p in last.parts if isinstance(p, ToolReturnPart))
        step = calls(len(offered) - 1, [p.content for p in returns])
        if not step:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart(name, args) for name, args in step])

    async def main() -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        transport = StreamableHttpTransport(catalog.url, headers=headers)
        toolset: MCPToolset[None] = MCPToolset(transport, init_timeout=60, read_timeout=60)
        agent = Agent(FunctionModel(model), toolsets=[toolset], retries=3)
        async with agent:
            result = await agent.run("bill ACME for this quarter")
        assert result.output == "done"

    anyio.run(main)
    refused = [p for p in returns if p.outcome == "retried"]  # isError: the model is asked to
    assert len(refused) == 2  # act on it (pydantic-ai's retry), with the gateway's text
    check_run(catalog, offered, [p.content for p in returns])


def test_openai_agents(catalog: CatalogSite) -> None:
    pytest.importorskip("agents", reason="openai-agents is in the dev extra")
    from agents import Agent, Runner, set_tracing_disabled
    from agents.items import ToolCallOutputItem
    from agents.mcp import MCPServerStreamableHttp
    from tests.mcp.test_openai_agents import ScriptedModel, Seen, text

    set_tracing_disabled(True)
    seen = Seen()

    class Reading(ScriptedModel):
        """The shared script, reading the call outputs the SDK put in the model's input."""

        async def get_response(self, system_instructions: Any, input: Any, *rest: Any, **kw: Any):  # type: ignore[no-untyped-def]
            items = input if isinstance(input, list) else []
            read = [_output(i) for i in items if _is_output(i)]
            self.steps = [*self.steps, calls(len(self.seen.tools), read)]
            return await super().get_response(system_instructions, input, *rest, **kw)

    async def main() -> None:
        server = MCPServerStreamableHttp(
            {"url": catalog.url, "headers": {"Authorization": f"Bearer {TOKEN}"}, "timeout": 30},
            client_session_timeout_seconds=60,
        )
        async with server:
            agent = Agent(
                name="billing", model=Reading([], seen, lambda: None), mcp_servers=[server]
            )
            result = await Runner.run(agent, "bill ACME for this quarter", max_turns=5)
            assert result.final_output == "done"
            seen.outputs = [i for i in result.new_items if isinstance(i, ToolCallOutputItem)]

    anyio.run(main)
    check_run(catalog, seen.tools, [text(o) for o in seen.outputs])


def _is_output(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "function_call_output"


def _output(item: dict[str, Any]) -> str:
    found = item["output"]
    return found if isinstance(found, str) else "".join(p["text"] for p in found)


@pytest.mark.parametrize("session", [True, False], ids=["one-session", "session-per-call"])
def test_langgraph(langgraph_python: Path, catalog: CatalogSite, session: bool) -> None:
    """With one MCP session for the run (``client.session`` + ``load_mcp_tools``) LangGraph
    finds and runs; with ``get_tools()``'s session per call (handshake era: each session is
    its own holder) what one call found is not disclosed to the next call's session."""
    path = catalog.root / "plan.json"
    plan = {"url": catalog.url, "token": TOKEN, "steps": [], "script": True, "session": session}
    path.write_text(json.dumps(plan), encoding="utf-8")
    ran = subprocess.run(
        [str(langgraph_python), str(AGENT), str(path)], capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    found: dict[str, Any] = json.loads(ran.stdout)
    assert found["final"] == "done"
    messages = found["messages"]
    if session:
        statuses = [m["status"] for m in messages]
        assert statuses == ["success", "success", "success", "error", "error"]
        check_run(catalog, found["offered"], [m["content"] for m in messages])
        return
    assert found["offered"] == [OFFERED] * 3
    refused = json.loads(messages[2]["content"])  # found in one session, run in another
    assert (messages[2]["status"], refused["code"]) == ("error", "TOOL_NOT_OFFERED")
    assert catalog.upstream_calls() == []


def test_a_direct_call_and_call_tool_are_refused_alike_over_http(catalog: CatalogSite) -> None:
    """The refusals of this page's two unreachable tools, called directly and through
    ``call_tool`` by ``fastmcp.Client`` with the same token: the same payload, ids aside."""
    from fastmcp import Client

    got: list[dict[str, Any]] = []

    async def main() -> None:
        async with Client(catalog.url, auth=TOKEN) as client:
            for name, arguments in (HIDDEN, SCOPED):
                for called in (
                    (name, arguments),
                    ("call_tool", {"name": name, "arguments": arguments}),
                ):
                    result = await client.call_tool(*called, raise_on_error=False)
                    assert result.is_error
                    got.append(json.loads(result.content[0].text))

    anyio.run(main)
    same = [{k: v for k, v in g.items() if k != "decision_id"} for g in got]
    assert same[0] == same[1] and same[0]["code"] == "TOOL_NOT_OFFERED"
    assert same[2] == same[3] and same[2]["code"] == "INSUFFICIENT_SCOPE"
    assert len({g["decision_id"] for g in got}) == 4
    assert catalog.upstream_calls() == []
