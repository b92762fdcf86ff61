"""An MCP server (streamable HTTP) that offers the tasks extension, for the gateway's tasks tests.

``python tasks_server.py PORT`` (0: a free port; it prints ``PORT=<n>`` once bound). It writes
one JSON line per request it serves to ``$CALLS_FILE`` (``{"name": ..., "arguments": ...}``),
so a test can prove that a refused call never made a task here.

It follows SEP-2663 (``io.modelcontextprotocol/tasks``) as a real server would: it declares the
extension, and answers ``render_report`` with a task handle (``resultType: "task"``) when the
request declared the extension in its ``_meta`` capabilities, with the plain result otherwise.
A task is ``working`` at its first ``tasks/get`` and ``completed`` (with the tool's result) at
the next; ``tasks/cancel`` of a working task cancels it. Its task ids are ``t1``, ``t2``...: a
guessable scheme, which the gateway must not pass on. Tasks live in memory.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Sequence
from typing import Any, Literal

import anyio
import mcp_types as mt
from fastmcp import FastMCP
from fastmcp.server.context import Context
from fastmcp.server.extensions import (
    MethodBinding,
    ServerExtension,
    ToolCallContinuation,
    ToolCallOutcome,
)
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import ConfigDict, Field

TASKS = "io.modelcontextprotocol/tasks"
server: FastMCP[Any] = FastMCP("reports")
TASKS_MADE: dict[str, dict[str, Any]] = {}


def _record(name: str, arguments: dict[str, Any]) -> None:
    with open(os.environ["CALLS_FILE"], "a", encoding="utf-8") as out:
        out.write(json.dumps({"name": name, "arguments": arguments}) + "\n")


@server.tool
def render_report(title: str) -> str:
    """Render a long report (may run as a task)."""
    _record("render_report", {"title": title})
    return f"report {title!r}: 42 pages"


@server.tool
def purge_reports() -> str:
    """Delete every report (gated by the tests' sidecar)."""
    _record("purge_reports", {})
    return "purged"


class TaskHandle(mt.Result):
    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str = Field(alias="taskId")
    status: str
    created_at: str = Field(alias="createdAt", default="2026-12-04T00:00:00Z")
    last_updated_at: str = Field(alias="lastUpdatedAt", default="2026-12-04T00:00:00Z")
    ttl_ms: int | None = Field(alias="ttlMs", default=60_000)


class TaskParams(mt.RequestParams):
    model_config = ConfigDict(extra="allow")
    task_id: str = Field(alias="taskId")


class Answer(mt.Result):
    model_config = ConfigDict(extra="allow")
    result_type: str = "complete"


class Tasks(ServerExtension):
    identifier = TASKS

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("tasks/get", TaskParams, self.get),
            MethodBinding("tasks/update", TaskParams, self.update),
            MethodBinding("tasks/cancel", TaskParams, self.cancel),
        )

    async def intercept_tool_call(
        self, params: mt.CallToolRequestParams, context: Context, call_next: ToolCallContinuation
    ) -> ToolCallOutcome:
        request = context.request_context
        meta = (request.meta if request is not None else None) or {}
        caps = meta.get("io.modelcontextprotocol/clientCapabilities") or {}
        if params.name != "render_report" or TASKS not in (caps.get("extensions") or {}):
            return await call_next()
        task_id = f"t{len(TASKS_MADE) + 1}"
        title = str((params.arguments or {}).get("title", ""))
        TASKS_MADE[task_id] = {"status": "working", "polls": 0, "title": title}
        _record("task created", {"taskId": task_id, "title": title})
        return TaskHandle(taskId=task_id, status="working")

    def _task(self, params: TaskParams) -> dict[str, Any]:
        task = TASKS_MADE.get(params.task_id)
        if task is None:
            raise MCPError(mt.INVALID_PARAMS, f"unknown task {params.task_id!r}")
        return task

    async def get(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> Answer:
        task = self._task(params)
        _record("tasks/get", {"taskId": params.task_id})
        task["polls"] += 1
        if task["status"] == "working" and task["polls"] > 1:
            task["status"] = "completed"
        state: dict[str, Any] = {
            "taskId": params.task_id,
            "status": task["status"],
            "createdAt": "2026-12-04T00:00:00Z",
            "lastUpdatedAt": "2026-12-04T00:00:00Z",
            "ttlMs": 60_000,
        }
        if task["status"] == "completed":
            text = f"report {task['title']!r}: 42 pages"
            state["result"] = {"content": [{"type": "text", "text": text}], "isError": False}
        return Answer.model_validate(state)

    async def update(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> Answer:
        self._task(params)
        _record("tasks/update", {"taskId": params.task_id})
        return Answer()

    async def cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> Answer:
        task = self._task(params)
        _record("tasks/cancel", {"taskId": params.task_id})
        if task["status"] == "working":
            task["status"] = "cancelled"
        return Answer()


server.add_extension(Tasks())


async def main(port: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    print(f"PORT={sock.getsockname()[1]}", flush=True)
    await server.run_http_async(
        show_banner=False, host="127.0.0.1", port=port, log_level="warning", sockets=[sock]
    )


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 0)
