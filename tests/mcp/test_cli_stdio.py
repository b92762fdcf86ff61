"""`maitred mcp` as a client launches it: a subprocess over stdio, in front of mcp-server-time.

This is the example of ``examples/mcp-time`` (its contracts and accounts), with the log in a
temporary folder. It proves that the command serves MCP on stdout (nothing else may be printed
there) and that a third-party server's tools are gated by a sidecar written for them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp-time"
SRC = Path(__file__).resolve().parents[2] / "src"
BIN = Path(sys.executable).parent


@pytest.fixture
def example(tmp_path: Path) -> Path:
    if (
        shutil.which("mcp-server-time", path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
        is None
    ):
        pytest.skip("mcp-server-time is not installed (pip install mcp-server-time)")
    for name in ("gateway.yaml", "time.maitred.yaml", "accounts.json"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    return tmp_path / "gateway.yaml"


def _gateway(config: Path, *extra: str) -> StdioTransport:
    env = {"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONPATH": str(SRC)}
    args = ["-m", "maitred.cli.main", "mcp", "--config", str(config), *extra]
    return StdioTransport(sys.executable, args, env=env, keep_alive=False)


def test_the_example_gates_mcp_server_time_over_stdio(example: Path) -> None:
    got: dict[str, Any] = {}

    async def main() -> None:
        async with Client(_gateway(example)) as client:
            got["tools"] = [t.name for t in await client.list_tools()]
            now = await client.call_tool("get_current_time", {"timezone": "Europe/London"})
            got["now"] = json.loads(now.content[0].text)
            for name, args in [
                ("convert_time", {"source_timezone": "UTC", "time": "12:00",
                                  "target_timezone": "Asia/Tokyo"}),
                ("get_current_time", {"timezone": "somewhere warm"}),
            ]:  # fmt: skip
                result = await client.call_tool(name, args, raise_on_error=False)
                assert result.is_error
                got[name] = json.loads(result.content[0].text)["code"]

    anyio.run(main)
    assert got["tools"] == ["get_current_time"]  # acc-free: convert_time is hidden
    assert got["now"]["timezone"] == "Europe/London"  # reached the real upstream
    assert got["convert_time"] == "TOOL_NOT_OFFERED"
    assert got["get_current_time"] == "TIME_UNKNOWN_TIMEZONE"
    assert (example.parent / "gateway.sqlite").is_file()


def test_a_bad_config_fails_before_serving_with_file_and_field(tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text("state: accounts.json\nupstreams: []\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert str(config) in done.stderr and "'account'" in done.stderr


def test_the_official_mcp_sdk_client_sees_the_same_gateway(example: Path) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    got: dict[str, Any] = {}
    transport = _gateway(example, "--account", "acc-pro")
    params = StdioServerParameters(
        command=transport.command, args=transport.args, env=transport.env
    )

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            got["tools"] = [t.name for t in (await session.list_tools()).tools]
            bad = await session.call_tool("convert_time", {"time": 12})
            got["bad"] = (bad.is_error, json.loads(bad.content[0].text)["code"])

    anyio.run(main)
    assert got["tools"] == ["get_current_time", "convert_time"]  # acc-pro, from the launch
    assert got["bad"] == (True, "ARGS_MISSING")
