"""The baseline for ``benchmarks/gateway.py``: a plain FastMCP proxy, no middleware, over stdio.

It fronts the same upstream command the gateway does, built the way the gateway builds its own
proxy (``fastmcp.server.create_proxy`` over a kept-alive stdio transport, ``mode="auto"``), so
the difference the benchmark measures is maitred's middleware and nothing else.

    python benchmarks/_mcp_proxy.py -- python benchmarks/_mcp_upstream.py --tools 10
"""

from __future__ import annotations

import sys

from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        sys.exit("usage: _mcp_proxy.py -- COMMAND [ARGS...]  (the upstream MCP server)")
    transport = StdioTransport(argv[0], argv[1:], keep_alive=True)
    create_proxy(transport, mode="auto", name="plain-proxy").run(
        transport="stdio", show_banner=False
    )


if __name__ == "__main__":
    main()
