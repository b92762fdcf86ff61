"""The baseline for ``benchmarks/gateway.py``: a plain FastMCP proxy, no middleware, over stdio.

It fronts the same upstream command the gateway does, built the way the gateway builds its own
proxy (``fastmcp.server.create_proxy`` over a kept-alive stdio transport, ``mode="auto"``), so
the difference the benchmark measures is maitred's middleware and nothing else.

    python benchmarks/_mcp_proxy.py -- python benchmarks/_mcp_upstream.py --tools 10
    python benchmarks/_mcp_proxy.py --http 0 -- python benchmarks/_mcp_upstream.py --tools 10

With ``--http PORT`` it serves streamable HTTP on 127.0.0.1 instead (0: a free port), without
auth, and prints ``serving http://127.0.0.1:N/mcp`` on stderr once the socket is bound; its
socket is made as the gateway makes its own (:func:`maitred.gateway.server.listening_socket`),
so both sides' connections have ``TCP_NODELAY``.
"""

from __future__ import annotations

import socket
import sys

import anyio
from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy


def main() -> None:
    argv = sys.argv[1:]
    port: int | None = None
    if argv[:1] == ["--http"]:
        port, argv = int(argv[1]), argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        sys.exit("usage: _mcp_proxy.py [--http PORT] -- COMMAND [ARGS...]  (the upstream)")
    transport = StdioTransport(argv[0], argv[1:], keep_alive=True)
    proxy = create_proxy(transport, mode="auto", name="plain-proxy")
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
