"""An upstream that lists a tool to one protocol era only, for ``test_eras.py``.

A real FastMCP server over streamable HTTP (both eras on one endpoint, as FastMCP serves
them) with three tools: ``either_era`` for every client, ``new_era_only`` listed and run only
for 2026-07-28 clients, ``handshake_only`` only for handshake-era ones. A call to a tool its
era does not list is answered as a direct client would be answered: unknown tool. Each
tool's answer names the era it ran in. A fourth, ``asks_name``, asks its 2026-07-28 client
for a name first (an ``InputRequiredResult`` with a ``requestState`` of its own) and answers
only a retry that brings the name and that state back.

    python era_server.py      # prints "era server: http://127.0.0.1:PORT/mcp"
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import Any

import mcp_types as mt
import uvicorn
from fastmcp import Context, FastMCP
from fastmcp.exceptions import NotFoundError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools import Tool, ToolResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

#: the tools listed to one era only, and that era
ONLY = {"new_era_only": "2026-07-28", "handshake_only": "handshake"}


def era_of(context: MiddlewareContext[Any]) -> str:
    ctx = context.fastmcp_context
    request = ctx.request_context if ctx is not None else None
    version = request.protocol_version if request is not None else None
    return "2026-07-28" if version in MODERN_PROTOCOL_VERSIONS else "handshake"


class ByEra(Middleware):
    """Lists and runs each tool only for the era it is for."""

    async def on_list_tools(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Sequence[Tool]]
    ) -> Sequence[Tool]:
        era = era_of(context)
        return [t for t in await call_next(context) if ONLY.get(t.name, era) == era]

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        if ONLY.get(context.message.name, era_of(context)) != era_of(context):
            raise NotFoundError(f"Unknown tool: {context.message.name!r}")
        return await call_next(context)


def build() -> FastMCP:
    server = FastMCP("era-server")

    def ran(ctx: Context) -> str:
        request = ctx.request_context
        return f"ran in {request.protocol_version if request is not None else '?'}"

    @server.tool(description="Answers in every era")
    def either_era(ctx: Context) -> str:
        return ran(ctx)

    @server.tool(description="Listed to 2026-07-28 clients only")
    def new_era_only(ctx: Context) -> str:
        return ran(ctx)

    @server.tool(description="Listed to handshake-era clients only")
    def handshake_only(ctx: Context) -> str:
        return ran(ctx)

    @server.tool(description="Asks for a name first (multi-round-trip), then greets it")
    def asks_name(ctx: Context) -> Any:
        answer = (ctx.input_responses or {}).get("who")
        if not isinstance(answer, mt.ElicitResult) or ctx.request_state != "asked-once":
            schema = {"type": "object", "properties": {"name": {"type": "string"}}}
            ask = mt.ElicitRequest(
                params=mt.ElicitRequestFormParams(message="Who?", requested_schema=schema)
            )
            return mt.InputRequiredResult(input_requests={"who": ask}, request_state="asked-once")
        return f"Hello, {(answer.content or {}).get('name')} ({ctx.request_state})"

    server.add_middleware(ByEra())
    return server


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"era server: http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    app = build().http_app(path="/mcp")
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
