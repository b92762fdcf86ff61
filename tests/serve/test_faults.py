"""Faults of a real ``maitred serve`` under load: a few client threads keep sending turns and
call checks over loopback (:mod:`.live`) while the test kills the server, drops an invalid
contract into its catalog, or takes its state store away.

* ``kill -9`` -> every decision a client received a 200 for is in the log, and
  ``maitred log verify`` passes on what is left;
* an invalid sidecar -> rejected (``/metrics``, ``/readyz``), the old set kept, every request
  answered with a 200;
* the state store down -- a SQLite store locked past its deadline, or a PostgreSQL store whose
  table is renamed away (marker ``postgres``) -> turns fail closed (``state_unavailable``),
  calls of the mutating tool are ``STATE_UNAVAILABLE``, both counted exactly in ``/metrics``,
  and the service resumes by itself once the store is back.

Bounded by :data:`.live.LOAD_S` per wait and the clients' request timeout.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from .deploy import DOMAIN_TEXT, PLANS, SIDECAR, auth
from .live import REQUEST_TIMEOUT_S, Load, Outcome, env, metric, start_server, stop, wait_until

pytestmark = pytest.mark.slow
BROKEN = SIDECAR.replace("mutates: true", "mutates: maybe")
TURNS, CHECKS = "/v1/turns", "/v1/calls/check"


def _answered(outcomes: list[Outcome], route: str) -> list[Outcome]:
    return [o for o in outcomes if o.route == route and o.status == 200]


def _logged(log: Path, sql: str) -> set[str]:
    conn = sqlite3.connect(f"file:{log}?mode=ro", uri=True, timeout=10)
    try:
        return {str(r[0]) for r in conn.execute(sql).fetchall()}
    finally:
        conn.close()


def test_kill_9_under_load_loses_no_decision_a_client_received(tmp_path: Path) -> None:
    base, proc = start_server(tmp_path)
    try:
        with Load(base, clients=3, stop_on_error=True) as load:
            wait_until(
                "40 answered requests", lambda: load.count(lambda o: o.status == 200) >= 40, proc
            )
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=REQUEST_TIMEOUT_S)
            outcomes = load.stop()
    finally:
        stop(proc)
    turns = {o.body["turn_id"] for o in _answered(outcomes, TURNS)}
    decisions = {o.body["decision_id"] for o in _answered(outcomes, CHECKS)}
    assert turns and decisions
    log = tmp_path / "log.sqlite"
    assert turns <= _logged(log, "SELECT turn_id FROM turns")
    assert decisions <= _logged(log, "SELECT decision_id FROM action_decisions")
    verify = subprocess.run(
        [sys.executable, "-m", "maitred.cli.main", "log", "verify", "--log", str(log)],
        env=env(),
        capture_output=True,
        timeout=120,
    )
    assert verify.returncode == 0, verify.stdout.decode() + verify.stderr.decode()


def test_an_invalid_contract_dropped_in_under_load_is_rejected_and_nothing_goes_unserved(
    tmp_path: Path,
) -> None:
    base, proc = start_server(tmp_path, reload={"interval_s": 0.1})
    rejected = 'maitred_reloads_total{outcome="rejected"}'
    try:
        live = httpx.get(f"{base}/readyz", timeout=REQUEST_TIMEOUT_S).json()
        with Load(base, clients=3) as load:
            wait_until(
                "10 answered requests", lambda: load.count(lambda o: o.status == 200) >= 10, proc
            )
            (tmp_path / "tools.maitred.yaml").write_text(BROKEN, encoding="utf-8")
            wait_until("the reload rejected", lambda: metric(base, rejected) >= 1, proc)
            after = len(load.snapshot())
            wait_until("20 more answers", lambda: len(load.snapshot()) >= after + 20, proc)
            outcomes = load.stop()
        ready = httpx.get(f"{base}/readyz", timeout=REQUEST_TIMEOUT_S)
        applied = metric(base, 'maitred_reloads_total{outcome="applied"}')
    finally:
        stop(proc)
    assert [o for o in outcomes if o.status != 200] == []  # no 5xx, no request unanswered
    # the old set kept serving: the paid account is offered the tool before and after
    assert all("connect_custom_domain" in o.body["exposed"] for o in _answered(outcomes, TURNS))
    assert {o.body["code"] for o in _answered(outcomes, CHECKS)} == {"OK"}
    assert applied == 0
    assert ready.status_code == 200  # still ready: the old catalog serves
    catalog = ready.json()["checks"]["catalog"]["detail"]
    assert "last reload rejected" in catalog and "tools.maitred.yaml" in catalog
    assert catalog.split(";")[0] == live["checks"]["catalog"]["detail"]  # same live version


def test_a_sqlite_store_locked_under_load_fails_closed_is_counted_and_recovers(
    tmp_path: Path,
) -> None:
    base, proc = start_server(tmp_path)  # state_timeout_s: 0.2
    # the holder waits for readers in flight (requests now read side by side, without a lock)
    holder = sqlite3.connect(tmp_path / "accounts.db", timeout=5, isolation_level=None)

    def down() -> None:  # every read now waits past its deadline
        holder.execute("BEGIN EXCLUSIVE")

    def up() -> None:
        holder.execute("ROLLBACK")

    try:
        _store_down_under_load(base, proc, down, up)
    finally:
        holder.close()
        stop(proc)


@pytest.mark.postgres
def test_a_postgres_store_whose_table_goes_away_under_load_fails_closed_and_recovers(
    tmp_path: Path, pg_schema: tuple[str, str]
) -> None:
    import psycopg

    server, schema = pg_schema
    admin = psycopg.connect(server, autocommit=True)
    try:
        admin.execute(f'CREATE SCHEMA "{schema}"')
        admin.execute(f'CREATE TABLE "{schema}".accounts (account_id TEXT PRIMARY KEY, plan TEXT)')
        with admin.cursor() as cur:
            cur.executemany(f'INSERT INTO "{schema}".accounts VALUES (%s, %s)', PLANS.items())
        admin.execute("SET lock_timeout = '10s'")
        tables = {"account": f"{schema}.accounts"}
        base, proc = start_server(tmp_path, state=server, tables=tables)

        def down() -> None:  # the table is gone: every read is a query error
            admin.execute(f'ALTER TABLE "{schema}".accounts RENAME TO accounts_away')

        def up() -> None:
            admin.execute(f'ALTER TABLE "{schema}".accounts_away RENAME TO accounts')

        try:
            _store_down_under_load(base, proc, down, up)
        finally:
            stop(proc)
    finally:
        admin.close()


def _store_down_under_load(
    base: str,
    proc: subprocess.Popen[bytes],
    down: Callable[[], None],
    up: Callable[[], None],
) -> None:
    """Take the store down under load, then bring it back; check what the clients and
    ``/metrics`` saw."""
    fail_turns = 'maitred_fail_closed_total{cause="state_unavailable"}'
    fail_calls = 'maitred_fail_closed_total{cause="STATE_UNAVAILABLE"}'
    headers = auth("acme")
    call = {"name": "connect_custom_domain", "arguments": {"domain": "example.com"}}
    with httpx.Client(base_url=base, timeout=REQUEST_TIMEOUT_S) as http:
        opened = {"text": DOMAIN_TEXT, "account": "acc-pro", "session_id": "mine"}
        first = http.post(TURNS, json=opened, headers=headers).json()
        assert "connect_custom_domain" in first["exposed"]
        with Load(base, clients=3) as load:
            wait_until("10 answers", lambda: load.count(lambda o: o.status == 200) >= 10, proc)
            down()
            try:
                # a session offered the tool before the store went down: its call fails closed
                refused_mine = http.post(
                    CHECKS, json={"session_id": "mine", "call": call}, headers=headers
                ).json()
                wait_until("fail-closed turns", lambda: metric(base, fail_turns) >= 3, proc)
                ready_down = http.get("/readyz")
            finally:
                up()
            back = len(load.snapshot())

            def recovered() -> bool:
                later = load.snapshot()[back:]
                turned = any(
                    o.route == TURNS
                    and o.body.get("cause") is None
                    and "connect_custom_domain" in o.body.get("exposed", [])
                    for o in later
                )
                allowed = any(
                    o.route == CHECKS
                    and o.body.get("allow") is True
                    and o.sent["call"]["name"] == "connect_custom_domain"
                    for o in later
                )
                return turned and allowed

            wait_until("turns and calls decided normally again", recovered, proc)
            outcomes = load.stop()
        counted = (metric(base, fail_turns), metric(base, fail_calls))
        ready_up = http.get("/readyz")
    assert (refused_mine["allow"], refused_mine["code"]) == (False, "STATE_UNAVAILABLE")
    assert ready_down.status_code == 503 and ready_up.status_code == 200
    assert [o for o in outcomes if o.status != 200] == []  # a fail-closed answer is an answer
    turns, checks = _answered(outcomes, TURNS), _answered(outcomes, CHECKS)
    failed = [o for o in turns if o.body["cause"] == "state_unavailable"]
    assert failed and all("connect_custom_domain" not in o.body["exposed"] for o in failed)
    refused = [o for o in checks if o.body["code"] == "STATE_UNAVAILABLE"]
    assert all(not o.body["allow"] for o in refused)
    # every fail-closed outcome, and only those, counted: the load's and the test's own call
    assert counted == (float(len(failed)), float(len(refused) + 1))
