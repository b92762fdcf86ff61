"""What the MCP gateway costs: ``maitred mcp`` against a plain FastMCP proxy to the same upstream.

Both sides are what an MCP client launches: a subprocess over stdio that fronts the same
generated upstream (``benchmarks/_mcp_upstream.py --tools N``, itself a subprocess of each):

* **proxy**: ``benchmarks/_mcp_proxy.py``, ``fastmcp.server.create_proxy`` with no middleware;
* **gateway**: ``maitred mcp --config F``, the same proxy with maitred's gates (a logged
  listing turn over every tool's exit predicates; a call checked against schema, predicates
  and policy and flushed to the SQLite decision log before it is forwarded).

One ``fastmcp.Client`` per side measures, in the same run and interleaved operation by
operation (the side that goes first alternates), ``tools/call`` of a visible tool and
``tools/list`` (response cache bypassed), for each catalog size; it reports p50 / p99 and the
gateway's p50 as a multiple of the proxy's (goals: call <= 1.25x, list <= 1.5x). A refused
call (a tool hidden for the account, answered by the gateway without the upstream) is timed
too, for reference. The account is on the free plan, so a fifth of the tools are hidden and
the gateway's list is shorter than the proxy's: per-session filtering is part of its cost.

With ``--transport http`` both sides serve streamable HTTP on loopback instead (each a
subprocess; the proxy without auth, the gateway with a bearer token), which is how a team
deploys a shared gateway.

Bounded: ``--calls`` and ``--lists`` timed operations per side and size after a short warm-up
(about two minutes on a shared 2-core machine); loopback only.

    PYTHONPATH=src .venv/bin/python benchmarks/gateway.py
    PYTHONPATH=src .venv/bin/python benchmarks/gateway.py --sizes 10 --calls 100 --lists 20
    PYTHONPATH=src .venv/bin/python benchmarks/gateway.py --transport http
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mcp_upstream import hidden, sidecar, tool_name

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
GOALS = {"call": 1.25, "list": 1.5}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(SRC)}


#: the bearer token the HTTP gateway's client presents (only its hash is in the config)
TOKEN = "bench-token-3f9a1c"


def write_site(root: Path, tools: int, *, http: bool = False) -> Path:
    """Accounts, contracts and a gateway config for ``tools`` generated tools; the config
    (``http``: served on a free loopback port, for one bearer token)."""
    (root / "accounts.json").write_text(
        json.dumps({"acc-1": {"account": {"plan": "free", "status": "active"}}}),
        encoding="utf-8",
    )
    (root / "bench.maitred.yaml").write_text(sidecar(tools), encoding="utf-8")
    config = root / "gateway.yaml"
    served = (
        "server: {host: 127.0.0.1, port: 0}\n"
        "tokens:\n"
        f"  - {{token_sha256: {hashlib.sha256(TOKEN.encode()).hexdigest()}, "
        "tenant: bench, account: acc-1}\n"
        if http
        else "account: acc-1\n"
    )
    config.write_text(
        served + "state: accounts.json\n"
        "log: gateway.sqlite\n"
        "upstreams:\n"
        "  - name: bench\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(HERE / '_mcp_upstream.py'))}, --tools, '{tools}']\n"
        "    contracts: bench.maitred.yaml\n",
        encoding="utf-8",
    )
    return config


def transports(root: Path, tools: int) -> dict[str, StdioTransport]:
    """The two sides, as an MCP client would launch them (stderr to a file in ``root``)."""
    config = write_site(root, tools)
    log = root / "stderr.log"
    upstream = [sys.executable, str(HERE / "_mcp_upstream.py"), "--tools", str(tools)]
    return {
        "proxy": StdioTransport(
            sys.executable,
            [str(HERE / "_mcp_proxy.py"), "--", *upstream],
            env=_env(),
            keep_alive=False,
            log_file=log,
        ),
        "gateway": StdioTransport(
            sys.executable,
            ["-m", "maitred.cli.main", "mcp", "--config", str(config)],
            env=_env(),
            keep_alive=False,
            log_file=log,
        ),
    }


def _served(args: list[str], log: Path) -> tuple[subprocess.Popen[str], str]:
    """Start one HTTP side (``args``) and wait for the address it prints on stderr."""
    with log.open("a", encoding="utf-8") as sink:
        popen = subprocess.Popen(
            args, env=_env(), stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
    assert popen.stderr is not None
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        line = popen.stderr.readline()
        if not line:
            raise RuntimeError(f"{args[1]} exited before serving (see {log})")
        found = re.search(r"serving (http://\S+)", line)
        if found:
            return popen, found.group(1)
    raise RuntimeError(f"{args[1]} did not serve within 300 s")


@asynccontextmanager
async def http_clients(root: Path, tools: int) -> AsyncIterator[dict[str, Client[Any]]]:
    """Both sides served over streamable HTTP on loopback, and a client of each."""
    config = write_site(root, tools, http=True)
    log = root / "stderr.log"
    upstream = [sys.executable, str(HERE / "_mcp_upstream.py"), "--tools", str(tools)]
    proxy_cmd = [sys.executable, str(HERE / "_mcp_proxy.py"), "--http", "0", "--", *upstream]
    gateway_cmd = [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)]
    started: list[subprocess.Popen[str]] = []
    try:
        proxy, proxy_url = _served(proxy_cmd, log)
        started.append(proxy)
        gateway, gateway_url = _served(gateway_cmd, log)
        started.append(gateway)
        async with (
            Client(proxy_url, timeout=120) as px,
            Client(gateway_url, auth=TOKEN, timeout=120) as gw,
        ):
            yield {"proxy": px, "gateway": gw}
    finally:
        for popen in started:
            popen.terminate()
            popen.wait(timeout=30)


@asynccontextmanager
async def stdio_clients(root: Path, tools: int) -> AsyncIterator[dict[str, Client[Any]]]:
    """Both sides launched over stdio, as an MCP client launches a local server."""
    sides = transports(root, tools)
    async with (
        Client(sides["proxy"], timeout=120) as proxy,
        Client(sides["gateway"], timeout=120, init_timeout=300) as gateway,
    ):
        yield {"proxy": proxy, "gateway": gateway}


Op = Callable[[Client[Any]], Awaitable[Any]]


def front_pids() -> dict[str, int]:
    """The pids of the two front processes (children of this one), by side; {} off Linux."""
    found: dict[str, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(fields[1]) != os.getpid():
            continue
        if any(a.endswith(b"_mcp_proxy.py") for a in cmdline):
            found["proxy"] = int(stat.parent.name)
        elif b"maitred.cli.main" in cmdline:
            found["gateway"] = int(stat.parent.name)
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (all its threads), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _timed(client: Client[Any], op: Op) -> float:
    start = time.perf_counter()
    await op(client)
    return time.perf_counter() - start


async def phase(
    clients: dict[str, Client[Any]], op: Op, count: int, warmup: int, max_seconds: float
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """``op`` on every side, interleaved; the timed samples and CPU seconds per op, by side.

    The side that goes first alternates; the phase stops after ``max_seconds`` of timed work.
    """
    for _ in range(warmup):
        for side in clients.values():
            await op(side)
    pids = {k: p for k, p in front_pids().items() if k in clients}
    before = {k: cpu_seconds(p) for k, p in pids.items()}
    samples: dict[str, list[float]] = {k: [] for k in clients}
    start = time.perf_counter()
    for i in range(count):
        for side in sorted(clients, reverse=i % 2 == 1):  # gateway, proxy; then proxy, gateway
            samples[side].append(await _timed(clients[side], op))
        if time.perf_counter() - start > max_seconds:
            break  # bounded: the table says how many were timed
    cpu = {k: (cpu_seconds(p) - before[k]) / len(samples[k]) for k, p in pids.items()}
    return samples, cpu


async def measure(
    tools: int, calls: int, lists: int, warmup: int, max_seconds: float, transport: str = "stdio"
) -> dict[str, Any]:
    """Time both sides over one catalog size: samples (seconds) and CPU per op, by side."""
    visible, refused = tool_name(0), tool_name(next(i for i in range(tools) if hidden(i)))

    async def call(client: Client[Any]) -> Any:
        result = await client.call_tool(visible, {"n": 7})
        assert result.content[0].text == f"{visible}(7) done", result

    async def listing(client: Client[Any]) -> Any:
        return await client.list_tools(cache_mode="bypass")

    async def refuse(client: Client[Any]) -> Any:
        result = await client.call_tool(refused, {"n": 7}, raise_on_error=False)
        assert result.is_error and "TOOL_NOT_OFFERED" in result.content[0].text, result

    samples: dict[str, dict[str, list[float]]] = {"proxy": {}, "gateway": {}}
    cpu: dict[str, dict[str, float]] = {"proxy": {}, "gateway": {}}
    with tempfile.TemporaryDirectory(prefix="maitred-gwbench-") as tmp:
        started = time.perf_counter()
        serve = http_clients if transport == "http" else stdio_clients
        async with serve(Path(tmp), tools) as clients:
            gateway = clients["gateway"]
            print(f"  {tools:,} tools: both sides up in {time.perf_counter() - started:.1f}s",
                  file=sys.stderr, flush=True)  # fmt: skip
            shown = {k: len(await listing(c)) for k, c in clients.items()}
            expected = tools - sum(hidden(i) for i in range(tools))
            assert shown == {"proxy": tools, "gateway": expected}, shown
            for what, op, count, on in [
                ("call", call, calls, clients),
                ("list", listing, lists, clients),
                ("refused", refuse, calls, {"gateway": gateway}),
            ]:
                warm = warmup if what != "list" else min(warmup, 2)  # a 1,000-tool list is ~1 s
                got, used = await phase(on, op, count, warm, max_seconds)
                for side in on:
                    samples[side][what], cpu[side][what] = got[side], used.get(side, math.nan)
    return {
        "tools": tools, "transport": transport, "shown": shown, "samples": samples, "cpu": cpu
    }  # fmt: skip


def rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The table rows of one catalog size."""
    found = []
    s = result["samples"]
    for what in ("call", "list"):
        px, gw = s["proxy"][what], s["gateway"][what]
        ratio = _pct(gw, 0.5) / _pct(px, 0.5)
        found.append(
            {
                "tools": result["tools"],
                "op": what,
                "n": len(gw),
                "proxy_p50_ms": _pct(px, 0.5) * 1e3,
                "proxy_p99_ms": _pct(px, 0.99) * 1e3,
                "gateway_p50_ms": _pct(gw, 0.5) * 1e3,
                "gateway_p99_ms": _pct(gw, 0.99) * 1e3,
                "ratio_p50": ratio,
                "ratio_p99": _pct(gw, 0.99) / _pct(px, 0.99),
                # each gateway op over the proxy op timed next to it (same load): a steadier view
                "ratio_paired": statistics.median(g / p for g, p in zip(gw, px, strict=True)),
                "goal": GOALS[what],
                "met": ratio <= GOALS[what],
                "proxy_cpu_ms": result["cpu"]["proxy"][what] * 1e3,
                "gateway_cpu_ms": result["cpu"]["gateway"][what] * 1e3,
            }
        )
    refused = s["gateway"]["refused"]
    found.append(
        {
            "tools": result["tools"],
            "op": "refused",
            "n": len(refused),
            "gateway_p50_ms": _pct(refused, 0.5) * 1e3,
            "gateway_p99_ms": _pct(refused, 0.99) * 1e3,
        }
    )
    return found


def table(all_rows: list[dict[str, Any]], shown: dict[int, dict[str, int]]) -> str:
    head = (
        "| tools (listed: proxy / gateway) | operation | n | proxy p50 / p99 ms "
        "| gateway p50 / p99 ms | gateway / proxy: p50 (p99; paired median) | goal "
        "| front process CPU ms per op, proxy / gateway |\n"
        "|---|---|---:|---:|---:|---:|---|---:|"
    )
    lines = [head]
    names = {
        "call": "`tools/call`, allowed",
        "list": "`tools/list`",
        "refused": "`tools/call`, hidden tool refused",
    }
    for r in all_rows:
        sizes = shown[r["tools"]]
        label = f"{r['tools']:,} ({sizes['proxy']:,} / {sizes['gateway']:,})"
        gw = f"{r['gateway_p50_ms']:.2f} / {r['gateway_p99_ms']:.2f}"
        if r["op"] == "refused":
            lines.append(f"| {label} | {names['refused']} | {r['n']} | | {gw} | | | |")
            continue
        px = f"{r['proxy_p50_ms']:.2f} / {r['proxy_p99_ms']:.2f}"
        ratio = f"**{r['ratio_p50']:.2f}x** ({r['ratio_p99']:.2f}x; {r['ratio_paired']:.2f}x)"
        verdict = f"<= {r['goal']}x: {'met' if r['met'] else 'not met'}"
        cpu = f"{r['proxy_cpu_ms']:.2f} / {r['gateway_cpu_ms']:.2f}"
        lines.append(
            f"| {label} | {names[r['op']]} | {r['n']} | {px} | {gw} | {ratio} | {verdict} | {cpu} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,1000", help="upstream tool counts, comma-separated")
    parser.add_argument("--calls", type=int, default=300, help="timed tools/call per side")
    parser.add_argument("--lists", type=int, default=60, help="timed tools/list per side")
    parser.add_argument("--warmup", type=int, default=10, help="untimed calls first (lists: 2)")
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=60.0,
        help="stop a phase (one size, one operation) after this",
    )
    parser.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="how both sides are served (http: loopback streamable HTTP, gateway with a token)",
    )
    parser.add_argument("--json-out", type=Path, help="also write the rows and samples here")
    args = parser.parse_args()
    results = []
    load = os.getloadavg()[0]
    for tools in (int(s) for s in args.sizes.split(",")):
        results.append(
            anyio.run(
                measure,
                tools,
                args.calls,
                args.lists,
                args.warmup,
                args.max_seconds,
                args.transport,
            )
        )
    all_rows = [row for result in results for row in rows(result)]
    shown = table(all_rows, {r["tools"]: r["shown"] for r in results})
    shown += f"\n\nLoad average (1 min) at the start / end: {load:.1f} / {os.getloadavg()[0]:.1f}"
    shown += f" on {os.cpu_count()} CPUs."
    print(shown)
    if args.json_out:
        command = "python benchmarks/gateway.py " + shlex.join(sys.argv[1:])
        date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        found = {"command": command.strip(), "date": date, "table": shown, "rows": all_rows}
        args.json_out.write_text(json.dumps({**found, "runs": results}, indent=1))


if __name__ == "__main__":
    main()
