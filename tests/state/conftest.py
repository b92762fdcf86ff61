"""Real databases for the SQL provider tests: one SQLite file, or one PostgreSQL schema, per test.

``sql_backend`` is parametrised over both, so every SQL test body runs against SQLite and the
PostgreSQL server of ``pg_server`` (tests/conftest.py). The PostgreSQL cases carry the
``postgres`` marker and are skipped, with the URL in the reason, only when that server cannot be
reached.
Each backend records the statements the provider's own connections run, so tests can count
queries (SQLite: ``set_trace_callback``; PostgreSQL: a ``psycopg.Connection`` subclass).
"""

from __future__ import annotations

import contextlib
import sqlite3
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from maitred.state import SqlStateProvider, TableSpec


class SqlBackend:
    """One throwaway database, and providers reading it through counted connections."""

    name: str
    placeholder: str
    blob_type: str
    slow_view: str  # a SELECT that takes far longer than any test's timeout_s
    url: str

    def __init__(self) -> None:
        self.statements: list[str] = []
        self.connections = 0

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        raise NotImplementedError

    def table(self, name: str) -> str:
        """How a provider opened with :attr:`url` names ``name`` (PostgreSQL: schema-qualified)."""
        return name

    def create(self, name: str, columns: str, rows: Sequence[Sequence[Any]] = ()) -> None:
        self.execute(f"CREATE TABLE {name} ({columns})")
        for row in rows:
            marks = ", ".join([self.placeholder] * len(row))
            self.execute(f"INSERT INTO {name} VALUES ({marks})", row)

    def provider(
        self, tables: Mapping[str, TableSpec | str], *, timeout_s: float | None = None
    ) -> SqlStateProvider:
        raise NotImplementedError

    def lock(self, name: str) -> contextlib.AbstractContextManager[None]:
        """Hold a lock that keeps readers of table ``name`` waiting."""
        raise NotImplementedError

    def row_queries(self) -> list[str]:
        """Statements that read rows (not the one-off column checks)."""
        return [s for s in self.statements if s.startswith("SELECT") and " WHERE " in s]

    def column_checks(self) -> list[str]:
        return [s for s in self.statements if s.endswith("LIMIT 0")]


class SqliteBackend(SqlBackend):
    name = "sqlite"
    placeholder = "?"
    blob_type = "BLOB"
    slow_view = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) "
        "SELECT 'a' AS account_id, max(x) AS plan FROM c"
    )

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.url = f"sqlite:///{path}"
        self.admin = sqlite3.connect(path, isolation_level=None)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.admin.execute(sql, tuple(params))

    def connect(self) -> sqlite3.Connection:
        self.connections += 1
        conn = sqlite3.connect(self.path, check_same_thread=False)
        conn.set_trace_callback(self.statements.append)
        return conn

    def provider(
        self, tables: Mapping[str, TableSpec | str], *, timeout_s: float | None = None
    ) -> SqlStateProvider:
        return SqlStateProvider(self.connect, tables, timeout_s=timeout_s, name="test-sqlite")

    @contextlib.contextmanager
    def lock(self, name: str) -> Iterator[None]:
        holder = sqlite3.connect(self.path, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            holder.execute("ROLLBACK")
            holder.close()

    def close(self) -> None:
        self.admin.close()


class PostgresBackend(SqlBackend):
    name = "postgresql"
    placeholder = "%s"
    blob_type = "BYTEA"
    slow_view = "SELECT 'a'::text AS account_id, (SELECT 'x' FROM pg_sleep(30)) AS plan"

    def __init__(self, url: str) -> None:
        import psycopg

        super().__init__()
        self.psycopg = psycopg
        self.schema = f"maitred_test_{uuid.uuid4().hex[:12]}"
        self.url = url
        self.admin = psycopg.connect(url, autocommit=True)
        self.admin.execute(f"CREATE SCHEMA {self.schema}")
        self.admin.execute(f"SET search_path TO {self.schema}")
        statements = self.statements

        class CountingConnection(psycopg.Connection):
            def execute(self, query: Any, params: Any = None, **kw: Any) -> Any:
                statements.append(str(query))
                return super().execute(query, params, **kw)

        self.connection_class = CountingConnection

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.admin.execute(sql, tuple(params))

    def table(self, name: str) -> str:
        return f"{self.schema}.{name}"

    def connect(self) -> Any:
        self.connections += 1
        return self.connection_class.connect(self.url, options=f"-c search_path={self.schema}")

    def provider(
        self, tables: Mapping[str, TableSpec | str], *, timeout_s: float | None = None
    ) -> SqlStateProvider:
        return SqlStateProvider(
            self.connect, tables, timeout_s=timeout_s, dialect="postgresql", name="test-postgres"
        )

    @contextlib.contextmanager
    def lock(self, name: str) -> Iterator[None]:
        holder = self.psycopg.connect(self.url)
        holder.execute(f"LOCK TABLE {self.schema}.{name} IN ACCESS EXCLUSIVE MODE")
        try:
            yield
        finally:
            holder.rollback()
            holder.close()

    def close(self) -> None:
        self.admin.execute(f"DROP SCHEMA {self.schema} CASCADE")
        self.admin.close()


@pytest.fixture(scope="session")
def postgres_url(pg_server: str) -> str:
    """The shared PostgreSQL server (see tests/conftest.py)."""
    return pg_server


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ]
)
def sql_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlBackend]:
    backend: SqliteBackend | PostgresBackend
    if request.param == "sqlite":
        backend = SqliteBackend(tmp_path / "state.db")
    else:
        backend = PostgresBackend(request.getfixturevalue("postgres_url"))
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture
def postgres_backend(postgres_url: str) -> Iterator[PostgresBackend]:
    backend = PostgresBackend(postgres_url)
    try:
        yield backend
    finally:
        backend.close()
