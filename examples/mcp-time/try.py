"""Talk to `maitred mcp` as an MCP client would: list the tools, call them, show the answers.

    python examples/mcp-time/try.py            # as acc-free: convert_time is hidden
    python examples/mcp-time/try.py acc-pro    # as acc-pro: both tools

The gateway is launched over stdio exactly as a desktop client launches an MCP server; it
launches `mcp-server-time` behind itself.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

HERE = Path(__file__).resolve().parent
CALLS = [
    ("get_current_time", {"timezone": "Europe/London"}),
    ("get_current_time", {"timezone": "somewhere warm"}),
    ("get_current_time", {"timezone": 42}),
    ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
]


async def main(account: str) -> None:
    env = {"PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    gateway = StdioTransport(
        sys.executable,
        ["-m", "maitred.cli.main", "mcp", "--config", str(HERE / "gateway.yaml"),
         "--account", account],
        env=env,
    )  # fmt: skip
    async with Client(gateway) as client:
        tools = await client.list_tools()
        print(f"{account} sees: {', '.join(t.name for t in tools)}")
        for name, args in CALLS:
            result = await client.call_tool(name, args, raise_on_error=False)
            text = result.content[0].text if result.content else ""
            if result.is_error:
                payload = json.loads(text)
                print(f"  {name}({args}) -> {payload['message']}")
            else:
                print(f"  {name}({args}) -> {' '.join(text.split())}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "acc-free"))
