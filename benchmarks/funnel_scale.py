"""Funnel and report at scale: 1,000,000 messages (~10M pair rows) in under a minute.

Builds (once, reused afterwards) a SQLite decision log of N synthetic turns with ``--pairs``
candidates each, written through the real log API in chunks (the same encoder and row hash a
pipeline pays for), then times, on that log:

* ``funnel``: the funnel by plain read-only SQL in SQLite (what `maitred funnel` runs);
* ``report``: the report's DuckDB queries (what `maitred report` runs, charts aside).

    .venv/bin/python benchmarks/funnel_scale.py --messages 1000000 --pairs 10
    .venv/bin/python benchmarks/funnel_scale.py --json-out bench-out/funnel_scale.json

Prints the timings and their ratio to the 60-second goal.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from log_write import SKILLS, make_records

from maitred.analytics.funnel import funnel
from maitred.analytics.report import collect
from maitred.log import open_log
from maitred.records import RunInfo

GOAL_S = 60.0
CHUNK = 20_000


def build(path: Path, messages: int, pairs: int) -> float:
    """Write the log; returns seconds taken."""
    start = time.perf_counter()
    # one chunk of distinct synthetic turns, written again and again under fresh ids (the
    # snapshots repeat, as an account's state does across its messages)
    template = make_records("scale", min(CHUNK, messages), pairs)
    with open_log(path) as log:
        log.begin_run(RunInfo("scale", 1_700_000_000.0, "c1:bench", len(SKILLS), 40_000, {}))
        for offset in range(0, messages, CHUNK):
            n = min(CHUNK, messages - offset)
            for record in template[:n]:
                log.write(_renumber(record, offset))
            done = offset + n
            if done % 100_000 == 0 or done == messages:
                print(f"  wrote {done:,}/{messages:,} turns", file=sys.stderr, flush=True)
    return time.perf_counter() - start


def _renumber(record, offset):  # type: ignore[no-untyped-def]
    from dataclasses import replace

    i = int(record.message.id[1:]) + offset
    message = replace(record.message, id=f"m{i}")
    return replace(record, turn_id=f"scale/m{i}", message=message)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--log", type=Path, default=Path("bench-out/scale/decisions.sqlite"))
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    args.log.parent.mkdir(parents=True, exist_ok=True)
    built = None
    if not args.log.is_file():
        built = build(args.log, args.messages, args.pairs)
    t0 = time.perf_counter()
    f = funnel(str(args.log)).to_json()
    t_funnel = time.perf_counter() - t0
    t0 = time.perf_counter()
    data = collect(args.log)
    t_report = time.perf_counter() - t0
    result = {
        "messages": f["messages"],
        "pair_rows": f["candidate_pairs"],
        "build_s": built,
        "funnel_s": round(t_funnel, 2),
        "report_queries_s": round(t_report, 2),
        "funnel_vs_goal": round(t_funnel / GOAL_S, 3),
        "report_vs_goal": round(t_report / GOAL_S, 3),
        "agree": data.messages == f["messages"] and data.tokens_gate == f["tokens_after_gate"],
    }
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
