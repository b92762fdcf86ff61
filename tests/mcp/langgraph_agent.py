"""A LangGraph agent on ``maitred mcp`` over streamable HTTP, with a scripted chat model.

Run by ``test_langgraph.py`` with ``.venv-langgraph/bin/python`` (``make frameworks-deps``
builds it): ``langchain-mcp-adapters`` pins ``mcp<2`` and cannot share the project's venv,
which has ``mcp`` 2. It does not import maitred; all it knows of the gateway is its URL and a
bearer token, as a LangGraph application would.

``python langgraph_agent.py PLAN.json`` reads::

    {"url": "http://127.0.0.1:PORT/mcp", "token": "...",
     "steps": [[["tool", {"arg": 1}], ...], ...],    # the calls of each model step
     "before": {"path": "...", "text": "..."},       # optional: written at the first step
     "session": false,                               # true: one MCP session for the run
     "builder": "create_react_agent",                # or "create_agent"
     "script": false}                                # true: agent_script.py's model instead

loads the gateway's tools through ``MultiServerMCPClient`` (``get_tools()``: a session per
call, as its docs show first) or, with ``session``, through one explicit session and
``load_mcp_tools``; builds the agent with LangGraph's ``langgraph.prebuilt.create_react_agent``
or with ``langchain.agents.create_agent`` (LangChain 1's agent, a LangGraph graph too, which
LangGraph 1 points users to) on a chat model that plays ``steps`` (no LLM, no network); runs
one turn and prints one JSON object on stdout (with ``script``, the model is
``agent_script.py``'s, which reads the tool results: the ``call_tool`` tests'):
``offered`` (the tool names bound to the model, per step), ``messages`` (every tool message:
name, status, content), ``final`` (the model's last text) and ``notifications`` (the types of
the server notifications its MCP sessions received, through the ``message_handler`` the
connection's ``session_kwargs`` pass to the ``mcp`` SDK's ``ClientSession``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import agent_script  # beside this file (the script's folder is first on sys.path)
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from langgraph.prebuilt import create_react_agent
from pydantic import Field


class ScriptedChatModel(BaseChatModel):
    """A chat model that answers each step with the tool calls the script names.

    ``bind_tools`` is how LangGraph hands a model its tools; the names bound are recorded
    per step, so the test reads what a real model would have been offered.
    """

    steps: list[list[tuple[str, dict[str, Any]]]]
    before: dict[str, str] | None = None
    script: bool = False  # play agent_script.calls (it reads the tool results) instead
    offered: list[list[str]] = Field(default_factory=list)
    bound: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(  # type: ignore[override]
        self, tools: Sequence[BaseTool | dict[str, Any] | type | Callable[..., Any]], **_: Any
    ) -> Runnable[Any, BaseMessage]:
        self.bound = [t.name if isinstance(t, BaseTool) else str(t) for t in tools]
        return self

    def _generate(self, messages: list[BaseMessage], *_: Any, **__: Any) -> ChatResult:
        step = len(self.offered)
        self.offered.append(list(self.bound))
        if step == 0 and self.before is not None:
            fresh = Path(self.before["path"] + ".new")  # a new inode, as a sync job writes
            fresh.write_text(self.before["text"], encoding="utf-8")
            os.replace(fresh, self.before["path"])
        if self.script:
            results = [_text(m.content) for m in messages if isinstance(m, ToolMessage)]
            calls = agent_script.calls(step, results)
        else:
            calls = self.steps[step] if step < len(self.steps) else []
        if not calls:
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="done"))])
        tool_calls = [
            {"name": name, "args": args, "id": f"call-{step}-{i}", "type": "tool_call"}
            for i, (name, args) in enumerate(calls)
        ]
        message = AIMessage(content="", tool_calls=tool_calls)
        return ChatResult(generations=[ChatGeneration(message=message)])


def _text(content: Any) -> str:
    """A tool message's content as the model reads it (text blocks joined)."""
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)


async def run(plan: dict[str, Any]) -> dict[str, Any]:
    notifications: list[str] = []

    async def note(message: Any) -> None:  # the adapters install no handler of their own
        notifications.append(type(getattr(message, "root", message)).__name__)

    connection: Any = {
        "transport": "streamable_http",
        "url": plan["url"],
        "headers": {"Authorization": f"Bearer {plan['token']}"},
        "session_kwargs": {"message_handler": note},
    }
    client = MultiServerMCPClient({"gateway": connection})
    model = ScriptedChatModel(
        steps=plan["steps"], before=plan.get("before"), script=bool(plan.get("script"))
    )

    async def turn(tools: list[BaseTool]) -> dict[str, Any]:
        if plan.get("builder", "create_react_agent") == "create_agent":
            agent: Any = create_agent(model, tools)
        else:
            with warnings.catch_warnings():  # deprecated in LangGraph 1 for create_agent
                warnings.simplefilter("ignore")
                agent = create_react_agent(model, tools)
        state = await agent.ainvoke({"messages": [("user", "help me with my account")]})
        messages = state["messages"]
        return {
            "offered": model.offered,
            "messages": [
                {"name": m.name, "status": m.status, "content": _text(m.content)}
                for m in messages
                if isinstance(m, ToolMessage)
            ],
            "final": _text(messages[-1].content),
            "notifications": notifications,
        }

    if plan.get("session"):
        async with client.session("gateway") as session:
            return await turn(await load_mcp_tools(session))
    return await turn(await client.get_tools())


if __name__ == "__main__":
    found = asyncio.run(run(json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))))
    print(json.dumps(found))
