"""An MCP server of 1,000 tools, for the ``call_tool`` agent tests (run as a subprocess).

Every tool is a verb on a thing of a workspace (``create_invoice``, ``archive_project``...):
25 verbs times 40 things, each with its own description and input schema (``create_*`` take
a ``name``, the others an ``id``). A call writes one JSON line to ``$CALLS_FILE`` and answers
``"<tool> done: <arguments as JSON>"``, so a test sees what reached it and what came back.
"""

from __future__ import annotations

import json
import os
from typing import Any

from fastmcp import FastMCP
from fastmcp.tools import Tool
from fastmcp.tools.base import ToolResult
from mcp.types import TextContent

# fmt: off
VERBS = (
    "create", "delete", "list", "get", "update", "archive", "restore", "export", "import", "share",
    "rename", "copy", "move", "lock", "unlock", "approve", "reject", "schedule", "cancel",
    "assign", "tag", "merge", "split", "validate", "sync",
)
THINGS = (
    "invoice", "customer", "order", "ticket", "user", "project", "report", "document", "folder",
    "meeting", "contact", "lead", "campaign", "product", "shipment", "payment", "refund",
    "subscription", "coupon", "warehouse", "supplier", "contract", "employee", "timesheet",
    "expense", "budget", "asset", "license", "device", "backup", "webhook", "token", "team",
    "role", "comment", "note", "task", "milestone", "release", "dashboard",
)
# fmt: on


def tools() -> list[dict[str, Any]]:
    """The 1,000 tools' definitions (name, description, input schema), verbs outermost."""
    found = []
    for verb in VERBS:
        for thing in THINGS:
            key = "name" if verb == "create" else "id"
            schema = {
                "type": "object",
                "properties": {key: {"type": "string", "description": f"the {thing}'s {key}"}},
                "required": [key],
            }
            found.append(
                {
                    "name": f"{verb}_{thing}",
                    "description": f"{verb.capitalize()} a {thing} of the workspace.",
                    "inputSchema": schema,
                }
            )
    return found


class CatalogTool(Tool):
    """A tool known by its definition: a call is recorded and answered at once."""

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        with open(os.environ["CALLS_FILE"], "a", encoding="utf-8") as out:
            out.write(json.dumps({"name": self.name, "arguments": arguments}) + "\n")
        text = f"{self.name} done: {json.dumps(arguments, sort_keys=True)}"
        return ToolResult(content=[TextContent(type="text", text=text)])


server: FastMCP[Any] = FastMCP("workspace")
for definition in tools():
    server.add_tool(
        CatalogTool(
            name=definition["name"],
            description=definition["description"],
            parameters=definition["inputSchema"],
        )
    )

if __name__ == "__main__":
    server.run(show_banner=False)
