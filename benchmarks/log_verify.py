"""How long ``maitred log verify`` takes on a large decision log (100k and 1M turns).

Builds a log directly through the log API (``begin_run`` + ``write`` per turn, no routing):
synthetic turns of ``--pairs`` candidates each, a snapshot drawn from a pool of accounts, a
third of the pairs blocked by a fired predicate. Then times :func:`maitred.log.verify` over
the whole log, read-only: every guard, run hash, turn hash, chain link, chain head, snapshot
and leftover count. Building is not what is measured; it is printed for scale.

    PYTHONPATH=src .venv/bin/python benchmarks/log_verify.py --turns 100000
    PYTHONPATH=src .venv/bin/python benchmarks/log_verify.py --turns 1000000
    PYTHONPATH=src .venv/bin/python benchmarks/log_verify.py --turns 100000 \\
        --postgres postgresql://root@127.0.0.1:5432/test

It prints one markdown table row per run, to paste into BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from maitred.contract.evaluate import PredicateOutcome
from maitred.log import DecisionLog, open_log, verify
from maitred.records import Message, PairRecord, RunInfo, TurnRecord
from maitred.state.snapshot import Snapshot


def turns(run_id: str, n: int, pairs: int, seed: int = 11) -> Iterator[TurnRecord]:
    """``n`` synthetic turns, generated one at a time (a 1M-turn list would not fit well)."""
    rng = random.Random(seed)
    snapshots = [
        Snapshot(f"acct-{i}", {"account.plan": rng.choice(["free", "pro"])}, 1.7e9 + i)
        for i in range(1000)
    ]
    fired = (PredicateOutcome("on_free_plan", "c1:abc", True, "ok", {"account.plan": "free"}),)
    for i in range(n):
        snap = rng.choice(snapshots)
        cands = []
        for rank in range(1, pairs + 1):
            blocked = rng.random() < 0.33
            cands.append(
                PairRecord(
                    f"skill-{rng.randrange(500):03d}-{rank}",
                    rank,
                    round(1.0 / rank + rng.random() * 0.1, 6),
                    not blocked,
                    not blocked and rank <= 3,
                    rng.randrange(40, 400),
                    {"bm25": rng.random() * 12},
                    fired=fired if blocked else (),
                )
            )
        yield TurnRecord(
            turn_id=f"{run_id}/m{i}",
            run_id=run_id,
            message=Message(f"m{i}", f"connect my domain please #{i}", snap.account),
            catalog_version="c1:bench",
            recall_method="bm25",
            depth_rule="fixed-k",
            pairs=tuple(cands),
            snapshot=snap,
            timings_us={"recall": 250, "gate": 300, "depth": 5, "menu": 40},
            ts=1.7e9 + i,
            menu_tokens=150,
        )


def build(log: DecisionLog, n: int, pairs: int, runs: int) -> float:
    """Write ``n`` turns spread over ``runs`` runs; return the seconds it took."""
    start = time.perf_counter()
    per_run = n // runs
    for r in range(runs):
        run_id = f"bench-{r}-{uuid.uuid4().hex[:6]}"
        log.begin_run(RunInfo(run_id, 1.7e9, "c1:bench", 500, 90_000, {"bench": True}))
        for record in turns(run_id, per_run, pairs, seed=r):
            log.write(record)
    log.flush()
    return time.perf_counter() - start


def measure(location: str, n: int, pairs: int, runs: int, **options: str) -> str:
    with open_log(location, **options) as log:  # type: ignore[arg-type]
        built = build(log, n, pairs, runs)
    start = time.perf_counter()
    report = verify(location if not options else f"{location}?schema={options['schema']}")
    seconds = time.perf_counter() - start
    assert report.ok, report.summary()
    backend = "PostgreSQL" if options else "SQLite"
    return (
        f"| {backend} | {report.turns:,} | {report.pairs:,} | {report.runs} | {built:.0f} s | "
        f"{seconds:.1f} s | {report.turns / seconds:,.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=5, help="candidates per turn")
    parser.add_argument("--runs", type=int, default=10, help="runs the turns are spread over")
    parser.add_argument("--postgres", help="also (only) a PostgreSQL server URL")
    args = parser.parse_args()
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}")  # fmt: skip
    print("| backend | turns | pairs | runs | build | verify | turns/s verified |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    if args.postgres:
        import psycopg

        schema = f"bench_{uuid.uuid4().hex[:10]}"
        try:
            print(measure(args.postgres, args.turns, args.pairs, args.runs, schema=schema))
        finally:
            with psycopg.connect(args.postgres, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')  # type: ignore[arg-type]
        return
    with tempfile.TemporaryDirectory() as tmp:
        print(measure(str(Path(tmp) / "log.sqlite"), args.turns, args.pairs, args.runs))


if __name__ == "__main__":
    main()
