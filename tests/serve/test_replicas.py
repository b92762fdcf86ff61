"""Several replicas on one PostgreSQL decision log: two ``maitred serve`` processes, started
together on one fresh schema and loaded at once, each write their own runs; every decision a
client received is in the shared log, and ``maitred log verify`` passes on it.

Needs the PostgreSQL server of tests/conftest.py (marker ``postgres``).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from .live import Load, Outcome, env, start_server, stop, wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
REPLICAS = 2


def test_two_replicas_share_one_postgres_log_each_with_its_own_runs(
    tmp_path: Path, pg_schema: tuple[str, str]
) -> None:
    import psycopg

    server, schema = pg_schema
    url = f"{server}?schema={schema}"
    roots = [tmp_path / f"replica-{i}" for i in range(REPLICAS)]
    started: list[tuple[str, subprocess.Popen[bytes]]] = []
    lock = threading.Lock()

    def start(root: Path) -> None:  # at the same time: both create and migrate the schema
        root.mkdir()
        replica = start_server(root, log=url)
        with lock:
            started.append(replica)

    starters = [threading.Thread(target=start, args=(root,)) for root in roots]
    for t in starters:
        t.start()
    for t in starters:
        t.join()
    outcomes: list[Outcome] = []
    try:
        assert len(started) == REPLICAS, "a replica did not start"
        loads = [Load(base, clients=2) for base, _ in started]
        for load in loads:
            load.__enter__()
        try:
            for load, (_, proc) in zip(loads, started, strict=True):
                wait_until("30 answered requests", lambda ld=load: ld.count(_ok) >= 30, proc)
        finally:
            for load in loads:
                outcomes.extend(load.stop())
    finally:
        for _, proc in started:
            stop(proc)
    assert [o for o in outcomes if o.status != 200] == []
    turns = {o.body["turn_id"] for o in outcomes if o.route == "/v1/turns"}
    decisions = {o.body["decision_id"] for o in outcomes if o.route == "/v1/calls/check"}
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        runs = {r[0] for r in conn.execute("SELECT run_id FROM runs").fetchall()}
        logged_turns = {r[0] for r in conn.execute("SELECT turn_id FROM turns").fetchall()}
        logged = {r[0] for r in conn.execute("SELECT decision_id FROM action_decisions")}
    # each replica its own run per tenant; the load's turns fell in both acme runs
    assert len(runs) == REPLICAS * 2
    assert len({t.split("/")[0] for t in turns}) == REPLICAS
    assert turns <= logged_turns and decisions <= logged
    verify = subprocess.run(
        [sys.executable, "-m", "maitred.cli.main", "log", "verify", "--log", url],
        env=env(),
        capture_output=True,
        timeout=120,
    )
    assert verify.returncode == 0, verify.stdout.decode() + verify.stderr.decode()


def _ok(outcome: Outcome) -> bool:
    return outcome.status == 200
