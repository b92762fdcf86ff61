"""A log is created only where nothing else lives: never beside another application's tables."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from maitred.errors import SchemaError
from maitred.log import open_log, verify

from .builders import make_run, make_turn


def test_an_existing_sqlite_database_with_other_tables_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "accounts.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE accounts (account_id TEXT PRIMARY KEY, plan TEXT)")
        conn.execute("CREATE TABLE sites (site_id TEXT)")
    conn.close()
    with pytest.raises(SchemaError) as raised:
        open_log(path)
    message = str(raised.value)
    assert str(path) in message
    assert "accounts, sites" in message
    assert "not a maitred decision log" in message
    with sqlite3.connect(path) as conn:  # nothing was added
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert names == {"accounts", "sites", "sqlite_autoindex_accounts_1"}


def test_a_refused_sqlite_database_is_left_byte_for_byte_as_it_was(tmp_path: Path) -> None:
    """Refusing must not touch the file at all: not even switch it to WAL journaling (a
    persistent change in its header that other applications would inherit)."""
    path = tmp_path / "accounts.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE accounts (account_id TEXT PRIMARY KEY, plan TEXT)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(SchemaError):
        open_log(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["accounts.sqlite"]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    conn.close()


def test_a_new_log_is_still_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "log.sqlite"
    open_log(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.close()


def test_an_empty_file_and_an_existing_log_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite"
    sqlite3.connect(path).close()  # an empty database file
    with open_log(path) as log:
        log.begin_run(make_run())
        log.write(make_turn(0))
    with open_log(path) as log:  # reopened: it is a maitred log now
        assert verify(log).ok


@pytest.mark.postgres
def test_a_postgres_schema_with_other_tables_is_refused(pg_schema: tuple[str, str]) -> None:
    import psycopg

    url, schema = pg_schema
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(f'CREATE TABLE "{schema}".accounts (account_id TEXT PRIMARY KEY)')
    with pytest.raises(SchemaError, match=r"schema holds 1 other table\(s\) \(accounts\)"):
        open_log(url, schema=schema)
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (schema,),
        ).fetchall()
    assert rows == [("accounts",)]


@pytest.mark.postgres
def test_an_empty_postgres_schema_becomes_a_log(pg_schema: tuple[str, str]) -> None:
    url, schema = pg_schema
    with open_log(url, schema=schema) as log:
        log.begin_run(make_run())
    with open_log(url, schema=schema) as log:
        assert [r.run_id for r in log.runs()] == ["run-1"]
