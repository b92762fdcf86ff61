"""How long the gateway takes to start in front of a large upstream, and where the time goes.

For each source tree given (``--a``, ``--b``: a ``src`` folder, e.g. a worktree of main and
one of a branch), a fresh interpreter writes ``benchmarks/gateway.py``'s site for ``--tools``
generated tools (stdio and one account; ``--http``: its ``--production`` HTTP gateway, JWT auth
and rate limits, no traces; ``--third-party``: npm server-filesystem as a second upstream) and
times ``open_gateway`` on it: the upstreams launched and listed, the engines opened over the
catalog (each tool's contract read, its argument schema checked), the server built. It also
reports the time the upstreams took to list (``Upstreams.start``, the same on both sides), the
argument checkers made (``ArgumentChecker``, one per tool), how many schemas were compiled for
them (once per distinct schema where the tree caches them) and the time making them took. The
trees run in turn, ``--rounds`` times, the order alternating, so both see the same stretches
of the machine.

    PYTHONPATH=src .venv/bin/python benchmarks/gateway_start.py --a ../main/src --b src
    PYTHONPATH=src .venv/bin/python benchmarks/gateway_start.py --a ../main/src --b src \
        --tools 1000 --http --third-party
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
import json, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
import anyio
import gateway as bench
from maitred.actions import arguments
from maitred.gateway import build, lifecycle
from maitred.gateway.config import load_config

tools, http, third = int(sys.argv[1]), sys.argv[3] == "http", sys.argv[4] == "third-party"
spent = {"checkers": 0, "compile_s": 0.0, "list_s": 0.0}
init = arguments.ArgumentChecker.__init__

def counted(self, *args, **kwargs):
    start = time.perf_counter()
    init(self, *args, **kwargs)
    spent["checkers"] += 1
    spent["compile_s"] += time.perf_counter() - start

arguments.ArgumentChecker.__init__ = counted
begin = lifecycle.Upstreams.start

async def listed(self):
    start = time.perf_counter()
    await begin(self)
    spent["list_s"] += time.perf_counter() - start

lifecycle.Upstreams.start = listed

async def main():
    with tempfile.TemporaryDirectory(prefix="maitred-gwstart-") as tmp:
        production = bench.Production(traces=False) if http else None
        party = bench.ThirdParty(Path(tmp) / "files") if third else None
        if party is not None:
            party.write()
        site = bench.write_site(
            Path(tmp), tools, http=http, production=production, third_party=party
        )
        config = load_config(site)
        start = time.perf_counter()
        server, engines = await build.open_gateway(config, http=http)
        spent["open_s"] = time.perf_counter() - start
        await build.close_gateway(server, engines)

anyio.run(main)
cached = getattr(arguments, "_compiled", None)  # a tree that compiles each schema once
spent["compiled"] = cached.cache_info().misses if cached else spent["checkers"]
print(json.dumps(spent))
"""


def run(src: str, tools: int, http: bool, third_party: bool) -> dict[str, float]:
    """One start of the gateway from ``src``: seconds and counts."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": f"{src}{os.pathsep}{HERE}"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tools), str(HERE), "http" if http else "stdio",
         "third-party" if third_party else "generated"],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"the gateway from {src} did not start:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--a", default=str(HERE.parent / "src"), help="side A's src folder")
    parser.add_argument("--b", default="", help="side B's src folder (none: A alone)")
    parser.add_argument("--tools", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--http", action="store_true",
        help="the HTTP gateway of gateway.py --production (JWT auth, rate limits; no traces)",
    )  # fmt: skip
    parser.add_argument(
        "--third-party", action="store_true",
        help="gateway.py --third-party's second upstream (npm server-filesystem) too",
    )  # fmt: skip
    args = parser.parse_args()
    sides = {"A": args.a, **({"B": args.b} if args.b else {})}
    found: dict[str, list[dict[str, float]]] = {k: [] for k in sides}
    for i in range(args.rounds):
        for side in sorted(sides, reverse=i % 2 == 1):
            found[side].append(run(sides[side], args.tools, args.http, args.third_party))
            print(f"round {i + 1} {side}: {json.dumps(found[side][-1])}", flush=True)
    load = os.getloadavg()[0]
    print(f"\n{args.tools} tools, {args.rounds} rounds, load (1 min) now {load:.1f}")
    print(
        "| side | src | start s (median) | upstream listed s | argument checkers | "
        "schemas compiled | making the checkers s |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for side, runs in found.items():

        def med(key: str, runs: list[dict[str, float]] = runs) -> float:
            return statistics.median(r[key] for r in runs)

        print(
            f"| {side} | {sides[side]} | {med('open_s'):.2f} | {med('list_s'):.2f} | "
            f"{med('checkers'):.0f} | {med('compiled'):.0f} | {med('compile_s'):.2f} |"
        )


if __name__ == "__main__":
    main()
