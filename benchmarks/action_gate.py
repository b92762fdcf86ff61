"""Action-gate check time per call, per airline tool, against the simulator's own tool call.

For each tool of the ``tau2-airline`` pack it gathers real calls from a generated database --
the gold tasks' calls (allowed) and the generated violations (rejected), each with the session
state it would have at that point -- and times, per call, ``gate.check`` and the simulator
running the same call (on a copy of the database, reset before each round so writes stay
comparable). It prints p50/p99 in microseconds and their ratios, and the verdict on the goal
(gate p99 under 0.5 ms), as a markdown table to paste into docs/actions.md.

    .venv/bin/python benchmarks/action_gate.py --seeds 4 --rounds 30
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import gc
import platform
import statistics
import time
from collections import defaultdict
from typing import Any

from maitred.actions import Session, ToolCall
from maitred.actions.packs import tau2_airline
from maitred.lab.sim.airline import AirlineSim, generate_db, make_tasks, violations

GOAL_US = 500.0


def _samples(seeds: int, users: int) -> list[tuple[dict[str, Any], ToolCall, Session, int]]:
    """(db, call, session before the call, seed) for every call of every trajectory."""
    out = []
    for seed in range(seeds):
        db = generate_db(seed, n_users=users)
        items = [t.to_json() for t in make_tasks(db, seed)] + violations(db, seed)
        tracking = tau2_airline.tracking()
        for item in items:
            session = Session(context=dict(item.get("context") or {}))
            sim = AirlineSim(copy.deepcopy(db))
            for raw in item["calls"]:
                call = ToolCall(raw["name"], raw["arguments"])
                out.append((db, call, copy.deepcopy(session), seed))
                with contextlib.suppress(Exception):
                    session.record(call, sim.call(call.name, call.arguments), tracking)
    return out


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--users", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=200)
    opts = parser.parse_args()
    gate = tau2_airline.make_gate()
    samples = _samples(opts.seeds, opts.users)
    gate_us: dict[str, list[float]] = defaultdict(list)
    tool_us: dict[str, list[float]] = defaultdict(list)
    clock = time.perf_counter_ns
    dbs = {seed: db for db, _, _, seed in samples}
    for _ in range(opts.rounds):
        copies = {seed: copy.deepcopy(db) for seed, db in dbs.items()}
        gc.collect()
        gc.disable()  # as timeit does: time the calls, not collector pauses from the copies
        for db, call, session, seed in samples:
            t0 = clock()
            gate.check(call, db, session)
            t1 = clock()
            sim = AirlineSim(copies[seed])
            t2 = clock()
            with contextlib.suppress(Exception):
                sim.call(call.name, call.arguments)
            t3 = clock()
            gate_us[call.name].append((t1 - t0) / 1000)
            tool_us[call.name].append((t3 - t2) / 1000)
        gc.enable()
    print(f"python {platform.python_version()} on {platform.machine()}, "
          f"{len(samples)} distinct calls x {opts.rounds} rounds, seeds={opts.seeds}, "
          f"users={opts.users}\n")  # fmt: skip
    print("| tool | n | gate p50 µs | gate p99 µs | tool p50 µs | tool p99 µs "
          "| p50 ratio | p99 ratio | p99 < 500 µs |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|:---:|")
    worst = 0.0
    for name in sorted(gate_us):
        g, t = gate_us[name], tool_us[name]
        g50, g99, t50, t99 = _pct(g, 0.5), _pct(g, 0.99), _pct(t, 0.5), _pct(t, 0.99)
        worst = max(worst, g99)
        verdict = "yes" if g99 < GOAL_US else "NO"
        print(f"| {name} | {len(g)} | {g50:.1f} | {g99:.1f} | {t50:.1f} | {t99:.1f} "
              f"| {g50 / t50:.2f} | {g99 / t99:.2f} | {verdict} |")  # fmt: skip
    all_g = [v for vs in gate_us.values() for v in vs]
    print(f"\nall calls: gate p50 {statistics.median(all_g):.1f} µs, p99 {_pct(all_g, 0.99):.1f}"
          f" µs; worst per-tool p99 {worst:.1f} µs (goal < {GOAL_US:.0f} µs)")  # fmt: skip


if __name__ == "__main__":
    main()
