"""An MCP server with resources, a resource template and prompts, for the surface-gating tests.

Run as a subprocess over stdio (``python library_server.py``), or over streamable HTTP on
loopback (``python library_server.py --http PORT``, 0: a free port; it prints ``PORT=<n>`` once
bound). Like ``upstream_server.py`` it writes one JSON line per request it serves to
``$CALLS_FILE`` (``{"name": ..., "arguments": ...}``: a tool's name, ``read <uri>`` or
``prompt <name>``), so a test can prove that a refused read or get never reached it.
``upgrade`` rewrites the accounts file ``$ACCOUNTS`` (a state change the gateway must notice).

What it serves:

* resources ``docs://handbook`` (public), ``docs://pricing`` (internal pricing: gated by the
  tests' sidecar), ``docs://roadmap`` (no contract in the tests: "ungated");
* the template ``reports://{year}`` (a yearly report: gated);
* prompts ``summarize`` (public) and ``negotiate`` (gated) and ``brainstorm`` (ungated).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
from fastmcp import FastMCP

server: FastMCP[Any] = FastMCP("library")


def _record(name: str, arguments: dict[str, Any]) -> None:
    with open(os.environ["CALLS_FILE"], "a", encoding="utf-8") as out:
        out.write(json.dumps({"name": name, "arguments": arguments}) + "\n")


@server.tool
def upgrade(plan: str) -> str:
    """Move the signed-in account (acc-1) to another plan."""
    _record("upgrade", {"plan": plan})
    path = Path(os.environ["ACCOUNTS"])
    data = json.loads(path.read_text(encoding="utf-8"))
    data["acc-1"]["account"]["plan"] = plan
    fresh = path.with_suffix(".tmp")
    fresh.write_text(json.dumps(data), encoding="utf-8")
    os.replace(fresh, path)
    return f"acc-1 is on {plan}"


@server.resource("docs://handbook", description="The employee handbook.")
def handbook() -> str:
    _record("read docs://handbook", {})
    return "Be kind."


@server.resource("docs://pricing", description="Internal price lists.")
def pricing() -> str:
    _record("read docs://pricing", {})
    return "Enterprise: 90% margin."


@server.resource("docs://roadmap", description="What ships next.")
def roadmap() -> str:
    _record("read docs://roadmap", {})
    return "Q3: gating."


@server.resource("reports://{year}", description="The yearly report.")
def report(year: str) -> str:
    _record(f"read reports://{year}", {})
    return f"report {year}"


@server.prompt(description="Summarise a text.")
def summarize(text: str) -> str:
    _record("prompt summarize", {"text": text})
    return f"Summarise this: {text}"


@server.prompt(description="Negotiate a discount with a customer.")
def negotiate(customer: str) -> str:
    _record("prompt negotiate", {"customer": customer})
    return f"Our floor price for {customer} is 40% off."


@server.prompt(description="Brainstorm ideas.")
def brainstorm(topic: str) -> str:
    _record("prompt brainstorm", {"topic": topic})
    return f"Ideas about {topic}"


async def serve_http(port: int) -> None:
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY on accepted connections only then (else
    # Nagle holds each response back ~40 ms for the client's delayed ACK)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    print(f"PORT={sock.getsockname()[1]}", flush=True)
    await server.run_http_async(
        show_banner=False, host="127.0.0.1", port=port, log_level="warning", sockets=[sock]
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        anyio.run(serve_http, int(sys.argv[2]))
    else:
        server.run(show_banner=False)
