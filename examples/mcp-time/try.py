"""Talk to `maitred mcp` as an MCP client would: list the tools, call them, show the answers.

    python examples/mcp-time/try.py            # over stdio, as acc-free: convert_time is hidden
    python examples/mcp-time/try.py acc-pro    # over stdio, as acc-pro: both tools
    python examples/mcp-time/try.py --http     # over streamable HTTP with acc-free's token,
                                               # tools disclosed through find_tools

Over stdio the gateway is launched exactly as a desktop client launches an MCP server (the
account is part of the launch); over HTTP it is started as a service on a free loopback port
and the account comes from the bearer token. Either way it launches `mcp-server-time` behind
itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

HERE = Path(__file__).resolve().parent
CALLS = [
    ("get_current_time", {"timezone": "Europe/London"}),
    ("get_current_time", {"timezone": "somewhere warm"}),
    ("get_current_time", {"timezone": 42}),
    ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
]
TOKENS = {"acc-free": "demo-free-token", "acc-pro": "demo-pro-token"}  # gateway-http.yaml
NEED = "what time is it now, and convert 12:00 UTC to Tokyo time"


def environment() -> dict[str, str]:
    env = {"PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def show(name: str, args: dict[str, Any], result: Any) -> None:
    text = result.content[0].text if result.content else ""
    if result.is_error:
        print(f"  {name}({args}) -> {json.loads(text)['message']}")
    else:
        print(f"  {name}({args}) -> {' '.join(text.split())}")


async def over_stdio(account: str) -> None:
    gateway = StdioTransport(
        sys.executable,
        ["-m", "maitred.cli.main", "mcp", "--config", str(HERE / "gateway.yaml"),
         "--account", account],
        env=environment(),
    )  # fmt: skip
    async with Client(gateway) as client:
        tools = await client.list_tools()
        print(f"{account} sees: {', '.join(t.name for t in tools)}")
        for name, args in CALLS:
            show(name, args, await client.call_tool(name, args, raise_on_error=False))


async def over_http(account: str) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "maitred.cli.main", "mcp", "--config",
         str(HERE / "gateway-http.yaml"), "--port", "0"],
        env={**os.environ, **environment()},
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert server.stderr is not None
        url = ""
        for line in server.stderr:  # the gateway says where it listens once it is ready
            found = re.search(r"serving (http://\S+)", line)
            if found:
                url = found.group(1)
                break
        if not url:
            raise SystemExit(f"the gateway did not start (exit code {server.wait()})")
        changed: list[str] = []

        async def on_message(message: Any) -> None:
            if type(message).__name__ == "ToolListChangedNotification":
                changed.append("tools/list_changed")

        async with Client(url, auth=TOKENS[account], message_handler=on_message) as client:
            tools = await client.list_tools()
            print(f"{account} (bearer token) at {url} sees: {', '.join(t.name for t in tools)}")
            found = (await client.call_tool("find_tools", {"need": NEED})).structured_content
            assert found is not None
            print(f"  find_tools({NEED!r})")
            for tool in found["tools"]:
                print(f"    found   {tool['name']}: {tool['description'].splitlines()[0]}")
            for tool in found["blocked"]:
                print(f"    blocked {tool['name']}: {'; '.join(tool['why'])}")
            print(f"  notifications: {', '.join(changed) or 'none'}")
            tools = await client.list_tools()
            print(f"  now sees: {', '.join(t.name for t in tools)}")
            for name, args in CALLS[::3]:
                show(name, args, await client.call_tool(name, args, raise_on_error=False))
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("account", nargs="?", default="acc-free", choices=sorted(TOKENS))
    parser.add_argument("--http", action="store_true", help="serve and connect over HTTP")
    opts = parser.parse_args()
    asyncio.run(over_http(opts.account) if opts.http else over_stdio(opts.account))
