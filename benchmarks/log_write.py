"""Decision-log write throughput: pair rows per second, against the 100k/s goal.

Builds N synthetic TurnRecords first (about ``--pairs`` candidates each, a third of them
blocked with realistic fired predicates, a snapshot per turn drawn from a pool of accounts so
some repeat), then times ``begin_run`` + ``write`` x N + ``close`` on a fresh SQLite log (and,
with ``--postgres URL``, on a fresh schema in that database, dropped afterwards). The timed
part includes encoding and row hashing, since that is what a pipeline pays per turn.

    .venv/bin/python benchmarks/log_write.py --turns 20000
    .venv/bin/python benchmarks/log_write.py --postgres postgresql://root@127.0.0.1:5432/test

It prints one markdown table row per backend, to paste into BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import tempfile
import time
import uuid
from pathlib import Path

from maitred.contract.evaluate import PredicateOutcome, Status
from maitred.log import open_log
from maitred.records import Message, PairRecord, RunInfo, TurnRecord
from maitred.state.snapshot import Snapshot

GOAL = 100_000
SKILLS = [f"skill-{i:03d}" for i in range(200)]
PREDICATES = [
    ("on_free_plan", ("account.plan",)),
    ("site_suspended", ("site.status",)),
    ("no_payment_method", ("billing.payment_method",)),
    ("quota_exhausted", ("usage.builds", "plan.build_quota")),
]


def _snapshot(rng: random.Random, account: str, ts: float) -> Snapshot:
    values = {
        "account.plan": rng.choice(["free", "pro", "team"]),
        "site.status": rng.choice(["active", "suspended"]),
        "usage.builds": rng.randrange(0, 500),
        "plan.build_quota": 300,
    }
    return Snapshot(account, values, ts, missing=frozenset({"billing.payment_method"}))


def _pair(rng: random.Random, rank: int, skill: str, snap: Snapshot) -> PairRecord:
    blocked = rng.random() < 0.33
    fired: tuple[PredicateOutcome, ...] = ()
    if blocked:
        name, reads = rng.choice(PREDICATES)
        vals = {k: snap.values[k] for k in reads if k in snap.values}
        status: Status = "missing" if len(vals) < len(reads) else "ok"
        fired = (PredicateOutcome(name, f"c1:{uuid.uuid4().hex}", True, status, vals),)
    score = round(1.0 / rank + rng.random() * 0.1, 6)
    return PairRecord(
        skill=skill,
        rank=rank,
        score=score,
        visible=not blocked,
        exposed=not blocked and rank <= 4,
        desc_tokens=rng.randrange(40, 400),
        components={"bm25": rng.random() * 12, "dense": rng.random()},
        fired=fired,
    )


def make_records(run_id: str, n: int, pairs: int, seed: int = 7) -> list[TurnRecord]:
    """N synthetic turns of about ``pairs`` candidates each (generation is not timed)."""
    rng = random.Random(seed)
    out: list[TurnRecord] = []
    accounts = [f"acct-{i}" for i in range(max(1, n // 4))]
    for i in range(n):
        account = rng.choice(accounts)
        ts = 1_700_000_000.0 + i
        snap = _snapshot(rng, account, float(int(ts) // 3600 * 3600))
        skills = rng.sample(SKILLS, pairs)
        msg = Message(f"m{i}", f"please help me with request number {i}", account, f"c{i // 5}", ts)
        out.append(
            TurnRecord(
                turn_id=f"{run_id}/m{i}",
                run_id=run_id,
                message=msg,
                catalog_version="c1:bench",
                recall_method="hybrid",
                depth_rule="camdf-lite",
                pairs=tuple(_pair(rng, r + 1, s, snap) for r, s in enumerate(skills)),
                snapshot=snap,
                timings_us={"recall": 900, "gate": 120, "depth": 15, "menu": 60},
                ts=ts,
                menu_tokens=rng.randrange(200, 1200),
            )
        )
    return out


def measure(
    target: str, records: list[TurnRecord], run_id: str, **options: str
) -> tuple[float, float]:
    """(wall seconds, this process's CPU seconds) to begin a run, write everything and close."""
    info = RunInfo(run_id, 1_700_000_000.0, "c1:bench", len(SKILLS), 40_000, {"bench": True})
    start, cpu = time.perf_counter(), time.process_time()
    with open_log(target, **options) as log:  # type: ignore[arg-type]
        log.begin_run(info)
        for record in records:
            log.write(record)
    return time.perf_counter() - start, time.process_time() - cpu


def report(backend: str, timing: tuple[float, float], n_turns: int, n_pairs: int) -> None:
    seconds, cpu = timing
    rate = n_pairs / seconds
    print(
        f"{backend}: {n_turns:,} turns / {n_pairs:,} pair rows in {seconds:.2f}s = "
        f"{rate:,.0f} pair rows/s, {n_turns / seconds:,.0f} turns/s "
        f"({rate / GOAL:.2f}x the {GOAL:,}/s goal); client CPU {cpu:.2f}s = "
        f"{n_pairs / cpu:,.0f} pair rows per CPU-second; load average "
        f"{os.getloadavg()[0]:.1f}"
    )
    print(
        f"| log_write ({backend}) | {n_turns:,} turns x {n_pairs // n_turns} pairs | "
        f"{rate:,.0f} pair rows/s | {rate / GOAL:.2f}x of 100k/s | "
        f"{os.cpu_count()} CPU, Python {platform.python_version()} |"
    )


def _drop_schema(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20_000)
    parser.add_argument("--pairs", type=int, default=10, help="candidates per turn")
    parser.add_argument("--postgres", metavar="URL", help="also measure this PostgreSQL")
    parser.add_argument("--repeat", type=int, default=3, help="keep the best of N runs")
    parser.add_argument("--json-out", type=Path, help="also write the results here as JSON")
    args = parser.parse_args()
    results: list[dict[str, object]] = []
    n_pairs = args.turns * args.pairs
    records = make_records("bench", args.turns, args.pairs)
    with tempfile.TemporaryDirectory() as tmp:
        best = min(
            measure(str(Path(tmp) / f"log{i}.db"), records, "bench") for i in range(args.repeat)
        )  # best wall time of N: the least disturbed by other processes
    report("sqlite", best, args.turns, n_pairs)
    results.append(_result("sqlite", best, args.turns, n_pairs))
    if args.postgres:
        times = []
        for _ in range(args.repeat):
            schema = f"bench_{uuid.uuid4().hex[:12]}"
            try:
                times.append(measure(args.postgres, records, "bench", schema=schema))
            finally:
                _drop_schema(args.postgres, schema)
        report("postgres", min(times), args.turns, n_pairs)
        results.append(_result("postgres", min(times), args.turns, n_pairs))
    if args.json_out:
        args.json_out.write_text(json.dumps({"goal": GOAL, "results": results}, indent=1))


def _result(
    backend: str, timing: tuple[float, float], n_turns: int, n_pairs: int
) -> dict[str, object]:
    seconds, cpu = timing
    return {
        "backend": backend,
        "turns": n_turns,
        "pairs": n_pairs,
        "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu, 3),
        "pairs_per_s": round(n_pairs / seconds),
        "ratio_to_goal": round(n_pairs / seconds / GOAL, 3),
        "load_average": round(os.getloadavg()[0], 2),
    }


if __name__ == "__main__":
    main()
