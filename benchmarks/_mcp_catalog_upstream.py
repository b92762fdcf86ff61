"""An upstream MCP server for ``benchmarks/gateway_find.py``: one server's tools of a tools file.

``--tools FILE --server NAME`` serves every tool of ``FILE`` (one JSON object a line, as
``maitred.skills.tools`` reads it) whose ``server`` is ``NAME`` (every tool when ``NAME`` is
``*``), with its name, description and input schema; a call answers a short text at once, so
what the benchmark measures is the gateway's finding, not the tools' work.

    python benchmarks/_mcp_catalog_upstream.py --tools tools.jsonl --server Weather   # stdio
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from fastmcp import FastMCP
from fastmcp.tools import Tool
from fastmcp.tools.base import ToolResult
from mcp.types import TextContent


class CatalogTool(Tool):
    """A tool known only by its definition: calling it answers ``"<name> done"``."""

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(content=[TextContent(type="text", text=f"{self.name} done")])


def _schema(row: dict[str, Any]) -> dict[str, Any]:
    params = row.get("parameters")
    if isinstance(params, dict) and params.get("type") == "object":
        return params
    return {"type": "object", "properties": {}}


def server(tools: Path, name: str) -> FastMCP[Any]:
    """A FastMCP server with the tools of ``tools`` whose server is ``name``."""
    found: FastMCP[Any] = FastMCP(f"catalog-{name}")
    for line in tools.read_text("utf-8").splitlines():
        row = json.loads(line)
        if name != "*" and row.get("server") != name:
            continue
        found.add_tool(
            CatalogTool(
                name=row["name"],
                description=row.get("description", ""),
                parameters=_schema(row),
            )
        )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=Path, required=True)
    parser.add_argument("--server", default="*")
    args = parser.parse_args()
    server(args.tools, args.server).run(show_banner=False)


if __name__ == "__main__":
    main()
