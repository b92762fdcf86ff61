"""The MCP side of the gateway: a FastMCP proxy with maitred's gates as its middleware.

:func:`open_gateway` starts the upstream over stdio, reads its ``tools/list`` once, builds the
:class:`~maitred.gateway.keeper.Gatekeeper` over it (a broken sidecar fails here, before any
client is served), and returns a FastMCP proxy server whose :class:`GateMiddleware` stands
between the client and the upstream:

* ``tools/list``: the upstream's list, filtered to what the gatekeeper finds visible for the
  account now (a logged turn).
* ``tools/call``: the gatekeeper checks the call first (logged and flushed); a rejected call
  never reaches the upstream and the client gets an ``isError`` result whose text is
  ``decision.tool_result()`` as JSON (code, message for the model, offending fields); a call
  the gatekeeper could not decide or log is refused too (``GATE_UNAVAILABLE``). An
  allowed call goes to the upstream; if that fails (the server crashed, the pipe broke), the
  client gets an ``isError`` result naming the upstream and the gateway stays up. After an
  allowed mutating call succeeded, a changed visible set is announced with
  ``notifications/tools/list_changed``.

The engine is synchronous (SQLite, file and SQL state); its calls run on a worker thread under
one lock, as in the HTTP service, so the event loop never blocks on the log or the state store.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import anyio
import mcp_types as mt  # the MCP wire types (`mcp.types` re-exports them)
from fastmcp import FastMCP
from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools import Tool, ToolResult

from maitred.errors import ConfigError, MaitredError
from maitred.gateway.config import GatewayConfig, Upstream
from maitred.gateway.keeper import Gatekeeper

T = TypeVar("T")


def _text_result(payload: dict[str, Any]) -> ToolResult:
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True)
    return ToolResult(content=[mt.TextContent(type="text", text=text)], is_error=True)


class GateMiddleware(Middleware):
    """Filters ``tools/list`` and gates ``tools/call`` through one :class:`Gatekeeper`."""

    def __init__(self, keeper: Gatekeeper) -> None:
        self.keeper = keeper
        self._lock = threading.Lock()

    async def _engine(self, fn: Callable[[], T]) -> T:
        def locked() -> T:
            with self._lock:
                return fn()

        return await anyio.to_thread.run_sync(locked)

    async def on_list_tools(
        self,
        context: MiddlewareContext[mt.ListToolsRequest],
        call_next: CallNext[mt.ListToolsRequest, Sequence[Tool]],
    ) -> Sequence[Tool]:
        tools = await call_next(context)
        visible = set(await self._engine(self.keeper.visible))
        return [t for t in tools if t.name in visible]

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        name, args = context.message.name, dict(context.message.arguments or {})
        try:
            decision = await self._engine(lambda: self.keeper.check(name, args))
        except MaitredError as exc:  # not decided, or not durable: the call must not run
            return _text_result(
                {
                    "error": "gate_unavailable",
                    "code": "GATE_UNAVAILABLE",
                    "message": f"the gateway could not decide or record this call "
                    f"({type(exc).__name__}: {exc}); it was not executed. Try again later",
                    "executed": False,
                }
            )
        if not decision.allow:
            return _text_result(decision.tool_result())
        try:
            result = await call_next(context)
        except Exception as exc:  # the upstream failed; the gateway must answer and stay up
            return _text_result(
                {
                    "error": "upstream_failed",
                    "code": "UPSTREAM_FAILED",
                    "message": f"the upstream MCP server {self.keeper.upstream!r} failed on "
                    f"{name}: {type(exc).__name__}: {exc}. The call may not have run; try "
                    "again later",
                    "upstream": self.keeper.upstream,
                }
            )
        if result.is_error:
            return result
        output = result.structured_content  # an object, so `records: {creates: ...}` can read it
        changed = await self._engine(lambda: self.keeper.after_call(name, args, output))
        if changed and context.fastmcp_context is not None:
            await context.fastmcp_context.send_notification(mt.ToolListChangedNotification())
        return result


def transport_for(upstream: Upstream) -> StdioTransport:
    """The stdio transport that launches ``upstream`` (kept alive between connections)."""
    return StdioTransport(
        upstream.command, list(upstream.args), env=dict(upstream.env) or None, keep_alive=True
    )


async def upstream_tools(proxy: FastMCP[Any], upstream: Upstream) -> list[dict[str, Any]]:
    """The upstream's ``tools/list`` through ``proxy`` (before any gate), as MCP JSON objects.

    Asking through the proxy starts the upstream process the proxy keeps using, so the gateway
    launches it once.

    Raises:
        ConfigError: the upstream could not be started or did not answer (naming it).
    """
    try:
        tools = await proxy.list_tools(run_middleware=False)
    except Exception as exc:
        raise ConfigError(
            f"upstream {upstream.name!r}: could not start `{upstream.command}` and list its "
            f"tools ({type(exc).__name__}: {exc}); check its command and args in the config"
        ) from None
    return [
        t.to_mcp_tool().model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools
    ]


async def open_gateway(config: GatewayConfig) -> tuple[FastMCP[Any], Gatekeeper]:
    """The gateway server for ``config`` and its gatekeeper (close it when done)."""
    proxy = create_proxy(
        transport_for(config.upstream), mode="auto", name=f"maitred-{config.upstream.name}"
    )
    tools = await upstream_tools(proxy, config.upstream)
    keeper = await anyio.to_thread.run_sync(lambda: Gatekeeper.open(config, tools))
    proxy.add_middleware(GateMiddleware(keeper))
    return proxy, keeper


async def serve_stdio(config: GatewayConfig) -> None:
    """Serve the gateway over stdio until the client disconnects."""
    proxy, keeper = await open_gateway(config)
    try:
        await proxy.run_async(transport="stdio", show_banner=False)
    finally:
        keeper.close()
