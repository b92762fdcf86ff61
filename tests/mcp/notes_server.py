"""A small MCP server served over streamable HTTP on loopback (run as a subprocess).

``python notes_server.py PORT`` listens on ``127.0.0.1:PORT`` (0: a free port) and prints
``PORT=<n>`` on stdout once it is bound. Like ``upstream_server.py`` it writes one JSON line
per call it receives to ``$CALLS_FILE``, so a test can prove that a rejected call never
reached it. Its notes live in memory: a restarted server starts empty.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any

import anyio
from fastmcp import FastMCP

server: FastMCP[Any] = FastMCP("notes")
NOTES: list[str] = []


def _record(name: str, arguments: dict[str, Any]) -> None:
    with open(os.environ["CALLS_FILE"], "a", encoding="utf-8") as out:
        out.write(json.dumps({"name": name, "arguments": arguments}) + "\n")


@server.tool
def add_note(text: str) -> dict[str, Any]:
    """Write down a note for later."""
    _record("add_note", {"text": text})
    NOTES.append(text)
    return {"id": len(NOTES), "text": text}


@server.tool
def list_notes() -> list[str]:
    """Read back every note written so far."""
    _record("list_notes", {})
    return list(NOTES)


@server.tool
def export_notes(fmt: str) -> str:
    """Export all notes as a PDF or markdown archive (a paid feature)."""
    _record("export_notes", {"fmt": fmt})
    return f"{len(NOTES)} notes as {fmt}"


async def main(port: int) -> None:
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
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 0)
