"""Two gateways and the plain proxy in one run, their calls interleaved: A/B of a change.

``benchmarks/gateway.py`` compares the gateway with a plain FastMCP proxy; on a shared machine
its ratio moves by several hundredths from one run to the next, more than most changes to the
gateway are worth. This script puts two gateways beside the proxy in the same run, each from
its own source tree (``--a``, ``--b``: a ``src`` folder, e.g. a worktree of main and one of a
branch) or with parts of the config left out (``--drop-a`` / ``--drop-b``: top-level keys of
the gateway config, e.g. ``tracing`` or ``rate_limits``), and calls the three in turn, the order
rotating every round, so all three see the same stretches of the machine. Every side is in the
production dress of ``gateway.py --production`` (JWT auth, OTLP traces to a loopback collector,
rate limits), minus what is dropped.

It prints each side's ``tools/call`` p50 and front-process CPU per call, each gateway's ratio
to the proxy (p50 and the median of the paired ratios), and B - A.

``--direct`` adds the floor as a fourth side: the generated upstream served over HTTP by itself
(FastMCP's server, no proxy), and says what the proxy and each gateway add to it.

    PYTHONPATH=src .venv/bin/python benchmarks/gateway_ab.py --a ../main/src --b src
    PYTHONPATH=src .venv/bin/python benchmarks/gateway_ab.py --a ../main/src --b src --direct
    PYTHONPATH=src .venv/bin/python benchmarks/gateway_ab.py --drop-a tracing
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import gateway as bench  # benchmarks/gateway.py: the site, the sides, the token
from fastmcp import Client

SIDES = ("A", "B")


def drop_keys(text: str, keys: str) -> str:
    """``text`` (a gateway config) without the top-level ``keys`` (comma-separated) and the
    indented lines under each."""
    for key in filter(None, keys.split(",")):
        text = re.sub(rf"^{re.escape(key)}:.*\n(?:  .*\n)*", "", text, flags=re.M)
    return text


async def measure(
    srcs: Mapping[str, str],
    drops: Mapping[str, str],
    tools: int,
    calls: int,
    warmup: int,
    direct: bool = False,
) -> dict[str, Any]:
    """Time ``calls`` interleaved ``tools/call`` per side; samples (s) and CPU (ms) by side."""
    production = bench.Production()
    envs: dict[str, str] = {"proxy": str(bench.SRC), **srcs}
    current = {"src": str(bench.SRC)}

    def env() -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": current["src"]}

    bench._env = env  # the sides start with the source tree chosen for them
    with tempfile.TemporaryDirectory(prefix="maitred-gwab-") as tmp:
        root = Path(tmp)
        log = root / "stderr.log"
        collector, production.collector = bench._served(
            [sys.executable, str(bench.HERE / "_otlp_sink.py")], log
        )
        upstream = [sys.executable, str(bench.HERE / "_mcp_upstream.py"), "--tools", str(tools)]
        procs, urls = {}, {}
        try:
            current["src"] = envs["proxy"]
            if direct:  # the floor: the upstream itself over HTTP, nothing in between
                procs["direct"], urls["direct"] = bench._served([*upstream, "--http", "0"], log)
            procs["proxy"], urls["proxy"] = bench._served(
                [sys.executable, str(bench.HERE / "_mcp_proxy.py"), "--http", "0", "--", *upstream],
                log,
            )
            for side in SIDES:
                (root / side).mkdir()
                config = bench.write_site(root / side, tools, http=True, production=production)
                config.write_text(drop_keys(config.read_text(), drops[side]))
                current["src"] = envs[side]
                command = [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)]
                procs[side], urls[side] = bench._served(command, log)
            token = production.mint()
            async with (
                Client(urls.get("direct", urls["proxy"]), timeout=120) as floor,
                Client(urls["proxy"], timeout=120) as proxy,
                Client(urls["A"], auth=token, timeout=120) as a,
                Client(urls["B"], auth=token, timeout=120) as b,
            ):
                clients = {"proxy": proxy, "A": a, "B": b}
                if direct:
                    clients = {"direct": floor, **clients}
                visible = bench.tool_name(0)

                async def call(client: Client[Any]) -> None:
                    result = await client.call_tool(visible, {"n": 7})
                    assert result.content[0].text == f"{visible}(7) done", result

                for _ in range(warmup):
                    for client in clients.values():
                        await call(client)
                order = list(clients)
                before = {k: bench.cpu_seconds(p.pid) for k, p in procs.items()}
                samples: dict[str, list[float]] = {k: [] for k in clients}
                for i in range(calls):
                    turn = i % len(order)
                    for side in order[turn:] + order[:turn]:
                        start = time.perf_counter()
                        await call(clients[side])
                        samples[side].append(time.perf_counter() - start)
                cpu = {
                    k: (bench.cpu_seconds(p.pid) - before[k]) * 1e3 / calls
                    for k, p in procs.items()
                }
        finally:
            for popen in procs.values():
                bench._stop(popen)
            bench._stop(collector)
    return {"samples": samples, "cpu": cpu}


def report(found: Mapping[str, Any], label: Callable[[str], str]) -> str:
    samples, cpu = found["samples"], found["cpu"]
    p50 = {k: statistics.median(v) * 1e3 for k, v in samples.items()}
    p99 = {k: statistics.quantiles(v, n=100)[98] * 1e3 for k, v in samples.items()}
    lines = ["| side | tools/call p50 / p99 ms | CPU ms per call | / proxy: p50 (paired median) |"]
    lines.append("|---|---:|---:|---|")
    for side in ("direct", "proxy", *SIDES):
        if side not in samples:
            continue
        ratio = ""
        if side not in ("direct", "proxy"):
            paired = statistics.median(
                x / y for x, y in zip(samples[side], samples["proxy"], strict=True)
            )
            ratio = f"{p50[side] / p50['proxy']:.3f}x ({paired:.3f}x)"
        lines.append(
            f"| {label(side)} | {p50[side]:.2f} / {p99[side]:.2f} | {cpu[side]:.2f} | {ratio} |"
        )
    lines.append(
        f"\nB - A: p50 {p50['B'] - p50['A']:+.2f} ms, p99 {p99['B'] - p99['A']:+.2f} ms, "
        f"CPU {cpu['B'] - cpu['A']:+.2f} ms per call"
    )
    if "direct" in samples:  # what each side adds over the upstream served directly
        added = {k: p50[k] - p50["direct"] for k in ("proxy", *SIDES)}
        lines.append(
            f"Over the upstream served directly (p50 {p50['direct']:.2f} ms, its own CPU "
            f"{cpu['direct']:.2f} ms a call): the proxy adds {added['proxy']:+.2f} ms, A "
            f"{added['A']:+.2f} ms ({added['A'] / added['proxy']:.2f}x the proxy's), B "
            f"{added['B']:+.2f} ms ({added['B'] / added['proxy']:.2f}x)"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", default=str(bench.SRC), help="side A's src folder")
    parser.add_argument("--b", default=str(bench.SRC), help="side B's src folder")
    parser.add_argument("--drop-a", default="", help="config keys side A leaves out")
    parser.add_argument("--drop-b", default="", help="config keys side B leaves out")
    parser.add_argument("--tools", type=int, default=10, help="upstream tool count")
    parser.add_argument("--calls", type=int, default=800, help="timed calls per side")
    parser.add_argument("--warmup", type=int, default=20, help="untimed calls per side first")
    parser.add_argument(
        "--direct",
        action="store_true",
        help="a fourth side, the floor: the upstream itself served over HTTP, no proxy",
    )
    args = parser.parse_args()
    srcs = {"A": str(Path(args.a).resolve()), "B": str(Path(args.b).resolve())}
    drops = {"A": args.drop_a, "B": args.drop_b}
    load = os.getloadavg()[0]
    found = anyio.run(measure, srcs, drops, args.tools, args.calls, args.warmup, args.direct)

    def label(side: str) -> str:
        if side == "proxy":
            return "plain FastMCP proxy"
        if side == "direct":
            return "the upstream directly (HTTP; CPU: the upstream's own)"
        dropped = f", without {drops[side]}" if drops[side] else ""
        return f"{side}: {srcs[side]}{dropped}"

    print(f"{args.tools} tools, {args.calls} calls per side, interleaved")
    print(report(found, label))
    print(f"Load average (1 min) at the start / end: {load:.1f} / {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
