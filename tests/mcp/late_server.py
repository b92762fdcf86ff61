"""An MCP server over stdio that is not ready at first, and lists a new tool when asked.

``python late_server.py`` exits at once (status 3, before speaking MCP) while the file
``$READY_FILE`` does not exist -- a server whose dependency is not up yet, as a gateway sees one
it launches; once the file exists it serves. ``open_annex`` makes it list one more tool,
``read_annex``, from then on (an upstream that adds a tool while a gateway runs). Like
``upstream_server.py`` it writes one JSON line per call to ``$CALLS_FILE``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from fastmcp import FastMCP
from fastmcp.tools import Tool

server: FastMCP[Any] = FastMCP("shelf")


def _record(name: str, arguments: dict[str, Any]) -> None:
    with open(os.environ["CALLS_FILE"], "a", encoding="utf-8") as out:
        out.write(json.dumps({"name": name, "arguments": arguments}) + "\n")


@server.tool
def read_shelf(shelf: str) -> str:
    """Say which books are on a shelf."""
    _record("read_shelf", {"shelf": shelf})
    return f"shelf {shelf}: three books"


def read_annex(room: str) -> str:
    """Say what is stored in a room of the annex."""
    _record("read_annex", {"room": room})
    return f"annex {room}: maps"


@server.tool
def open_annex() -> str:
    """Open the annex: its tool is listed from now on."""
    _record("open_annex", {})
    server.add_tool(Tool.from_function(read_annex))
    return "the annex is open"


if __name__ == "__main__":
    ready = os.environ.get("READY_FILE", "")
    if ready and not Path(ready).exists():
        print("not ready: the shelf's database is not up", file=sys.stderr)
        sys.exit(3)
    server.run(show_banner=False)
