"""What the gateway adds to a forwarded call, counted rather than timed: Python function calls.

``benchmarks/gateway.py`` times the gateway against a plain FastMCP proxy, and on a shared
machine its ratios move by a few hundredths from run to run. This counts instead: each front
process (the proxy, the gateway) runs under ``cProfile`` (turned on by a signal once the
warm-up is done, on its event loop's thread), serves ``--calls`` allowed ``tools/call`` of one
generated tool, and dumps its profile; the script prints the function calls per request on
each side, the difference, and the packages the difference is in. The counts do not depend on
the load, so a change that makes the gateway do less shows up at once, in any run, and one
that makes it do more cannot hide in the noise. (cProfile counts each resumption of a
coroutine as a call too; both sides are counted alike.)

The set-up is ``gateway.py --transport http``'s: both sides over streamable HTTP on loopback
in front of the same generated stdio upstream; ``--production`` gives the gateway JWT auth,
OTLP traces to a loopback collector and rate limits, as there.

    PYTHONPATH=src .venv/bin/python benchmarks/gateway_calls.py
    PYTHONPATH=src .venv/bin/python benchmarks/gateway_calls.py --era 2025-11-25 --top 15
    PYTHONPATH=src .venv/bin/python benchmarks/gateway_calls.py --plain   # no auth/traces/limits
"""

from __future__ import annotations

import argparse
import collections
import os
import pstats
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gateway as bench  # the sibling script: its sides and its site

#: runs a front process under cProfile: on from SIGUSR1, dumped to ``$PROFILE_TO`` on SIGUSR2
LAUNCHER = """
import cProfile, os, runpy, signal, sys, time
cpu = os.environ.get("PROFILE_CPU") == "1"  # the loop thread's CPU time, not the wall clock
profile = cProfile.Profile(time.thread_time) if cpu else cProfile.Profile()
out = os.environ["PROFILE_TO"] + ("gateway" if "maitred.cli.main" in sys.argv else "proxy")
signal.signal(signal.SIGUSR1, lambda *_: profile.enable())
signal.signal(signal.SIGUSR2, lambda *_: (profile.disable(), profile.dump_stats(out + ".prof")))
sys.argv = sys.argv[1:]
if sys.argv[0] == "-m":
    sys.argv = sys.argv[1:]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    runpy.run_path(sys.argv[0], run_name="__main__")
"""


def profiled(root: Path) -> None:
    """Make :mod:`gateway`'s sides start under :data:`LAUNCHER`, dumping into ``root``."""
    launcher = root / "launch.py"
    launcher.write_text(LAUNCHER, encoding="utf-8")
    served, env = bench._served, bench._env

    def serve(args: list[str], log: Path) -> Any:
        return served([args[0], str(launcher), *args[1:]], log)

    bench._served = serve
    cpu = {"PROFILE_CPU": os.environ["PROFILE_CPU"]} if "PROFILE_CPU" in os.environ else {}
    bench._env = lambda: {**env(), "PROFILE_TO": str(root) + "/", **cpu}


async def count(calls: int, era: str, production: bool, root: Path) -> None:
    """Warm both sides, then profile each over ``calls`` allowed calls, one side at a time."""
    prod = bench.Production() if production else None
    (root / "site").mkdir()
    async with (
        bench.http_sides(root / "site", 10, prod) as connect,
        connect(era) as clients,
    ):
        pids = bench.front_pids()
        for side in ("proxy", "gateway"):
            client = clients[side]
            for _ in range(30):
                await client.call_tool(bench.tool_name(0), {"n": 7})
            os.kill(pids[side], signal.SIGUSR1)
            await anyio.sleep(0.3)  # the handler runs between the loop's steps
            for _ in range(calls):
                await client.call_tool(bench.tool_name(0), {"n": 7})
            os.kill(pids[side], signal.SIGUSR2)
            dump = root / f"{side}.prof"
            for _ in range(600):  # the dump is written by the side's own loop
                if dump.is_file() and dump.stat().st_size:
                    break
                await anyio.sleep(0.05)


def per_request(path: Path, calls: int) -> tuple[float, dict[str, float]]:
    """Function calls per request, in all and by package (the first two path parts below
    site-packages or src; built-ins as ``~``)."""
    stats: dict[Any, Any] = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    by: collections.Counter[str] = collections.Counter()
    for (filename, _, _), (_, ncalls, _, _, _) in stats.items():
        where = filename.split("site-packages/")[-1].split("/src/")[-1]
        if "/lib/python" in where:
            where = "stdlib"
        by["/".join(where.split("/")[:2])] += ncalls / calls
    return sum(by.values()), dict(by)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="profiled calls per side")
    parser.add_argument("--era", default="2026-07-28", choices=tuple(bench.ERAS))
    parser.add_argument(
        "--plain",
        action="store_true",
        help="the gateway with a static token and no traces or limits (default: --production's)",
    )
    parser.add_argument("--top", type=int, default=10, help="packages of the difference shown")
    parser.add_argument("--keep", type=Path, help="copy both profiles (pstats files) here")
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="time the profiles by the serving thread's CPU time (kept with --keep)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="maitred-gwcalls-") as tmp:
        root = Path(tmp)
        if args.cpu:
            os.environ["PROFILE_CPU"] = "1"
        profiled(root)
        started = time.perf_counter()
        anyio.run(count, args.calls, args.era, not args.plain, root)
        proxy, proxy_by = per_request(root / "proxy.prof", args.calls)
        gateway, gateway_by = per_request(root / "gateway.prof", args.calls)
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            for side in ("proxy", "gateway"):
                shutil.copy(root / f"{side}.prof", args.keep / f"{side}.prof")
    features = "static token" if args.plain else "JWT auth, traces, rate limits"
    print(
        f"{args.calls} allowed tools/call per side, {args.era} clients, gateway with {features} "
        f"({time.perf_counter() - started:.0f} s):\n"
        f"  proxy   {proxy:8,.0f} Python function calls per request\n"
        f"  gateway {gateway:8,.0f}\n"
        f"  added   {gateway - proxy:8,.0f} ({gateway / proxy:.2f}x)\n"
        "where the added calls are (package: calls per request):"
    )
    added = {k: gateway_by.get(k, 0.0) - proxy_by.get(k, 0.0) for k in {*gateway_by, *proxy_by}}
    for name, n in sorted(added.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"  {name or '~'}: {n:+,.0f}")


if __name__ == "__main__":
    main()
