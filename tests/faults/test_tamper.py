"""A tampered decision log, on SQLite and PostgreSQL: every edit is refused or reported.

Issue 12 item 10: deleting a whole turn with its pairs still verified, ``INSERT OR REPLACE``
got past the append-only triggers, ``runs`` rows were not hashed, and dropped triggers went
unreported. Each test edits a log behind maitred's back (its guards switched off for the edit
and switched back on, unless the guard itself is the point) and asks ``verify``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.log.builders import make_run, make_turn

from maitred._canonical import content_hash
from maitred.log import DecisionLog, open_log, row_hash_payload, verify
from maitred.log._sql import SqlLog
from maitred.log.verify import VerifyReport

TABLES = ("runs", "turns", "pairs", "snapshots", "chain_heads", "depth_decisions")


@dataclass
class Target:
    """A log on one backend, and raw access to it that bypasses maitred."""

    dialect: str
    open: Callable[..., DecisionLog]
    raw: Callable[[str], None]  # run one statement as is (guards on)
    behind_back: Callable[..., None]  # statements with every guard off, then back on
    drop_guard: Callable[[str, str], None]  # (table, trigger) removed or disabled for good

    def verify(self) -> VerifyReport:
        with self.open(read_only=True) as log:
            return verify(log)

    def kinds(self) -> list[tuple[str, str]]:
        return sorted((m.kind, m.key) for m in self.verify().mismatches)


def _sqlite(path: Path) -> Target:
    def raw(sql: str) -> None:
        conn = sqlite3.connect(path)
        try:
            with conn:
                conn.execute(sql)
        finally:
            conn.close()

    def behind_back(*statements: str) -> None:
        conn = sqlite3.connect(path)
        with conn:
            saved = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
            triggers = saved.fetchall()
            for name, _ in triggers:
                conn.execute(f"DROP TRIGGER {name}")
            for statement in statements:
                conn.execute(statement)
            for _, sql in triggers:
                conn.execute(sql)
        conn.close()

    return Target(
        "sqlite",
        lambda **kw: open_log(path, **kw),
        raw,
        behind_back,
        lambda table, trigger: raw(f"DROP TRIGGER {trigger}"),
    )


def _postgres(url: str, schema: str) -> Target:
    import psycopg

    def run(*statements: str) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{schema}"')
            for statement in statements:
                conn.execute(statement)  # type: ignore[arg-type]

    def behind_back(*statements: str) -> None:
        off = [f"ALTER TABLE {t} DISABLE TRIGGER USER" for t in TABLES]
        on = [f"ALTER TABLE {t} ENABLE TRIGGER USER" for t in TABLES]
        run(*off, *statements, *on)

    return Target(
        "postgres",
        lambda **kw: open_log(url, schema=schema, **kw),
        run,
        behind_back,
        lambda table, trigger: run(f"ALTER TABLE {table} DISABLE TRIGGER {trigger}"),
    )


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    """A log of one run, six turns in two commits (heads at 3 and 6), verified clean."""
    if request.param == "sqlite":
        made = _sqlite(tmp_path / "log.db")
    else:
        made = _postgres(*request.getfixturevalue("pg_schema"))
    with made.open() as log:
        log.begin_run(make_run())
        for i in range(6):
            log.write(make_turn(i))
            if i == 2:
                log.flush()
    assert made.verify().ok
    yield made


def _raises(target: Target, sql: str) -> str:
    with pytest.raises(Exception) as raised:  # sqlite3 or psycopg error
        target.raw(sql)
    return str(raised.value)


def test_an_edited_turn_breaks_its_row_hash(target: Target) -> None:
    target.behind_back("UPDATE turns SET message_text = 'edited' WHERE turn_id = 'run-1/m2'")
    assert target.kinds() == [("row_hash", "run-1/m2")]


def test_an_edit_with_its_hash_recomputed_breaks_the_link_after_it(target: Target) -> None:
    with target.open(read_only=True) as log:
        turn = next(t for t in log.iter_turns(order="chain") if t["turn_id"] == "run-1/m1")
    forged = {**turn, "message_text": "edited"}
    digest = content_hash(row_hash_payload(forged, forged["pairs"], forged["depth_hash"]))
    target.behind_back(
        f"UPDATE turns SET message_text = 'edited', row_hash = '{digest}' "
        "WHERE turn_id = 'run-1/m1'"
    )
    report = target.verify()
    assert [(m.kind, m.key) for m in report.mismatches] == [
        ("chain", "run-1/m2"),
        ("link", "run-1/m1"),
    ]
    assert "a turn before it was replaced or moved" in report.mismatches[0].detail
    assert "replaced" in report.mismatches[1].detail  # the links chain holds its old hash


def test_a_turn_deleted_with_its_pairs_breaks_the_chain(target: Target) -> None:
    target.behind_back(
        "DELETE FROM pairs WHERE turn_id = 'run-1/m1'",
        "DELETE FROM turns WHERE turn_id = 'run-1/m1'",
    )
    report = target.verify()
    assert [(m.kind, m.key) for m in report.mismatches] == [
        ("chain", "run-1/m2"),
        ("link", "run-1/m1"),
    ]
    assert "turn(s) 2..2 are missing" in report.mismatches[0].detail
    assert "it was deleted" in report.mismatches[1].detail


def test_turns_cut_from_the_end_are_missed_by_the_last_commit(target: Target) -> None:
    target.behind_back(
        "DELETE FROM pairs WHERE turn_id IN ('run-1/m4', 'run-1/m5')",
        "DELETE FROM turns WHERE turn_id IN ('run-1/m4', 'run-1/m5')",
    )
    report = target.verify()
    assert [(m.kind, m.key) for m in report.mismatches] == [
        ("chain_head", "run-1"),
        ("link", "run-1/m4"),
        ("link", "run-1/m5"),
    ]
    assert "turns 5..6 were removed" in report.mismatches[0].detail


def test_reordered_turns_are_reported(target: Target) -> None:
    target.behind_back(
        "UPDATE turns SET chain_seq = 100 WHERE turn_id = 'run-1/m1'",
        "UPDATE turns SET chain_seq = 2 WHERE turn_id = 'run-1/m2'",
        "UPDATE turns SET chain_seq = 3 WHERE turn_id = 'run-1/m1'",
    )
    kinds = target.kinds()
    assert ("row_hash", "run-1/m1") in kinds and ("row_hash", "run-1/m2") in kinds
    assert any(kind == "chain" for kind, _ in kinds)


def test_an_edited_run_row_breaks_its_hash(target: Target) -> None:
    target.behind_back("UPDATE runs SET tokens_all_skills = 1000000 WHERE run_id = 'run-1'")
    assert target.kinds() == [("run_hash", "run-1")]


def test_a_replace_or_upsert_is_refused_while_the_guards_stand(target: Target) -> None:
    with target.open(read_only=True) as log:
        columns = next(c for c in log.iter_turns() if c["turn_id"] == "run-1/m1")
    names = [k for k in columns if k not in ("pairs",)]
    values = ", ".join(_literal(columns[k] if k != "menu_tokens" else 1) for k in names)
    if target.dialect == "sqlite":
        sql = f"INSERT OR REPLACE INTO turns ({', '.join(names)}) VALUES ({values})"
    else:
        sql = (
            f"INSERT INTO turns ({', '.join(names)}) VALUES ({values}) "
            "ON CONFLICT (turn_id) DO UPDATE SET menu_tokens = EXCLUDED.menu_tokens"
        )
    assert "append-only" in _raises(target, sql)
    run = "INSERT INTO runs (run_id, started_at, catalog_version, n_skills, tokens_all_skills, "
    run += "config_json) VALUES ('run-1', 1, 'x', 1, 1, '{}')"
    if target.dialect == "sqlite":
        assert "append-only" in _raises(target, run.replace("INSERT", "REPLACE", 1))
    else:
        upsert = " ON CONFLICT (run_id) DO UPDATE SET tokens_all_skills = 1"
        assert "append-only" in _raises(target, run + upsert)
    assert target.verify().ok


def test_a_replaced_snapshot_keeps_its_content(target: Target) -> None:
    if target.dialect != "sqlite":
        pytest.skip("REPLACE is SQLite's; PostgreSQL's upsert is the UPDATE guard's case")
    with target.open(read_only=True) as log:
        (snap,) = list(log.iter_snapshots())
    target.raw(
        f"INSERT OR REPLACE INTO snapshots (hash, account_id, as_of, json) "
        f"VALUES ('{snap['hash']}', 'other', 0, '{{}}')"
    )
    with target.open(read_only=True) as log:
        assert list(log.iter_snapshots()) == [snap]
    assert target.verify().ok


def test_a_dropped_or_disabled_guard_is_reported(target: Target) -> None:
    trigger = "turns_no_delete" if target.dialect == "sqlite" else "turns_append_only"
    target.drop_guard("turns", trigger)
    report = target.verify()
    assert [(m.kind, m.key) for m in report.mismatches] == [("trigger", trigger)]
    assert not report.ok


def test_a_guard_replaced_by_a_harmless_one_is_reported(target: Target) -> None:
    if target.dialect == "sqlite":
        trigger = "turns_no_delete"
        target.raw(f"DROP TRIGGER {trigger}")
        target.raw(f"CREATE TRIGGER {trigger} BEFORE DELETE ON turns BEGIN SELECT 1; END")
    else:
        trigger = "turns_append_only"
        target.raw(f"DROP TRIGGER {trigger} ON turns")
        target.raw(
            f"CREATE TRIGGER {trigger} BEFORE INSERT ON turns "
            "FOR EACH ROW EXECUTE FUNCTION maitred_append_only()"
        )
    report = target.verify()
    assert [(m.kind, m.key) for m in report.mismatches] == [("trigger", trigger)]
    assert "altered" in report.mismatches[0].detail


def test_turns_of_a_deleted_run_are_reported(target: Target) -> None:
    target.behind_back("DELETE FROM runs WHERE run_id = 'run-1'")
    assert target.kinds() == [("leftover", "pairs"), ("leftover", "turns")]


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def test_every_guard_dropped_does_not_hide_what_was_then_edited(target: Target) -> None:
    """The usual way to tamper: drop every guard, edit, leave. The guards' findings (more
    than the report keeps) must not crowd out the edit itself."""
    if target.dialect == "sqlite":
        with target.open(read_only=True) as log:
            assert isinstance(log, SqlLog)
            guards = log.query("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        for (name,) in guards:
            target.raw(f"DROP TRIGGER {name}")
    else:
        for table in TABLES:
            target.raw(f"ALTER TABLE {table} DISABLE TRIGGER USER")
    target.raw("DELETE FROM pairs WHERE turn_id = 'run-1/m1'")
    target.raw("DELETE FROM turns WHERE turn_id = 'run-1/m1'")
    with target.open(read_only=True) as log:
        report = verify(log, limit=3)
    kinds = [(m.kind, m.key) for m in report.mismatches]
    assert ("chain", "run-1/m2") in kinds
    assert sum(kind == "trigger" for kind, _ in kinds) == 3  # each kind keeps its first 3
    assert report.mismatch_count > len(report.mismatches)
