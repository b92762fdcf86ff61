"""Named migrations: every one applied to a log at every earlier schema, on both backends."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from maitred.actions.model import Decision, ToolCall
from maitred.errors import LogError, SchemaError
from maitred.log import MIGRATIONS, DecisionLog, open_log, verify
from maitred.log._sql import SqlLog
from maitred.log.action_rows import ACTION_DECISION_COLUMNS, encode_decision
from maitred.log.browse import PageFilter, decision_page
from maitred.log.lookup import find_decision
from maitred.log.migrations import APPEND_ONLY_TABLES, migrate
from maitred.log.postgres import PostgresLog
from maitred.log.rows import (
    PAIR_COLUMNS,
    RUN_COLUMNS,
    SNAPSHOT_COLUMNS,
    TURN_COLUMNS,
    encode_run,
    encode_snapshot,
    encode_turn,
)
from maitred.log.sqlite import SqliteLog

from .builders import make_run, make_turn

ALL = [m.name for m in MIGRATIONS]
_A_COLUMN = {"runs": "run_id", "turns": "turn_id", "pairs": "skill", "snapshots": "json"}
Maker = Callable[..., Any]


class _PartialSqlite(SqliteLog):
    """A SQLite log brought only to the first ``upto`` migrations."""

    def __init__(self, path: Path, upto: int) -> None:
        self._upto = upto
        super().__init__(path)

    def _migrate(self) -> None:
        migrate(self, migrations=MIGRATIONS[: self._upto])


class _PartialPostgres(PostgresLog):
    """A PostgreSQL log brought only to the first ``upto`` migrations."""

    def __init__(self, url: str, schema: str, upto: int) -> None:
        self._upto = upto
        super().__init__(url, schema=schema)

    def _migrate(self) -> None:
        migrate(self, migrations=MIGRATIONS[: self._upto])


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Maker, Callable[..., DecisionLog], Callable[..., DecisionLog]]]:
    """(make a log at the first k migrations, open it fully, open a fresh full log elsewhere)."""
    if request.param == "sqlite":
        path, fresh = tmp_path / "old.db", tmp_path / "fresh.db"
        yield (
            lambda upto: _PartialSqlite(path, upto),
            lambda **kw: open_log(path, **kw),
            lambda: open_log(fresh),
        )
        return
    url, schema = request.getfixturevalue("pg_schema")
    with _extra_schema(url, schema + "_fresh") as fresh_schema:
        yield (
            lambda upto: _PartialPostgres(url, schema, upto),
            lambda **kw: open_log(url, schema=schema, **kw),
            lambda: open_log(url, schema=fresh_schema),
        )


@contextmanager
def _extra_schema(url: str, schema: str) -> Iterator[str]:
    import psycopg

    try:
        yield schema
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def describe_schema(log: DecisionLog) -> list[tuple[Any, ...]]:
    """Tables, columns, indexes and triggers, comparable between two logs of one dialect."""
    if log.dialect == "sqlite":
        return log.query(
            "SELECT type, name, tbl_name, sql FROM sqlite_master "
            "WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
        )
    columns = log.query(
        "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
    )
    indexes = [
        (name, re.sub(r"ON \S+\.", "ON ", definition))
        for name, definition in log.query(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
            "ORDER BY indexname"
        )
    ]
    triggers = log.query(
        "SELECT trigger_name, event_manipulation, event_object_table, action_timing "
        "FROM information_schema.triggers WHERE trigger_schema = current_schema() ORDER BY 1, 2"
    )
    return [*columns, *indexes, *triggers]


def test_migration_names_are_numbered_in_order() -> None:
    assert len(set(ALL)) == len(ALL)
    numbers = [int(n.split("_", 1)[0]) for n in ALL]
    assert numbers == sorted(set(numbers))  # increasing (0007 lands from another branch)
    assert ALL[0] == "0001_initial"
    for m in MIGRATIONS:
        assert m.sqlite and m.postgres, f"{m.name} must give statements for both dialects"


@pytest.mark.parametrize("upto", range(len(MIGRATIONS)))
def test_each_earlier_schema_is_upgraded_to_the_newest(
    backend: tuple[Maker, Callable[..., DecisionLog], Callable[..., DecisionLog]], upto: int
) -> None:
    make_old, open_full, open_fresh = backend
    with make_old(upto) as old:
        assert old.migrations() == ALL[:upto]
        if "0012_chained_only" in ALL[:upto]:  # a chained log takes chained rows only
            old.begin_run(make_run("old-run"))
            old.flush()
        elif upto >= 1:  # a log with data in it, written at the old schema
            old.execute(
                "INSERT INTO runs (run_id, started_at, catalog_version, n_skills, "
                "tokens_all_skills, config_json) VALUES (?, ?, ?, ?, ?, ?)",
                ("old-run", 1.0, "c1:old", 2, 300, "{}"),
            )
    with open_full() as log:
        assert log.migrations() == ALL
        assert [r.run_id for r in log.runs()] == (["old-run"] if upto >= 1 else [])
        log.begin_run(make_run())
        log.write(make_turn(0))
        log.flush()
        assert verify(log).ok
        upgraded = describe_schema(log)
    with open_fresh() as fresh:
        assert describe_schema(fresh) == upgraded


def test_a_log_from_a_newer_maitred_is_refused(
    backend: tuple[Maker, Callable[..., DecisionLog], Callable[..., DecisionLog]],
) -> None:
    _, open_full, _ = backend
    with open_full() as log:
        assert isinstance(log, SqlLog)
        log.execute(
            "INSERT INTO maitred_migrations (name, applied_at) VALUES (?, ?)",
            ("9999_from_the_future", 2e9),
        )
    for read_only in (False, True):
        with pytest.raises(SchemaError, match="newer maitred; upgrade"):
            open_full(read_only=read_only)


def test_read_only_refuses_a_log_that_needs_migrating(
    backend: tuple[Maker, Callable[..., DecisionLog], Callable[..., DecisionLog]],
) -> None:
    make_old, open_full, _ = backend
    make_old(1).close()
    with pytest.raises(SchemaError, match=r"needs migrations.*open it once read-write"):
        open_full(read_only=True)
    with open_full() as log:  # read-write upgrades it
        assert log.migrations() == ALL


@pytest.mark.parametrize("table", APPEND_ONLY_TABLES)
def test_tables_are_append_only_in_the_database(
    backend: tuple[Maker, Callable[..., DecisionLog], Callable[..., DecisionLog]], table: str
) -> None:
    _, open_full, _ = backend
    with open_full() as log:
        log.begin_run(make_run())
        log.write(make_turn(0))
        log.flush()
        with pytest.raises(LogError, match="append-only"):
            log.query(f"DELETE FROM {table}")
        with pytest.raises(LogError, match="append-only"):
            log.query(f"UPDATE {table} SET {_A_COLUMN[table]} = 'x'")


def test_a_log_written_before_0009_verifies_after_it_and_its_sessions_have_no_tenant(
    backend: tuple[Maker, Callable[..., DecisionLog], Callable[..., DecisionLog]],
) -> None:
    """Turns, runs and decisions written at ``0008`` (no tenant columns) keep their hashes:
    a tenant is in a row hash only when it is not empty, and theirs is ``''``."""
    make_old, open_full, _ = backend
    before = ALL.index("0009_tenants_sessions")
    turn = make_turn(0)
    encoded = encode_turn(turn, seq=1, prev_hash=str(encode_run(make_run())[-1]))
    decision = Decision(ToolCall("deploy-site", {}), "allow", now=1.0, mutates=False,
                        session_id="conv-1", turn_id=turn.turn_id)  # fmt: skip

    def insert(log: SqlLog, table: str, names: tuple[str, ...], row: tuple[Any, ...]) -> None:
        later = {"tenant"} | ({"account_id", "trace_id"} if table == "action_decisions" else set())
        kept = [(n, v) for n, v in zip(names, row, strict=True) if n not in later]
        marks = ", ".join("?" for _ in kept)
        cols = ", ".join(n for n, _ in kept)
        log.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", [v for _, v in kept])

    with make_old(before) as old:
        insert(old, "runs", RUN_COLUMNS, encode_run(make_run()))
        assert turn.snapshot is not None
        insert(old, "snapshots", SNAPSHOT_COLUMNS, encode_snapshot(turn.snapshot))
        insert(old, "turns", TURN_COLUMNS, encoded.turn)
        for pair in encoded.pairs:
            insert(old, "pairs", PAIR_COLUMNS, pair)
        old.execute(
            "INSERT INTO chain_heads (run_id, chain_seq, head_hash) VALUES (?, ?, ?)",
            ("run-1", 1, encoded.turn[TURN_COLUMNS.index("row_hash")]),
        )
        insert(old, "action_decisions", ACTION_DECISION_COLUMNS, encode_decision(decision))
    with open_full() as log:
        report = verify(log)
        assert report.ok, report.summary()
        assert (report.turns, report.decisions) == (1, 1)
        # committed before the links: pre-chain, as migration 0012 recorded it (not tampering)
        assert report.legacy_decisions == 1
        assert "1 decision(s) hashed but not linked" in report.summary()
        offer = log.committed_offer("", "conv-1")  # a chained turn 0012 found without a link
        assert offer is not None and offer.turn_id == turn.turn_id
        assert log.committed_offer("acme", "conv-1") is None


class _SqliteBefore0016(_PartialSqlite):
    """A SQLite log at ``0015``, whose decisions are written as a maitred of that schema
    wrote them: every column but ``trace_id`` (the last), linked and chained as usual."""

    def _insert_decisions(self, rows: list[Any]) -> None:
        assert ACTION_DECISION_COLUMNS[-1] == "trace_id"
        names = ACTION_DECISION_COLUMNS[:-1]
        sql = f"INSERT INTO action_decisions ({', '.join(names)}) VALUES "
        sql += f"({', '.join('?' for _ in names)})"
        with self._lock:
            self._conn.executemany(sql, [r[:-1] for r in rows])


def test_decisions_written_before_0016_verify_after_it_with_no_trace_id(tmp_path: Path) -> None:
    """A log written at ``0015`` (no ``trace_id`` column) opens, migrates and verifies: its
    decisions have no trace id (``''``, JSON ``null``); a decision written after it with one
    is found by it, and its column is checked against its JSON like every copied column."""
    path = tmp_path / "old.db"
    before = ALL.index("0016_decision_traces")
    old_one = Decision(ToolCall("deploy-site", {}), "allow", now=1.0, mutates=False,
                       session_id="conv-1")  # fmt: skip
    with _SqliteBefore0016(path, before) as old:
        old.write_decisions([old_one])
    traced = "4bf92f3577b34da6a3ce929d0e0e4736"
    new_one = Decision(ToolCall("deploy-site", {}), "allow", now=2.0, mutates=False,
                       session_id="conv-1", trace_id=traced)  # fmt: skip
    with open_log(path) as log:
        log.write_decisions([new_one])
        log.flush()
        report = verify(log)
        assert report.ok, report.summary()
        assert report.decisions == 2 and report.legacy_decisions == 0
        rows = {r["decision_id"]: r["trace_id"] for r in log.iter_action_decisions()}
        assert rows == {old_one.decision_id: "", new_one.decision_id: traced}
        found = decision_page(log, PageFilter(trace=traced))
        assert [d.decision_id for d in found.decisions] == [new_one.decision_id]
        shown = find_decision(log, old_one.decision_id).to_json()
        assert (
            shown["trace_id"] is None
            and find_decision(log, new_one.decision_id).to_json()["trace_id"] == traced
        )
        # the column is a copy of the JSON: edited alone (guards dropped), verify says so
        log.execute("DROP TRIGGER action_decisions_no_update")
        log.execute(
            "UPDATE action_decisions SET trace_id = ? WHERE decision_id = ?",
            ("0" * 31 + "1", new_one.decision_id),
        )
        edited = verify(log)
        assert not edited.ok and f"trace_id='{'0' * 31}1'" in edited.summary()
