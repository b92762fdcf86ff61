"""The decision log on PostgreSQL (``postgresql://...``), for many writers and large histories.

Same tables, columns and row hashes as the SQLite log (the migrations give both dialects).
Batches are written in one transaction: snapshots with ``INSERT ... ON CONFLICT DO NOTHING``
(content-addressed), turns, pairs and action decisions with ``COPY ... FROM STDIN``, the fastest
bulk path the server has. JSON columns are ``TEXT``, not ``jsonb``: ``jsonb`` would re-serialise
the JSON and the stored bytes would no longer be the canonical text the row hash covers; queries
cast with ``::jsonb`` where they need to look inside.

A ``schema`` (keyword, or ``?schema=NAME`` in the URL) puts the tables in their own PostgreSQL
schema -- created if absent -- so several logs, or parallel tests, can share one database.
Read-only opening sets ``default_transaction_read_only`` on the session, so the server refuses
writes. psycopg is an optional dependency: install ``maitred[postgres]``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from maitred.errors import ConfigError, LogError, MissingExtraError
from maitred.log._sql import (
    DEFAULT_BATCH_PAIRS,
    DEFAULT_MAX_BATCH_SECONDS,
    Row,
    SqlLog,
    columns,
    insert_sql,
)
from maitred.log.action_rows import ACTION_DECISION_COLUMNS
from maitred.log.migrations import Dialect
from maitred.log.rows import PAIR_COLUMNS, SNAPSHOT_COLUMNS, TURN_COLUMNS

try:
    import psycopg
except ImportError:  # pragma: no cover - exercised only without the extra
    psycopg = None  # type: ignore[assignment]

_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_INSERT_SNAPSHOT = insert_sql("snapshots", SNAPSHOT_COLUMNS, on_conflict_ignore=True)
_COPY_TURNS = f"COPY turns ({columns((*TURN_COLUMNS, 'turn_seq'))}) FROM STDIN"
_NEXT_TURN_SEQS = (
    "SELECT nextval(pg_get_serial_sequence('turns', 'turn_seq')) FROM generate_series(1, %s)"
)
_COPY_PAIRS = f"COPY pairs ({columns(PAIR_COLUMNS)}) FROM STDIN"
_COPY_DECISIONS = f"COPY action_decisions ({columns(ACTION_DECISION_COLUMNS)}) FROM STDIN"


def to_pyformat(sql: str) -> str:
    """Rewrite ``?`` placeholders as psycopg's ``%s`` (escaping literal ``%``)."""
    return sql.replace("%", "%%").replace("?", "%s")


def split_url(url: str) -> tuple[str, str | None, str]:
    """Split ``url`` into (URL for the driver, ``schema`` query parameter, redacted URL)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in query if k == "schema"), None)
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    clean = urlunsplit(parts._replace(query=rest))
    netloc = parts.netloc
    if parts.password is not None:
        netloc = netloc.replace(f":{parts.password}@", ":***@", 1)
    redacted = urlunsplit(parts._replace(netloc=netloc, query=rest))
    return clean, schema, redacted


class PostgresLog(SqlLog):
    """A decision log in a PostgreSQL database (optionally in its own schema).

    Args:
        url: a libpq URL, ``postgresql://user@host:port/db`` (``?schema=NAME`` accepted).
        read_only: a read-only session; the schema must exist and be fully migrated.
        batch_pairs: buffered pair rows that trigger a batch write.
        max_batch_seconds: the longest a buffered row waits before its batch is committed.
        schema: the PostgreSQL schema for the tables (overrides ``?schema=``).

    Raises:
        MissingExtraError: psycopg is not installed.
        ConfigError: a schema name that is not a plain identifier.
        LogError: the server cannot be reached, or (read-only) the schema does not exist.
        SchemaError: the schema is newer than this maitred, or needs migrating read-only.
    """

    dialect: Dialect = "postgres"

    def __init__(
        self,
        url: str,
        *,
        read_only: bool = False,
        batch_pairs: int = DEFAULT_BATCH_PAIRS,
        max_batch_seconds: float = DEFAULT_MAX_BATCH_SECONDS,
        schema: str | None = None,
    ) -> None:
        if psycopg is None:
            raise MissingExtraError("the PostgreSQL decision log", "postgres", "psycopg[binary]")
        dsn, url_schema, redacted = split_url(url)
        self.schema = schema or url_schema
        where = redacted + (f" (schema {self.schema})" if self.schema else "")
        super().__init__(
            where,
            read_only=read_only,
            batch_pairs=batch_pairs,
            max_batch_seconds=max_batch_seconds,
        )
        self._dsn = dsn
        self._reader: Any = None  # sessions' reads (see _session_query)
        self._reader_lock = threading.Lock()
        try:
            self._conn = psycopg.connect(dsn, autocommit=True)
        except psycopg.Error as exc:
            raise LogError(
                f"cannot connect to the decision log at {redacted}: {exc}; is the server "
                "running, and are the host, port, database and user right?"
            ) from exc
        try:
            if read_only:
                self.execute("SET default_transaction_read_only = on")
            if self.schema is not None:
                self._use_schema(self.schema)
        except BaseException:
            self._conn.close()
            raise
        self._migrate()

    def _use_schema(self, schema: str) -> None:
        if not _SCHEMA_NAME.match(schema):
            raise ConfigError(
                f"PostgreSQL schema name {schema!r} for the decision log is not a plain "
                "identifier; use letters, digits and underscores (at most 63, not starting "
                "with a digit)"
            )
        if self.read_only:
            if not self.query("SELECT 1 FROM pg_namespace WHERE nspname = ?", (schema,)):
                raise LogError(
                    f"no decision log at {self.location}: schema {schema!r} does not exist; "
                    "check the schema name"
                )
        else:
            # replicas starting together on a new schema: CREATE SCHEMA IF NOT EXISTS alone
            # races (both see no schema, one fails on pg_namespace's unique index)
            with self.transaction():
                self.execute("SELECT pg_advisory_xact_lock(hashtext(?))", (f"maitred:{schema}",))
                self.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        self.execute(f'SET search_path TO "{schema}"')

    # -- backend hooks ------------------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        """Run one statement (``?`` placeholders); server errors become LogError."""
        with self._lock:  # one statement at a time: the flusher thread shares it
            try:
                if params is None:
                    self._conn.execute(sql)
                else:
                    self._conn.execute(to_pyformat(sql), params)
            except psycopg.Error as exc:
                raise LogError(f"decision log {self.location}: {exc}") from exc

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Run a query (``?`` placeholders) and return every row; errors become LogError."""
        with self._lock:  # one statement at a time: the flusher thread shares it
            try:
                cur = self._conn.execute(to_pyformat(sql), params)
                return cur.fetchall()
            except psycopg.Error as exc:
                raise LogError(f"decision log {self.location}: {exc} (in: {sql[:200]})") from exc

    def table_exists(self, name: str) -> bool:
        """Whether the current schema has a table of that name."""
        return bool(
            self.query(
                "SELECT 1 FROM information_schema.tables "
                "WHERE table_schema = current_schema() AND table_name = ?",
                (name,),
            )
        )

    def tables(self) -> list[str]:
        """Every table and view of the current schema, by name."""
        rows = self.query(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema() ORDER BY table_name"
        )
        return [str(r[0]) for r in rows]

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A server transaction: commit on success, roll back on any exception."""
        try:
            with self._conn.transaction():
                yield
        except psycopg.Error as exc:
            raise LogError(f"decision log {self.location}: {exc}") from exc

    @contextmanager
    def _read_transaction(self) -> Iterator[None]:
        """A ``REPEATABLE READ`` transaction: every query in it sees one snapshot."""
        try:
            with self._conn.transaction():
                self._conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                yield
        except psycopg.Error as exc:
            raise LogError(f"decision log {self.location}: {exc}") from exc

    def _insert_batch(self, snapshots: list[Row], turns: list[Row], pairs: list[Row]) -> None:
        try:
            with self._conn.cursor() as cur:
                if snapshots:
                    cur.executemany(to_pyformat(_INSERT_SNAPSHOT), snapshots)
                with cur.copy(_COPY_TURNS) as copy:
                    for row in turns:
                        copy.write_row(row)
                with cur.copy(_COPY_PAIRS) as copy:
                    for row in pairs:
                        copy.write_row(row)
        except psycopg.Error as exc:
            raise LogError(str(exc)) from exc

    def _turn_seqs(self, n: int) -> list[int]:
        """The next ``n`` session-order positions, from ``turns.turn_seq``'s sequence."""
        try:
            return [int(r[0]) for r in self._conn.execute(_NEXT_TURN_SEQS, (n,)).fetchall()]
        except psycopg.Error as exc:
            raise LogError(str(exc)) from exc

    def _insert_rows(self, table: str, names: Sequence[str], rows: list[Row]) -> None:
        try:
            with (
                self._conn.cursor() as cur,
                cur.copy(f"COPY {table} ({columns(names)}) FROM STDIN") as copy,
            ):
                for row in rows:
                    copy.write_row(row)
        except psycopg.Error as exc:
            raise LogError(str(exc)) from exc

    def _insert_decisions(self, rows: list[Row]) -> None:
        try:
            with self._conn.cursor() as cur, cur.copy(_COPY_DECISIONS) as copy:
                for row in rows:
                    copy.write_row(row)
        except psycopg.Error as exc:
            raise LogError(str(exc)) from exc

    def _session_query(self, sql: str, params: Sequence[Any]) -> list[Row]:
        """On a second connection (autocommit: each read sees every committed transaction),
        so a session read does not queue behind this log's commit in flight."""
        with self._reader_lock:
            try:
                if self._reader is None:
                    reader = psycopg.connect(self._dsn, autocommit=True)
                    if self.schema is not None:
                        reader.execute(f'SET search_path TO "{self.schema}"')
                    self._reader = reader
                return list(self._reader.execute(to_pyformat(sql), params).fetchall())
            except psycopg.Error as exc:
                if self._reader is not None and self._reader.closed:
                    self._reader = None  # reconnect on the next read
                raise LogError(f"decision log {self.location}: {exc} (in: {sql[:200]})") from exc

    def _close_connection(self) -> None:
        with self._reader_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
        self._conn.close()
