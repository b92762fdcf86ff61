"""Talk to `maitred mcp` as an MCP client would: list the tools, call them, show the answers.

    python examples/mcp-time/try.py            # over stdio, as acc-free: convert_time is hidden
                                               # until the account moves to the pro plan
    python examples/mcp-time/try.py acc-pro    # over stdio, as acc-pro: both tools, until the
                                               # account moves to the free plan
    python examples/mcp-time/try.py --http     # over streamable HTTP with acc-free's token,
                                               # tools disclosed in find_tools' answers

Over stdio the gateway is launched exactly as a desktop client launches an MCP server (the
account is part of the launch); over HTTP it is started as a service on a free loopback port
and the account comes from the bearer token. Either way it launches `mcp-server-time` behind
itself.

Over stdio the script then changes the account's plan the way a billing system would, behind
the gateway's back, in a temporary copy of `accounts.json` (the committed file is never
touched): the gateway's state watch (`watch:` in gateway.yaml) notices, re-lists, and sends
`notifications/tools/list_changed`; the script lists again and calls `convert_time` once more.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
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
WAIT_S = 15.0  # how long to wait for the watch's notification (it checks every second)


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


def scratch_copy(folder: Path) -> Path:
    """gateway.yaml, its contracts and accounts.json copied into ``folder`` (the copy of
    accounts.json is the one the script edits); the log stays examples/mcp-time/gateway.sqlite."""
    for name in ("time.maitred.yaml", "accounts.json"):
        shutil.copy(HERE / name, folder / name)
    config = yaml.safe_load((HERE / "gateway.yaml").read_text(encoding="utf-8"))
    config["log"] = str(HERE / "gateway.sqlite")
    (folder / "gateway.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return folder / "gateway.yaml"


def change_plan(accounts: Path, account: str) -> str:
    """Move ``account`` to the other plan, as a billing system would (a new file, atomically)."""
    data = json.loads(accounts.read_text(encoding="utf-8"))
    plan = "free" if data[account]["account"]["plan"] != "free" else "pro"
    data[account]["account"]["plan"] = plan
    fresh = accounts.with_suffix(".new")
    fresh.write_text(json.dumps(data, indent=2), encoding="utf-8")
    fresh.replace(accounts)
    return plan


async def over_stdio(account: str) -> None:
    with tempfile.TemporaryDirectory(prefix="maitred-mcp-time-") as folder:
        config = scratch_copy(Path(folder))
        gateway = StdioTransport(
            sys.executable,
            ["-m", "maitred.cli.main", "mcp", "--config", str(config), "--account", account],
            env=environment(),
        )
        changed: list[float] = []

        async def on_message(message: Any) -> None:
            if type(message).__name__ == "ToolListChangedNotification":
                changed.append(time.monotonic())

        # mode="legacy": a handshake-era session (as desktop clients open), whose pipe can carry
        # a notification the server sends on its own; a 2026-07-28 connection is told only on a
        # subscriptions/listen stream, which fastmcp.Client does not open
        async with Client(gateway, message_handler=on_message, mode="legacy") as client:
            tools = await client.list_tools()
            print(f"{account} sees: {', '.join(t.name for t in tools)}")
            for name, args in CALLS:
                show(name, args, await client.call_tool(name, args, raise_on_error=False))
            plan = change_plan(config.with_name("accounts.json"), account)
            print(f"billing moves {account} to the {plan} plan (in {folder}/accounts.json)")
            start = time.monotonic()
            while not changed and time.monotonic() - start < WAIT_S:
                await asyncio.sleep(0.05)
            if changed:
                print(f"  notifications: tools/list_changed ({changed[0] - start:.1f}s later)")
            else:
                print(f"  notifications: none within {WAIT_S:g}s")
            tools = await client.list_tools()
            print(f"  now sees: {', '.join(t.name for t in tools)}")
            name, args = CALLS[-1]
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
                params = ", ".join(tool["inputSchema"].get("properties", {}))
                print(
                    f"    found   {tool['name']}({params}): {tool['description'].splitlines()[0]}"
                )
            for tool in found["blocked"]:
                print(f"    blocked {tool['name']}: {'; '.join(tool['why'])}")
            print(f"  notifications: {', '.join(changed) or 'none'}")
            tools = await client.list_tools()
            print(
                f"  still sees: {', '.join(t.name for t in tools)} (found tools run through "
                "call_tool)"
            )
            for name, args in CALLS[::3]:
                wrapped = {"name": name, "arguments": args}
                result = await client.call_tool("call_tool", wrapped, raise_on_error=False)
                show(f"call_tool -> {name}", args, result)
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("account", nargs="?", default="acc-free", choices=sorted(TOKENS))
    parser.add_argument("--http", action="store_true", help="serve and connect over HTTP")
    opts = parser.parse_args()
    asyncio.run(over_http(opts.account) if opts.http else over_stdio(opts.account))
