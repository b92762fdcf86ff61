"""The console's decisions page on a 1,000,000-decision log, SQLite and PostgreSQL.

Builds (once per backend; reused while its row count matches) a decision log of ``--decisions``
rows -- 60% turns, 40% action decisions of every kind (calls, surface reads, ``find_tools``,
tasks) over 3 tenants, 5,000 accounts, 20,000 sessions and 30 days -- written through the
log's own writers (``write`` and ``write_decisions``: the same encoder, hashes, chains and
links a gateway pays for), then times the console's filtered decisions page
(:func:`maitred.log.browse.decision_page`, 50 rows, what ``/decisions`` runs) for each
filter an operator uses, on the first page and on a page deep behind a cursor, ``--reps`` times
each, and prints the p50 and its ratio to the 100 ms goal.

    nice -n 10 .venv/bin/python benchmarks/console_pages.py --backend sqlite
    nice -n 10 .venv/bin/python benchmarks/console_pages.py --backend postgres \\
        --pg postgresql://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from maitred.actions.model import Decision, ToolCall
from maitred.contract.evaluate import PredicateOutcome
from maitred.log import DecisionLog, open_log
from maitred.log.browse import PageFilter, decision_page
from maitred.records import Message, PairRecord, RunInfo, TurnRecord
from maitred.state.snapshot import Snapshot

GOAL_MS = 100.0
T0 = 1_790_000_000.0
SPAN_S = 30 * 86_400.0
TENANTS = ("acme", "globex", "initech")
ACCOUNTS = 5_000
SESSIONS = 20_000
TOOLS = tuple(f"tool_{i:02d}" for i in range(40))
OTHER = ("resources/read", "prompts/get", "skills/get", "find_tools", "tasks/create", "tasks/get")
CODES = (
    ("OK", 70),
    ("TOOL_NOT_OFFERED", 9),
    ("TOOL_NOT_EXECUTABLE", 9),
    ("ARGS_INVALID", 6),
    ("APPROVAL_REQUIRED", 3),
    ("RATE_LIMITED", 3),
)
CHUNK = 5_000


def _turn(i: int, rng: random.Random, at: float, snapshots: dict[str, Snapshot]) -> TurnRecord:
    session = rng.randrange(SESSIONS)
    account = f"acc-{session % ACCOUNTS}"
    tenant = TENANTS[session % len(TENANTS)]
    snap = snapshots.setdefault(
        account, Snapshot(account, {"account.plan": rng.choice(("free", "pro"))}, T0)
    )
    hidden = snap.values["account.plan"] == "free"
    fired = (PredicateOutcome("on_free_plan", "c1:p", True, "ok", {"account.plan": "free"}),)
    pairs = (
        PairRecord(TOOLS[i % 40], 1, 0.9, True, True, 80),
        PairRecord(TOOLS[(i * 7) % 40], 2, 0.5, not hidden, not hidden, 60,
                   fired=fired if hidden else ()),
    )  # fmt: skip
    return TurnRecord(
        turn_id=f"{tenant}/t{i}",
        run_id=f"bench-{tenant}",
        message=Message(f"m{i}", f"please do the thing #{i}", account, f"s-{session}", at),
        catalog_version="c1:bench",
        recall_method="bm25",
        depth_rule="fixed-k",
        pairs=pairs,
        snapshot=snap,
        timings_us={"recall": 100},
        ts=at,
        menu_tokens=140,
    )


def _trace_id(i: int) -> str:
    """Every other decision came in a request with W3C trace context: a trace id of its own
    (never all zero), without drawing from the random stream the rest of the log is built on."""
    return f"{(i * 0x9E3779B97F4A7C15 + 1) % (1 << 128):032x}" if i % 2 == 0 else ""


def _decision(i: int, rng: random.Random, at: float, weights: list[int]) -> Decision:
    session = rng.randrange(SESSIONS)
    tool = rng.choice(OTHER) if rng.random() < 0.15 else TOOLS[rng.randrange(40)]
    code = rng.choices([c for c, _ in CODES], weights)[0]
    outcome = PredicateOutcome("too_big", "c1:v", code != "OK", "ok", {"args.size": i % 9})
    return Decision(
        ToolCall(tool, {"size": i % 9}, id=f"c{i}"),
        "allow" if code == "OK" else "reject",
        code,
        message=f"{tool}: {code}",
        outcomes=(outcome,),
        now=at,
        session_id=f"s-{session}",
        tenant=TENANTS[session % len(TENANTS)],
        account=f"acc-{session % ACCOUNTS}",
        decision_id=f"d{i:08d}",
        trace_id=_trace_id(i),
    )


def build(url: str, decisions: int, schema: str | None) -> float:
    """Write the log; returns the seconds taken."""
    rng = random.Random(11)
    weights = [w for _, w in CODES]
    snapshots: dict[str, Snapshot] = {}
    start = time.perf_counter()
    with open_log(url, schema=schema) as log:
        for tenant in TENANTS:
            log.begin_run(RunInfo(f"bench-{tenant}", T0, "c1:bench", 46, 4_000, {}, tenant))
        pending: list[Decision] = []
        for i in range(decisions):
            at = T0 + SPAN_S * i / decisions
            if rng.random() < 0.6:
                log.write(_turn(i, rng, at, snapshots))
            else:
                pending.append(_decision(i, rng, at, weights))
            if (i + 1) % CHUNK == 0:
                log.write_decisions(pending)
                pending = []
                if (i + 1) % 100_000 == 0:
                    log.flush()
                    print(f"  wrote {i + 1:,}/{decisions:,}", file=sys.stderr, flush=True)
        log.write_decisions(pending)
    return time.perf_counter() - start


def analyze(url: str, schema: str) -> None:
    """PostgreSQL plans on its statistics, which autovacuum gathers some time after a bulk
    load; without them it estimates a session's rows at thousands and walks the clock index
    instead (0.9 s a page measured). The benchmark gathers them now, as autovacuum would."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for table in ("turns", "action_decisions"):
            conn.execute(f'ANALYZE "{schema}".{table}')


def count(log: DecisionLog) -> int:
    try:
        turns = log.query("SELECT COUNT(*) FROM turns")[0][0]
        actions = log.query("SELECT COUNT(*) FROM action_decisions")[0][0]
    except Exception:
        return 0
    return int(turns) + int(actions)


#: (name, filter) pairs timed: each a page an operator asks for
FILTERS: tuple[tuple[str, PageFilter], ...] = (
    ("no filter", PageFilter()),
    ("account", PageFilter(account="acc-1234")),
    ("session", PageFilter(session="s-4321")),
    ("tenant", PageFilter(tenant="globex")),
    ("tool", PageFilter(tool="tool_17")),
    ("code", PageFilter(code="APPROVAL_REQUIRED")),
    ("kind=call", PageFilter(kind="call")),
    ("kind=read", PageFilter(kind="read")),
    ("kind=task", PageFilter(kind="task")),
    ("kind=turn, tenant", PageFilter(kind="turn", tenant="acme")),
    ("tenant, code", PageFilter(tenant="initech", code="TOOL_NOT_OFFERED")),
    ("time range", PageFilter(since=T0 + 10 * 86_400, until=T0 + 11 * 86_400)),
    ("account, kind=call", PageFilter(account="acc-77", kind="call")),
)


def timed(call: Callable[[], Any], reps: int) -> float:
    """The median of ``reps`` timings of ``call``, in ms (one untimed warm-up first)."""
    call()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measure(log: DecisionLog, reps: int) -> list[tuple[str, float, float, float, int]]:
    """(filter, first page p50 ms, deep page p50 ms, the HTML page over HTTP p50 ms, rows on
    the first page) per filter; the HTTP page is the console's ``/decisions`` rendered by its
    Starlette app in process (Starlette's test client: no socket)."""
    from starlette.testclient import TestClient

    from maitred.console import Access, create_console

    client = TestClient(create_console(log, Access(open=True)))
    out = []
    # one trace's decisions (0016_decision_traces' index), a trace id the log holds
    found = log.query("SELECT trace_id FROM action_decisions WHERE trace_id <> '' LIMIT 1")
    traced = (("trace", PageFilter(trace=str(found[0][0]))),) if found else ()
    for name, where in (*FILTERS, *traced):
        first = decision_page(log, where)
        deep = first
        for _ in range(20):  # 20 pages in: the 21st page's cursor
            if deep.next is None:
                break
            deep = decision_page(log, replace(where, after=deep.next))
        cursor = deep.next or first.next
        p50 = timed(lambda w=where: decision_page(log, w), reps)
        deep_w = replace(where, after=cursor) if cursor else where
        p50_deep = timed(lambda w=deep_w: decision_page(log, w), reps)
        url = "/decisions?" + urlencode({k: v for k, v in where.to_json().items() if k != "limit"})
        p50_http = timed(lambda u=url: _ok(client.get(u)), reps)
        out.append((name, p50, p50_deep, p50_http, len(first.decisions)))
    return out


def _ok(response: Any) -> None:
    if response.status_code != 200:
        raise SystemExit(f"{response.url}: {response.status_code} {response.text[:300]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--decisions", type=int, default=1_000_000)
    parser.add_argument("--path", default="bench-out/console.sqlite")
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--schema", default="console_bench")
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    if args.backend == "sqlite":
        Path(args.path).parent.mkdir(parents=True, exist_ok=True)
        url, schema = args.path, None
    else:
        url, schema = args.pg, args.schema
    with open_log(url, schema=schema) as log:  # created and migrated (0015 included)
        have = count(log)
    if have != args.decisions:
        if have:
            sys.exit(
                f"{url} ({schema or 'file'}) holds {have:,} decisions, not {args.decisions:,}; "
                "remove it (or drop the schema) to rebuild"
            )
        seconds = build(url, args.decisions, schema)
        print(f"built {args.decisions:,} decisions in {seconds:.0f} s", flush=True)
    if schema is not None:
        analyze(url, schema)
    with open_log(url, schema=schema, read_only=True) as log:
        print(f"{args.backend}: {count(log):,} decisions ({url}, schema {schema})")
        results = measure(log, args.reps)
    heads = ("filter", "rows", "p50 first", "p50 deep", "p50 HTML", "goal/p50")
    print(f"{heads[0]:<22} {heads[1]:>4} {heads[2]:>10} {heads[3]:>9} {heads[4]:>9} {heads[5]:>9}")
    worst = 0.0
    for name, p50, deep, page, rows in results:
        worst = max(worst, p50, deep, page)
        ratio = GOAL_MS / max(p50, deep, page)
        print(f"{name:<22} {rows:>4} {p50:>8.1f}ms {deep:>7.1f}ms {page:>7.1f}ms {ratio:>8.1f}x")
    print(f"slowest p50 {worst:.1f} ms; goal {GOAL_MS:.0f} ms: {GOAL_MS / worst:.1f}x under it")


if __name__ == "__main__":
    main()
