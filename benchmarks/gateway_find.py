"""``find_tools`` end to end through ``maitred mcp``: step-wise needs, ``+servers``, time per need.

What ``maitred eval routing`` measures in process, measured here the way an agent meets it: an
MCP client launches ``maitred mcp`` (``disclosure: find_tools``) in front of real MCP servers
(``benchmarks/_mcp_catalog_upstream.py``, one process per server, each serving that server's
tools from a tools file; the gateway names each tool's server after the upstream that lists
it) and calls ``find_tools`` with several needs at once (``needs``, at most 8 a call; a task of
more steps makes several calls).

Two parts:

* **quality** (``--steps-set DIR``, default ``bench-out/sets/mcp-bench-steps``, built by
  ``benchmarks/routing_sets.py --mcp-bench``): every step-wise task's steps asked as needs, 10
  tools a need (``find.top_k``); a task is complete when every gold tool was disclosed for one
  of its needs. A step longer than the 1,000 characters ``find_tools`` takes is cut there (the
  text before a plan's first numbered item can be longer). Reported per method (``adaptive``,
  ``adaptive+servers``) beside the tools disclosed per task: the same figures ``eval routing``
  prints as step-wise C@10, now through the gateway, its gate and its log.
* **time per need** (``--sizes 1000,10000``): a catalog of that many tools (MetaTool's tools
  and generated variants, ``benchmarks/_catalogs.py``) spread over ``--servers`` upstreams;
  ``--calls`` calls of ``--needs`` MetaTool requests each, after a warm-up; the client's wall
  time per call divided by its needs, median and p90, per method, the methods' calls
  interleaved (one gateway per method, started before anything is timed).

    PYTHONPATH=src .venv/bin/python benchmarks/gateway_find.py
    PYTHONPATH=src .venv/bin/python benchmarks/gateway_find.py --sizes 1000 --calls 20

Loopback and stdio only; each gateway's start (embedding its catalog) is not timed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from _catalogs import DATA, load_queries, make_catalog  # noqa: E402

METHODS = ("adaptive", "adaptive+servers")
MAX_NEEDS = 8
MAX_NEED_CHARS = 1000  # what the gateway takes (gateway/finding.py); longer steps are cut


def slug(server: str) -> str:
    """An upstream name the gateway accepts for a server's name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", server).strip("_")[:64] or "server"


def write_site(root: Path, tools: Path, servers: Sequence[str], method: str, top_k: int) -> Path:
    """A gateway config in ``find_tools`` mode over one upstream per server of ``tools``."""
    (root / "accounts.json").write_text(json.dumps({"acc-1": {"account": {}}}), "utf-8")
    lines = [
        "account: acc-1",
        "state: accounts.json",
        f"log: {method.replace('+', '-')}.sqlite",
        "disclosure: find_tools",
        f"find: {{method: {json.dumps(method)}, top_k: {top_k}}}",
        "upstreams:",
    ]
    for server in servers:
        lines += [
            f"  - name: {slug(server)}",
            f"    command: {json.dumps(sys.executable)}",
            f"    args: [{json.dumps(str(HERE / '_mcp_catalog_upstream.py'))}, --tools, "
            f"{json.dumps(str(tools))}, --server, {json.dumps(server)}]",
        ]
    config = root / f"gateway-{method.replace('+', '-')}.yaml"
    config.write_text("\n".join(lines) + "\n", "utf-8")
    return config


def gateway(config: Path) -> Client[Any]:
    transport = StdioTransport(
        sys.executable,
        ["-m", "maitred.cli.main", "mcp", "--config", str(config)],
        env={"PYTHONPATH": str(REPO / "src")},
        keep_alive=False,
        log_file=config.with_suffix(".stderr"),
    )
    return Client(transport, timeout=3600)


async def find(client: Client[Any], needs: Sequence[str]) -> list[set[str]]:
    """The tools disclosed for each need (a tool listed above counts for its need too)."""
    out: list[set[str]] = []
    for start in range(0, len(needs), MAX_NEEDS):
        chunk = [need[:MAX_NEED_CHARS] for need in needs[start : start + MAX_NEEDS]]
        result = await client.call_tool("find_tools", {"needs": chunk})
        answer = json.loads(result.content[0].text)
        for entry in answer["needs"]:
            out.append({t["name"] for t in entry["tools"]} | set(entry["listed_above"]))
    return out


def _server_names(tools: Path) -> list[str]:
    rows = [json.loads(x) for x in tools.read_text("utf-8").splitlines()]
    return sorted({r["server"] for r in rows if r.get("server")})


async def quality(steps_set: Path, methods: Sequence[str], root: Path) -> list[dict[str, Any]]:
    """Step-wise complete@10 through the gateway, per method."""
    tools = steps_set / "tools.jsonl"
    queries = [json.loads(x) for x in (steps_set / "queries.jsonl").read_text().splitlines()]
    rows = []
    for method in methods:
        config = write_site(root, tools, _server_names(tools), method, top_k=10)
        complete, shown, needs_n, elapsed = 0, 0, 0, 0.0
        async with gateway(config) as client:
            for q in queries:
                start = time.perf_counter()
                per_need = await find(client, q["steps"])
                elapsed += time.perf_counter() - start
                union = set().union(*per_need)
                complete += set(q["gold"]) <= union
                shown += len(union)
                needs_n += len(q["steps"])
        row = {
            "method": method,
            "tasks": len(queries),
            "step_complete_at_10": complete / len(queries),
            "tools_shown": shown / len(queries),
            "ms_per_need": 1000 * elapsed / needs_n,
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def _sized_tools(root: Path, size: int, servers: int, data: Path) -> Path:
    """``size`` tools (``_catalogs.make_catalog``) spread round-robin over ``servers``."""
    path = root / f"tools-{size}.jsonl"
    rows = [
        {"name": s.name, "description": s.description, "server": f"srv{i % servers:02d}"}
        for i, s in enumerate(make_catalog(size, data=data))
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


async def timing(
    size: int,
    methods: Sequence[str],
    root: Path,
    *,
    servers: int,
    calls: int,
    needs: int,
    data: Path,
) -> list[dict[str, Any]]:
    """Time per need at ``size`` tools, the methods' calls interleaved."""
    tools = _sized_tools(root, size, servers, data)
    names = [f"srv{i:02d}" for i in range(servers)]
    texts = load_queries(needs * (calls + 3), data=data)
    per: dict[str, list[float]] = {m: [] for m in methods}
    async with AsyncExitStack() as stack:
        clients = {}
        for method in methods:
            config = write_site(root, tools, names, f"{method}", top_k=10)
            clients[method] = await stack.enter_async_context(gateway(config))
        for i in range(calls + 3):
            batch = texts[i * needs : (i + 1) * needs]
            order = methods if i % 2 == 0 else list(reversed(methods))
            for method in order:
                start = time.perf_counter()
                await find(clients[method], batch)
                if i >= 3:  # three warm-up calls
                    per[method].append(1000 * (time.perf_counter() - start) / needs)
    rows = []
    for method, values in per.items():
        values.sort()
        row = {
            "tools": size,
            "method": method,
            "calls": len(values),
            "needs_per_call": needs,
            "ms_per_need_p50": statistics.median(values),
            "ms_per_need_p90": values[int(0.9 * (len(values) - 1))],
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps-set", type=Path, default=REPO / "bench-out/sets/mcp-bench-steps")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--servers", type=int, default=10)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--needs", type=int, default=4)
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--metatool", type=Path, default=DATA, help="MetaTool's data folder")
    args = parser.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="gateway-find-") as tmp:
        root = Path(tmp)
        if not args.skip_quality:
            out["quality"] = asyncio.run(quality(args.steps_set, methods, root))
        out["timing"] = []
        for size in (int(s) for s in args.sizes.split(",") if s):
            out["timing"] += asyncio.run(
                timing(
                    size,
                    methods,
                    root,
                    servers=args.servers,
                    calls=args.calls,
                    needs=args.needs,
                    data=args.metatool,
                )
            )
    (REPO / "bench-out").mkdir(exist_ok=True)
    (REPO / "bench-out" / "gateway_find.json").write_text(json.dumps(out, indent=1), "utf-8")


if __name__ == "__main__":
    main()
