"""A generated upstream MCP server for ``benchmarks/gateway.py``: ``--tools N`` small tools.

Tool ``tool_0000`` .. ``tool_<N-1>`` each take one integer and answer a short text at once, so
what a benchmark measures around them is the MCP path (client, proxy or gateway, this server),
not the tools' work. :func:`sidecar` writes the contracts the gateway reads for these tools:
every tool carries an exit predicate, and every fifth one is hidden for a free account.

    python benchmarks/_mcp_upstream.py --tools 1000      # serves MCP over stdio
    python benchmarks/_mcp_upstream.py --http 0          # over streamable HTTP (a free port)
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections.abc import Callable
from typing import Any

import anyio
from fastmcp import FastMCP
from fastmcp.tools import Tool

#: every ``HIDDEN_EVERY``-th tool (``i % HIDDEN_EVERY == HIDDEN_EVERY - 1``) is paid-plan only
HIDDEN_EVERY = 5


def tool_name(i: int) -> str:
    return f"tool_{i:04d}"


def hidden(i: int) -> bool:
    """Is tool ``i`` hidden for an account on the free plan?"""
    return i % HIDDEN_EVERY == HIDDEN_EVERY - 1


def _tool(i: int) -> Callable[[int], str]:
    def run(n: int) -> str:
        return f"{tool_name(i)}({n}) done"

    run.__doc__ = f"Run step {i} of the benchmark workflow on item n (group {i % 17})."
    return run


def server(tools: int) -> FastMCP[Any]:
    """A FastMCP server with ``tools`` generated tools."""
    found: FastMCP[Any] = FastMCP(f"bench-upstream-{tools}")
    for i in range(tools):
        found.add_tool(Tool.from_function(_tool(i), name=tool_name(i)))
    return found


def sidecar(tools: int) -> str:
    """The ``*.maitred.yaml`` contracts for ``tools`` generated tools (YAML text).

    Every tool is hidden while the account is suspended; every fifth one also on the free
    plan; every tool's call is refused for a negative ``n`` (a call policy), so a listing
    evaluates one or two predicates per tool and a call one predicate and one policy.
    """
    lines = ["tools:"]
    for i in range(tools):
        lines += [
            f"  {tool_name(i)}:",
            "    exit_predicates:",
            "      - name: suspended",
            '        expr: account.status == "suspended"',
            "        reads: [account.status]",
        ]
        if hidden(i):
            lines += [
                "      - name: free_plan",
                '        expr: account.plan == "free"',
                "        reads: [account.plan]",
            ]
        lines += [
            "    policies:",
            "      - name: negative_item",
            "        expr: args.n < 0",
            "        code: BENCH_NEGATIVE_ITEM",
            "        reads: [args.n]",
            "        fields: [n]",
            "        message: Items are numbered from 0",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=10)
    parser.add_argument(
        "--http",
        type=int,
        metavar="PORT",
        help="serve streamable HTTP on 127.0.0.1 (0: a free port) instead of stdio, printing "
        "'serving URL' on stderr once bound (gateway_ab.py --direct: the floor)",
    )
    args = parser.parse_args()
    if args.http is None:
        server(args.tools).run(show_banner=False)
        return
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP_NODELAY
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.http))
    sock.listen(128)
    print(f"serving http://127.0.0.1:{sock.getsockname()[1]}/mcp", file=sys.stderr, flush=True)
    anyio.run(
        lambda: server(args.tools).run_http_async(
            show_banner=False, host="127.0.0.1", log_level="warning", sockets=[sock]
        )
    )


if __name__ == "__main__":
    main()
