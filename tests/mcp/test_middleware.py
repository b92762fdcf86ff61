"""The middleware alone (no processes): what happens when the gate itself cannot answer."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as mt
from fastmcp.server.middleware import MiddlewareContext
from fastmcp.tools import ToolResult

from maitred.errors import LogError
from maitred.gateway.server import GateMiddleware


class _BrokenLogKeeper:
    """A gatekeeper whose decision log refuses the write."""

    upstream = "shop"

    def check(self, name: str, arguments: Any) -> Any:
        raise LogError("database is locked")


def test_a_call_the_gate_cannot_log_never_reaches_the_upstream() -> None:
    reached: list[str] = []

    async def upstream(context: MiddlewareContext[mt.CallToolRequestParams]) -> ToolResult:
        reached.append(context.message.name)
        return ToolResult(content="ran")

    async def main() -> ToolResult:
        middleware = GateMiddleware(_BrokenLogKeeper())  # type: ignore[arg-type]
        call = mt.CallToolRequestParams(name="upgrade", arguments={"plan": "pro"})
        return await middleware.on_call_tool(MiddlewareContext(message=call), upstream)

    result = anyio.run(main)
    assert result.is_error and reached == []
    payload = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert payload["code"] == "GATE_UNAVAILABLE" and "database is locked" in payload["message"]
