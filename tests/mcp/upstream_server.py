"""A small MCP server the gateway tests put behind the gateway (run as a subprocess).

It writes one JSON line per call it receives to ``$CALLS_FILE``, so a test can prove that a
rejected call never reached it. ``upgrade`` rewrites the accounts file ``$ACCOUNTS`` (a state
change the gateway must notice); ``crash`` kills the process mid-call. ``get_plan`` first
waits ``$GET_PLAN_DELAY_S`` seconds (default 0): an upstream slower than its ``timeout_s``;
with ``$GET_PLAN_UNTIL`` set it also waits until that file exists (a call a test holds in
flight for as long as it needs).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
from fastmcp import FastMCP

server: FastMCP[Any] = FastMCP("recording-upstream")


def _record(name: str, arguments: dict[str, Any]) -> None:
    with open(os.environ["CALLS_FILE"], "a", encoding="utf-8") as out:
        out.write(json.dumps({"name": name, "arguments": arguments}) + "\n")


@server.tool
async def get_plan(account: str) -> str:
    """Say which plan an account is on."""
    _record("get_plan", {"account": account})
    await anyio.sleep(float(os.environ.get("GET_PLAN_DELAY_S", "0")))
    until = os.environ.get("GET_PLAN_UNTIL")
    while until and not Path(until).exists():
        await anyio.sleep(0.05)
    data = json.loads(Path(os.environ["ACCOUNTS"]).read_text(encoding="utf-8"))
    return str(data[account]["account"]["plan"])


@server.tool
def export_report(year: int) -> str:
    """Export the yearly report (a paid feature)."""
    _record("export_report", {"year": year})
    return f"report {year}"


@server.tool
def upgrade(account: str, plan: str) -> str:
    """Move an account to another plan."""
    _record("upgrade", {"account": account, "plan": plan})
    path = Path(os.environ["ACCOUNTS"])
    data = json.loads(path.read_text(encoding="utf-8"))
    data[account]["account"]["plan"] = plan
    fresh = path.with_suffix(".tmp")
    fresh.write_text(json.dumps(data), encoding="utf-8")
    os.replace(fresh, path)
    return f"{account} is on {plan}"


@server.tool
def crash() -> str:
    """Die without answering."""
    _record("crash", {})
    os._exit(3)


if __name__ == "__main__":
    server.run(show_banner=False)
