"""Group commit: turns/s when every turn must be committed before its caller goes on.

Each caller does what ``maitred serve`` does per request: ``write`` one turn, then ``flush``
(return only once it is committed). Measured on one log, side by side in one run:

1. **one caller**: every turn is its own commit (the most a caller that waits can do alone);
2. **T concurrent callers** (threads on one log, ``--threads``): the log's group commit lets a
   commit carry every turn written while the previous one ran, so callers share commits.

Reported per backend: turns/s, commits (``chain_heads`` rows: one per commit of the run),
turns per commit, and the T-caller rate as a multiple of the one-caller rate. PostgreSQL
(``--postgres URL``, a fresh schema dropped afterwards) is where a commit costs a round trip
and a WAL flush, so that is where group commit should pay; SQLite with ``synchronous=NORMAL``
commits without an fsync.

    .venv/bin/python benchmarks/log_group_commit.py --turns 2000
    .venv/bin/python benchmarks/log_group_commit.py --postgres postgresql://root@127.0.0.1:5432/test

Bounded by ``--turns``; the records are built before timing (``log_write.make_records``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from maitred.log import open_log
from maitred.records import RunInfo, TurnRecord

sys.path.insert(0, str(Path(__file__).resolve().parent))
from log_write import make_records


def measure(
    target: str, records: list[TurnRecord], run_id: str, threads: int, **options: Any
) -> dict[str, float]:
    """Turns/s and commits for ``threads`` callers each doing write + flush per turn."""
    info = RunInfo(run_id, 1_700_000_000.0, "c1:bench", 200, 40_000, {"bench": True})
    with open_log(target, max_batch_seconds=3600, **options) as log:
        log.begin_run(info)
        shares = [records[i::threads] for i in range(threads)]

        def caller(mine: list[TurnRecord]) -> None:
            for record in mine:
                log.write(record)
                log.flush()

        workers = [threading.Thread(target=caller, args=(s,)) for s in shares]
        start = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        seconds = time.perf_counter() - start
        commits = int(
            log.query("SELECT COUNT(*) FROM chain_heads WHERE run_id = ?", (run_id,))[0][0]
        )
    return {
        "turns_s": len(records) / seconds,
        "commits": commits,
        "per_commit": len(records) / commits,
    }


def run_backend(name: str, target: str, args: argparse.Namespace, **options: Any) -> list[str]:
    rows = []
    one: float | None = None
    for threads in (1, args.threads):
        run_id = f"gc-{threads}-{uuid.uuid4().hex[:8]}"
        records = make_records(run_id, args.turns, args.pairs)
        r = measure(target, records, run_id, threads, **options)
        one = r["turns_s"] if one is None else one
        rows.append(
            f"| {name} | {threads} | {r['turns_s']:,.0f} | {r['commits']:,} | "
            f"{r['per_commit']:.1f} | {r['turns_s'] / one:.2f}x |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000, help="turns per measurement")
    parser.add_argument("--pairs", type=int, default=10, help="candidates per turn")
    parser.add_argument("--threads", type=int, default=16, help="concurrent callers")
    parser.add_argument("--postgres", default=None, help="also on this PostgreSQL database")
    args = parser.parse_args()
    rows = [
        "| backend | callers | turns/s | commits | turns per commit | vs one caller |",
        "|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        rows += run_backend("sqlite", str(Path(tmp) / "log.sqlite"), args)
    if args.postgres:
        import psycopg

        schema = f"gc_{uuid.uuid4().hex[:12]}"
        try:
            rows += run_backend("postgres", args.postgres, args, schema=schema)
        finally:
            with psycopg.connect(args.postgres, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
