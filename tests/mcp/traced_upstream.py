"""An MCP server that records the trace context of every call it receives (run as a subprocess).

One JSON line per call goes to ``$CALLS_FILE``: the tool and the ``traceparent`` of the
request's ``_meta`` (``null`` when none came), so a test can tell under which span the gateway
forwarded the call. ``export_report`` is the tool the tests' contract hides on the free plan;
``broken`` answers with a tool error; ``die`` kills the process mid-call.
"""

from __future__ import annotations

import json
import os
from typing import Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.dependencies import get_context

server: FastMCP[Any] = FastMCP("traced-upstream")


def _record(name: str) -> None:
    request = get_context().request_context
    meta = (request.meta if request is not None else None) or {}
    with open(os.environ["CALLS_FILE"], "a", encoding="utf-8") as out:
        out.write(json.dumps({"name": name, "traceparent": meta.get("traceparent")}) + "\n")


@server.tool
def lookup(city: str) -> str:
    """Say what time it is in a city."""
    _record("lookup")
    return f"noon in {city}"


@server.tool
def export_report(year: int) -> str:
    """Export the yearly report (a paid feature)."""
    _record("export_report")
    return f"report {year}"


@server.tool
def broken() -> str:
    """Fail as a tool (an isError result, the server stays up)."""
    _record("broken")
    raise ToolError("the report store is read-only today")


@server.tool
def die() -> str:
    """Die without answering."""
    _record("die")
    os._exit(3)


if __name__ == "__main__":
    server.run(show_banner=False)
