"""Action-gate decisions in the log (0005): written in batches, hashed, verified, append-only."""

from __future__ import annotations

import copy
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from maitred._canonical import canonical_json, content_hash
from maitred.actions import ActionGate, Decision, GatedRegistry, Session, ToolCall
from maitred.actions.packs import tau2_airline
from maitred.contract.evaluate import PredicateOutcome
from maitred.errors import ConfigError, LogError
from maitred.lab.sim.airline import AirlineSim, generate_db, make_tasks, violations
from maitred.log import open_log, verify
from maitred.log._sql import SqlLog
from maitred.log.action_rows import ACTION_DECISION_COLUMNS

from .builders import Opener, make_run, make_turn


def _run_session(
    gate: ActionGate, db: dict[str, Any], calls: list[dict[str, Any]], sid: str
) -> int:
    sim = AirlineSim(db)
    reg = GatedRegistry(sim.tools, gate, lambda: db, Session(id=sid))
    for c in calls:
        reg.call(c["name"], c["arguments"])
    return len(reg.decisions)


def _write_sessions(log: Any) -> tuple[int, dict[str, Any]]:
    """Gold tasks and violating trajectories through a logging gate; (decisions, db)."""
    db = generate_db(seed=3, n_users=12)
    gate = tau2_airline.make_gate()
    logged = ActionGate(gate.rulebook, gate.clock, log=log)
    n = 0
    for task in make_tasks(db, seed=3):
        n += _run_session(logged, copy.deepcopy(db), task.calls, task.id)
    for traj in violations(db, seed=3)[:4]:
        n += _run_session(logged, copy.deepcopy(db), traj["calls"], traj["id"])
    return n, db


def test_every_check_is_logged_and_verifies(opener: Opener) -> None:
    with opener() as log:
        n, _ = _write_sessions(log)
    with opener(read_only=True) as log:
        rows = list(log.iter_action_decisions())
        report = verify(log)
        one = list(log.iter_action_decisions("cancel_recent-3"))
    assert report.ok, report.summary()
    assert report.decisions == len(rows) == n > 10
    assert {r["verdict"] for r in rows} == {"allow", "reject"}
    assert one and all(r["session_id"] == "cancel_recent-3" for r in one)
    for row in rows:
        data = json.loads(row["decision_json"])
        assert row["decision_json"] == canonical_json(data)
        assert row["decision_hash"] == content_hash(data)
        assert (row["tool"], row["code"]) == (data["call"]["name"], data["code"])
        assert json.loads(row["versions_json"]) == data["versions"]
        assert row["policy"].startswith("tau2-airline@c1:")
    rejected = [r for r in rows if r["verdict"] == "reject"]
    assert any(r["code"].startswith("AIRLINE_") and r["fields_json"] != "[]" for r in rejected)


def test_decisions_are_batched(tmp_path: Path) -> None:
    gate = tau2_airline.make_gate()
    db = generate_db(seed=1, n_users=4)
    # the age bound is set far out: only the row bound may commit here, however slow the machine
    with open_log(tmp_path / "log.db", batch_pairs=3, max_batch_seconds=3600) as log:
        assert isinstance(log, SqlLog)
        logged = ActionGate(gate.rulebook, gate.clock, log=log)
        for i in range(5):
            logged.check(ToolCall("cancel_reservation", {"reservation_id": f"X{i}"}), db)
        # three landed in one batch; two wait for the next batch or flush
        assert log.query("SELECT COUNT(*) FROM action_decisions") == [(3,)]
        log.flush()
        assert log.query("SELECT COUNT(*) FROM action_decisions") == [(5,)]
        log.begin_run(make_run())
        log.write(make_turn(0))
        logged.check(ToolCall("list_all_airports", {}), db)
    with open_log(tmp_path / "log.db", read_only=True) as log:
        report = verify(log)
    assert (report.ok, report.turns, report.decisions) == (True, 1, 6)


def test_registry_log_and_double_logging_refused(tmp_path: Path) -> None:
    gate = tau2_airline.make_gate()
    db = generate_db(seed=1, n_users=4)
    with open_log(tmp_path / "log.db") as log:
        reg = GatedRegistry(AirlineSim(db).tools, gate, lambda: db, Session(id="s"), log=log)
        reg.call("cancel_reservation", {"reservation_id": "nope"})
        logged = ActionGate(gate.rulebook, gate.clock, log=log)
        with pytest.raises(ConfigError, match="pass the log to one of them only"):
            GatedRegistry({}, logged, lambda: db, Session(), log=log)
        rows = list(log.iter_action_decisions())
    assert [(r["session_id"], r["code"]) for r in rows] == [("s", "AIRLINE_MUST_READ_RESERVATION")]


def test_a_decision_that_is_not_json_is_refused_naming_it(tmp_path: Path) -> None:
    bad = Decision(
        ToolCall("refund", {"amount": 1}),
        "reject",
        "X",
        outcomes=(PredicateOutcome("p", "c1:v", True, "ok", {"args.amount": math.nan}),),
        decision_id="d-nan",
    )
    with (
        open_log(tmp_path / "log.db") as log,
        pytest.raises(LogError, match=r"decision 'd-nan' on tool 'refund'.*finite JSON"),
    ):
        log.write_decisions([bad])
    with (
        open_log(tmp_path / "log.db", read_only=True) as log,
        pytest.raises(LogError, match="read-only"),
    ):
        log.write_decisions([])


def _tamper(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DROP TRIGGER action_decisions_no_update")
        for statement in statements:
            conn.execute(statement)
    conn.close()


def test_verify_catches_an_edited_decision(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    with open_log(path) as log:
        _write_sessions(log)
    with open_log(path, read_only=True) as log:
        first, second = [r["decision_id"] for r in log.iter_action_decisions()][:2]
    _tamper(
        path,
        "UPDATE action_decisions SET decision_json = replace(decision_json, "
        f"'\"verdict\":\"', '\"verdict\":\"x') WHERE decision_id = '{first}'",
        f"UPDATE action_decisions SET code = 'OK2' WHERE decision_id = '{second}'",
    )
    report = verify(path)
    found = sorted((m.kind, m.key) for m in report.mismatches)
    assert found == sorted(
        [
            ("decision_hash", first),
            ("decision", first),
            ("decision", second),
            ("trigger", "action_decisions_no_update"),  # dropped for the edit, and reported
        ]
    )
    assert "code='OK2'" in next(m.detail for m in report.mismatches if m.key == second)


@pytest.mark.postgres
def test_verify_catches_an_edited_decision_in_postgres(pg_schema: tuple[str, str]) -> None:
    url, schema = pg_schema
    with open_log(url, schema=schema) as log:
        _write_sessions(log)
        log.flush()
        assert verify(log).ok
        assert isinstance(log, SqlLog)
        (target,) = log.query("SELECT decision_id FROM action_decisions ORDER BY 1 LIMIT 1")[0]
        log.execute("ALTER TABLE action_decisions DISABLE TRIGGER action_decisions_append_only")
        log.execute(
            "UPDATE action_decisions SET verdict = 'allow2' WHERE decision_id = ?", (target,)
        )
    report = verify(f"{url}?schema={schema}")
    assert [(m.kind, m.key) for m in report.mismatches] == [
        ("trigger", "action_decisions_append_only"),  # disabled for the edit, and reported
        ("decision", target),
    ]


@pytest.mark.parametrize("table", ["replays", "action_decisions"])
def test_later_tables_are_append_only(opener: Opener, table: str) -> None:
    with opener() as log:
        assert isinstance(log, SqlLog)
        if table == "action_decisions":
            gate = tau2_airline.make_gate()
            ActionGate(gate.rulebook, gate.clock, log=log).check(ToolCall("x"), {})
        else:
            log.begin_run(make_run())
            log.write(make_turn(0))
            log.flush()
            log.write_replays([("r1", "run-1/m0", "risk", "m", None, None, False, "", 1.0)])
        log.flush()
        with pytest.raises(LogError, match="append-only"):
            log.query(f"DELETE FROM {table}")
        column = ACTION_DECISION_COLUMNS[1] if table == "action_decisions" else "model"
        with pytest.raises(LogError, match="append-only"):
            log.query(f"UPDATE {table} SET {column} = 'x'")
