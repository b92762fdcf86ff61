"""The OpenAI Agents SDK in front of `maitred mcp` over streamable HTTP.

The gateway runs as a deployment runs it (``maitred mcp`` with a ``server:`` block, in a
subprocess, one bearer token for ``acc-1``) in front of the recording upstream of
``conftest.py``. The agent is the SDK's ``Agent`` with an
:class:`agents.mcp.MCPServerStreamableHttp` on the gateway's URL; its model is a scripted
:class:`agents.models.interface.Model` (no LLM, no network; tracing off): each step it records
the tools the SDK hands it and answers with the calls the script names. The tests show:

* a tool the account's state hides is not among the tools the SDK offers the model, and a
  model that names it anyway ends the run in the SDK (``ModelBehaviorError``), before any
  call reaches the gateway;
* a call the gateway refuses (a call policy; a tool hidden after the list was taken) reaches
  the model as the call's output: the gateway's JSON text, code and ``decision_id`` included.
  The SDK does not mark it as an error for the model, and gives the result's ``_meta`` only to
  a ``custom_data_extractor``, so the decision id in the text is the one the model sees;
* the upstream never ran a refused call;
* tool-list caching: by default the SDK lists the tools again before every model step, so a
  write that changes the visible set shows in the next step; with ``cache_tools_list=True`` it
  keeps the first list although the gateway's ``list_changed`` reached its client session.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from tests.mcp.conftest import Site
from tests.mcp.http_site import TOKEN, HttpSite, serve_http

pytest.importorskip("agents", reason="openai-agents is in the dev extra")

from agents import Agent, ModelBehaviorError, ModelSettings, Runner, set_tracing_disabled
from agents.items import ModelResponse, ToolCallOutputItem
from agents.mcp import MCPServerStreamableHttp
from agents.mcp.util import MCPToolCustomDataContext
from agents.models.interface import Model, ModelTracing
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

pytestmark = pytest.mark.slow  # each test starts the gateway and its upstream as subprocesses

set_tracing_disabled(True)  # the SDK would otherwise export traces to OpenAI

Calls = Sequence[tuple[str, dict[str, Any]]]


@dataclass
class Seen:
    """What the SDK handed the scripted model and what the run gave back."""

    tools: list[list[str]] = field(default_factory=list)  # the offered tool names, per step
    outputs: list[ToolCallOutputItem] = field(default_factory=list)  # every call's output
    notifications: list[str] = field(default_factory=list)  # server notifications received
    error: Exception | None = None  # what ended the run, when it did not finish


class ScriptedModel(Model):
    """A model that plays a script: step ``i`` makes the calls ``steps[i]``, then answers."""

    def __init__(self, steps: Sequence[Calls], seen: Seen, before: Callable[[], None]) -> None:
        self.steps, self.seen, self.before = steps, seen, before

    async def get_response(
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> ModelResponse:
        step = len(self.seen.tools)
        self.seen.tools.append([t.name for t in tools])
        if step == 0:
            self.before()
        calls = self.steps[step] if step < len(self.steps) else []
        if not calls:
            text = ResponseOutputText(type="output_text", text="done", annotations=[])
            answer = ResponseOutputMessage(
                id=f"msg-{step}", type="message", role="assistant", status="completed",
                content=[text],
            )  # fmt: skip
            return ModelResponse(output=[answer], usage=Usage(), response_id=None)
        output: list[Any] = [
            ResponseFunctionToolCall(
                type="function_call",
                call_id=f"call-{step}-{i}",
                name=name,
                arguments=json.dumps(args),
            )
            for i, (name, args) in enumerate(calls)
        ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the tests run the agent without streaming")


def decision_meta(context: MCPToolCustomDataContext) -> dict[str, Any]:
    """Keep the result's ``_meta`` decision id and ``isError`` with the SDK's output item."""
    meta = context.result_meta or {}
    return {"decision_id": meta.get("maitred/decision_id"), "is_error": context.is_error}


def run_agent(
    http: HttpSite,
    steps: Sequence[Calls],
    before: Callable[[], None] = lambda: None,
    cache_tools_list: bool = False,
) -> Seen:
    """Run one agent turn whose model plays ``steps``; ``before`` runs once the tools are listed."""
    seen = Seen()

    async def note(message: Any) -> None:
        seen.notifications.append(type(message).__name__)

    async def main() -> None:
        server = MCPServerStreamableHttp(
            {"url": http.url, "headers": {"Authorization": f"Bearer {TOKEN}"}, "timeout": 30},
            cache_tools_list=cache_tools_list,
            client_session_timeout_seconds=60,
            message_handler=note,
            custom_data_extractor=decision_meta,
        )
        async with server:
            agent = Agent(
                name="shop", model=ScriptedModel(steps, seen, before), mcp_servers=[server]
            )
            try:
                result = await Runner.run(
                    agent, "help me with my account", max_turns=len(steps) + 2
                )
            except ModelBehaviorError as error:
                seen.error = error
                return
            assert result.final_output == "done"
            seen.outputs = [i for i in result.new_items if isinstance(i, ToolCallOutputItem)]

    anyio.run(main)
    return seen


@pytest.fixture
def http(site: Site) -> Iterator[HttpSite]:
    served = serve_http(site)
    try:
        yield served
    finally:
        served.gateway.stop()


def output(seen: Seen, call_id: str) -> ToolCallOutputItem:
    return next(o for o in seen.outputs if o.raw_item["call_id"] == call_id)  # type: ignore[index]


def text(item: ToolCallOutputItem) -> str:
    """A call's output as the model reads it in its next input."""
    found = item.to_input_item()["output"]  # type: ignore[typeddict-item]
    if isinstance(found, str):
        return found
    return "".join(part["text"] for part in found)


def refusal(http: HttpSite, item: ToolCallOutputItem) -> dict[str, Any]:
    """The gateway's rejection as the model reads it, checked against ``_meta`` and the log."""
    payload: dict[str, Any] = json.loads(text(item))  # the gateway's isError text, as sent
    assert item.custom_data == {"decision_id": payload["decision_id"], "is_error": True}
    logged = {r["decision_id"]: r for r in http.decisions()}
    assert logged[payload["decision_id"]]["code"] == payload["code"]  # the row behind it
    return payload


def test_a_hidden_tool_is_not_offered_and_naming_it_ends_the_run_in_the_sdk(
    http: HttpSite,
) -> None:
    seen = run_agent(http, [[("get_plan", {"account": "acc-1"}), ("export_report", {"year": 1})]])
    assert seen.tools[0] == ["get_plan", "upgrade", "crash"]  # acc-1 is on free: no export
    # unlike pydantic-ai (which asks the model to retry), the SDK stops the run on a tool it
    # was never offered, before it runs any call of that step
    assert isinstance(seen.error, ModelBehaviorError)
    assert "export_report not found" in str(seen.error)
    assert http.site.upstream_calls() == []
    assert http.decisions() == []  # nothing reached the gateway to decide


def test_a_policy_breaking_call_reaches_the_model_with_code_and_decision_id(
    http: HttpSite,
) -> None:
    seen = run_agent(
        http,
        [[("upgrade", {"account": "acc-2", "plan": "pro"}), ("get_plan", {"account": "acc-1"})]],
    )
    error = refusal(http, output(seen, "call-0-0"))
    assert error["code"] == "SHOP_OTHER_ACCOUNT" and error["fields"] == ["account"]
    assert error["executed"] is False and "signed-in account" in error["message"]
    allowed = output(seen, "call-0-1")
    assert text(allowed) == "free"  # the other call of the step went through
    assert allowed.custom_data is not None and allowed.custom_data["is_error"] is False
    assert allowed.custom_data["decision_id"] != error["decision_id"]  # each call its own row
    assert http.site.upstream_calls() == ["get_plan"]  # the refused upgrade never ran


def test_a_hidden_tool_called_from_a_stale_list_is_refused_at_call_time(http: HttpSite) -> None:
    """Listed on pro; the plan drops to free before the model's call: the gateway re-checks."""
    http.site.set_plan("pro")
    seen = run_agent(
        http, [[("export_report", {"year": 2025})]], before=lambda: http.site.set_plan("free")
    )
    assert "export_report" in seen.tools[0]
    error = refusal(http, output(seen, "call-0-0"))
    assert error["code"] == "TOOL_NOT_EXECUTABLE" and error["executed"] is False
    assert "free_plan" in error["message"]
    assert seen.tools[1] == ["get_plan", "upgrade", "crash"]  # listed afresh for the next step
    assert http.site.upstream_calls() == []


@pytest.mark.parametrize("cache_tools_list", [False, True])
def test_tool_list_after_a_write_that_changes_it(http: HttpSite, cache_tools_list: bool) -> None:
    """``upgrade`` moves acc-1 to pro (a write): export_report becomes visible."""
    seen = run_agent(
        http,
        [[("upgrade", {"account": "acc-1", "plan": "pro"})], [("export_report", {"year": 2025})]],
        cache_tools_list=cache_tools_list,
    )
    assert seen.tools[0] == ["get_plan", "upgrade", "crash"]
    assert "ToolListChangedNotification" in seen.notifications  # the gateway announced it
    if not cache_tools_list:  # the default: listed again before every step
        assert seen.tools[1] == ["get_plan", "export_report", "upgrade", "crash"]
        assert text(output(seen, "call-1-0")) == "report 2025"
        assert http.site.upstream_calls() == ["upgrade", "export_report"]
    else:  # cached: the announcement does not invalidate the cache; the model gets the old list
        assert seen.tools[1] == ["get_plan", "upgrade", "crash"]
        assert isinstance(seen.error, ModelBehaviorError)
        assert http.site.upstream_calls() == ["upgrade"]
