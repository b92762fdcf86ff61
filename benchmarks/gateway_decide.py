"""What one allowed ``tools/call`` decision costs the gateway, in process: CPU and Python calls.

``benchmarks/gateway_calls.py`` counts what the gateway adds to a whole forwarded call over
HTTP; this isolates the decision itself -- :meth:`Conversation.check` of an allowed call, as
the gateway's call path makes it on its event loop: the principal's scopes, the state read,
the offer read from the log, the action gate (schema, predicates, policies), the decision
encoded, hash-chained and committed to the SQLite log before it returns. No HTTP, no tracing,
no rate limits, so what a change to the decision path saves shows alone.

For each source tree given (``--a``, ``--b``: a ``src`` folder), a fresh interpreter opens the
gateway of ``benchmarks/gateway.py``'s site (stdio, ``--tools`` generated tools; the engines
only, the upstream listed once), lists the tools for one principal (a logged turn), makes
``--warmup`` checks, then ``--checks`` timed by the thread's CPU clock, then ``--checks``
under ``cProfile`` for the Python function calls per check. The trees run in turn,
``--rounds`` times, the order alternating; the table gives each side's median.

    PYTHONPATH=src .venv/bin/python benchmarks/gateway_decide.py --a ../main/src --b src
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: run in a fresh interpreter with the tree under test first on the path
CHILD = r"""
import cProfile, json, pstats, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
import anyio
import gateway as bench
from _mcp_upstream import tool_name
from maitred.conversation.principal import Principal
from maitred.gateway import build
from maitred.gateway.config import load_config
from maitred.gateway.keeper import GatewayEngines

tools, warmup, checks = (int(a) for a in sys.argv[3:6])
with tempfile.TemporaryDirectory(prefix="maitred-gwdecide-") as tmp:
    config = load_config(bench.write_site(Path(tmp), tools))
    listed = anyio.run(build.list_upstreams, config)
    engines = GatewayEngines.open(config, listed)
    try:
        talk = engines.conversation(Principal("acc-1", tenant="bench", subject="acc-1"))
        talk.visible()  # a logged turn: what the checks are decided against
        name, args = tool_name(0), {"n": 3}
        for _ in range(warmup):
            assert talk.check(name, args, era="2026-07-28").allow
        start = time.thread_time()
        for _ in range(checks):
            talk.check(name, args, era="2026-07-28")
        cpu_us = (time.thread_time() - start) / checks * 1e6
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(checks):
            talk.check(name, args, era="2026-07-28")
        profile.disable()
        calls = pstats.Stats(profile).total_calls / checks
    finally:
        engines.close()
print(json.dumps({"cpu_us": cpu_us, "calls": calls}))
"""


def run(src: str, tools: int, warmup: int, checks: int) -> dict[str, float]:
    """One interpreter's figures for ``src``: CPU microseconds and Python calls per check."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": f"{src}{os.pathsep}{HERE}"}
    args = [str(tools), str(warmup), str(checks)]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, "-", str(HERE), *args],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"the checks from {src} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--a", default=str(HERE.parent / "src"), help="side A's src folder")
    parser.add_argument("--b", default="", help="side B's src folder (none: A alone)")
    parser.add_argument("--tools", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--checks", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sides = {"A": args.a, **({"B": args.b} if args.b else {})}
    found: dict[str, list[dict[str, float]]] = {k: [] for k in sides}
    for i in range(args.rounds):
        for side in sorted(sides, reverse=i % 2 == 1):
            found[side].append(run(sides[side], args.tools, args.warmup, args.checks))
            print(f"round {i + 1} {side}: {json.dumps(found[side][-1])}", flush=True)
    load = os.getloadavg()[0]
    print(f"\n{args.tools} tools, {args.checks} checks a round, {args.rounds} rounds, "
          f"load (1 min) now {load:.1f}")  # fmt: skip
    print("| side | src | CPU us per check (median; min) | Python calls per check |")
    print("|---|---|---:|---:|")
    for side, runs in found.items():
        cpu = [r["cpu_us"] for r in runs]
        calls = statistics.median(r["calls"] for r in runs)
        print(
            f"| {side} | {sides[side]} | {statistics.median(cpu):.1f}; {min(cpu):.1f} | "
            f"{calls:.0f} |"
        )


if __name__ == "__main__":
    main()
