"""An MCP server (stdio) that serves Agent Skills over the skills extension, for the gateway's
tests of an upstream's skills: every skill folder under ``$SKILLS_DIR`` (FastMCP's own
``SkillsDirectoryProvider``: ``skills/list``, ``skills/get``, ``skill://`` files), and a ``ping``
tool. It writes one JSON line per resource it serves to ``$CALLS_FILE`` (``read <uri>``), so a
test can prove that a refused read never reached it.
"""

from __future__ import annotations

import json
import os
from typing import Any

from fastmcp import FastMCP
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.skills.provider import SkillsDirectoryProvider


class Reads(Middleware):
    async def on_read_resource(self, context: MiddlewareContext[Any], call_next: CallNext) -> Any:
        with open(os.environ["CALLS_FILE"], "a", encoding="utf-8") as out:
            out.write(json.dumps({"name": f"read {context.message.uri}"}) + "\n")
        return await call_next(context)


server: FastMCP[Any] = FastMCP("guides", middleware=[Reads()])
server.add_provider(SkillsDirectoryProvider(os.environ["SKILLS_DIR"]))


@server.tool
def ping() -> str:
    """Answer pong."""
    return "pong"


if __name__ == "__main__":
    server.run(show_banner=False)
