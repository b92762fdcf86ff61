"""The baseline for ``benchmarks/gateway.py``: a plain FastMCP proxy, no middleware, over stdio.

It fronts the same upstream commands the gateway does, built the way the gateway builds its own
proxy: one ``fastmcp.server.create_proxy`` provider per upstream, each over a kept-alive stdio
transport (``mode="auto"``), so the difference the benchmark measures is maitred's middleware
and nothing else. Each upstream is a command after a ``--``; with several, the first is
``create_proxy``'s own and each other one's provider joins it on the same server (tools keep
their upstream's names, unprefixed, as the gateway keeps them).

    python benchmarks/_mcp_proxy.py -- python benchmarks/_mcp_upstream.py --tools 10
    python benchmarks/_mcp_proxy.py --http 0 -- python benchmarks/_mcp_upstream.py --tools 10
    python benchmarks/_mcp_proxy.py --http 0 -- python benchmarks/_mcp_upstream.py --tools 10 \
        -- node .../server-filesystem/dist/index.js /tmp/dir

Not ``create_proxy`` over an ``MCPConfig`` of several servers: FastMCP 4 builds that composite
afresh for every proxied request (a new router, a new transport and so a new subprocess per
backend), and prefixes each tool with its server's name; neither is what a deployed gateway
does.

With ``--http PORT`` it serves streamable HTTP on 127.0.0.1 instead (0: a free port), without
auth, and prints ``serving http://127.0.0.1:N/mcp`` on stderr once the socket is bound; its
socket is made as the gateway makes its own (:func:`maitred.gateway.serve.listening_socket`),
so both sides' connections have ``TCP_NODELAY``.
"""

from __future__ import annotations

import socket
import sys

import anyio
from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy
from fastmcp.server.providers.proxy import FastMCPProxy, ProxyProvider


def upstreams(argv: list[str]) -> list[list[str]]:
    """The upstream commands in ``argv`` (each after a ``--``)."""
    found: list[list[str]] = []
    for arg in argv:
        if arg == "--":
            found.append([])
        elif found:
            found[-1].append(arg)
    return [command for command in found if command]


def proxy_of(commands: list[list[str]]) -> FastMCPProxy:
    """A plain proxy to every one of ``commands`` (stdio servers, kept alive)."""

    def proxied(command: list[str]) -> FastMCPProxy:
        transport = StdioTransport(command[0], command[1:], keep_alive=True)
        return create_proxy(transport, mode="auto", name="plain-proxy")

    first, *others = (proxied(command) for command in commands)
    for other in others:
        first.add_provider(ProxyProvider(other.client_factory))
    return first


def main() -> None:
    argv = sys.argv[1:]
    port: int | None = None
    if argv[:1] == ["--http"]:
        port, argv = int(argv[1]), argv[2:]
    commands = upstreams(argv)
    if not commands or argv[:1] != ["--"]:
        sys.exit("usage: _mcp_proxy.py [--http PORT] -- COMMAND [ARGS...] [-- COMMAND ...]")
    proxy = proxy_of(commands)
    if port is None:
        proxy.run(transport="stdio", show_banner=False)
        return
    # IPPROTO_TCP named, as the gateway's own socket is: asyncio turns on TCP_NODELAY for the
    # connections accepted on it only then (else each response waits ~40 ms on a delayed ACK)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    bound = sock.getsockname()[1]
    print(f"serving http://127.0.0.1:{bound}/mcp", file=sys.stderr, flush=True)
    anyio.run(
        lambda: proxy.run_http_async(
            show_banner=False, host="127.0.0.1", port=bound, log_level="warning", sockets=[sock]
        )
    )


if __name__ == "__main__":
    main()
