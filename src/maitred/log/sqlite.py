"""The default decision-log backend: one SQLite file in WAL mode.

Why these settings:

* ``journal_mode=WAL`` lets readers (analytics, ``verify``) run while a writer appends, and
  makes each commit one sequential append to the ``-wal`` file; it is set only after the file
  is known to be a log (a refused database keeps its own journal mode);
* ``synchronous=NORMAL`` syncs at checkpoints rather than at every commit: a power cut can lose
  the last batches, never corrupt the file -- the right trade for a log written in batches;
* writes are batched (:mod:`maitred.log._sql`): one ``BEGIN IMMEDIATE`` ... ``COMMIT`` with an
  ``executemany`` per table for every ``batch_pairs`` pair rows, which is what makes
  >= 100k pair rows/s possible from Python.

Read-only opening uses a ``file:...?mode=ro`` URI plus ``PRAGMA query_only``, so SQLite itself
refuses any write, and never creates a missing file.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.request import pathname2url

from maitred.errors import LogError
from maitred.log._sql import DEFAULT_BATCH_PAIRS, DEFAULT_MAX_BATCH_SECONDS, Row, SqlLog, insert_sql
from maitred.log.action_rows import ACTION_DECISION_COLUMNS
from maitred.log.migrations import Dialect
from maitred.log.rows import PAIR_COLUMNS, SNAPSHOT_COLUMNS, TURN_COLUMNS

_BUSY_TIMEOUT_S = 30.0
_INSERT_SNAPSHOT = insert_sql("snapshots", SNAPSHOT_COLUMNS, on_conflict_ignore=True)
_INSERT_TURN = insert_sql("turns", (*TURN_COLUMNS, "turn_seq"))
_INSERT_PAIR = insert_sql("pairs", PAIR_COLUMNS)
_INSERT_DECISION = insert_sql("action_decisions", ACTION_DECISION_COLUMNS)


class SqliteLog(SqlLog):
    """A decision log in one SQLite file.

    Args:
        path: the database file (created, with its schema, unless ``read_only``).
        read_only: open with ``mode=ro``; the file must exist and be fully migrated.
        batch_pairs: buffered pair rows that trigger a batch write.
        max_batch_seconds: the longest a buffered row waits before its batch is committed.

    Raises:
        LogError: the file cannot be opened (missing while read-only, a directory that does
            not exist, not a database).
        SchemaError: the schema is newer than this maitred, or needs migrating read-only.
    """

    dialect: Dialect = "sqlite"
    #: a file of this machine (see :attr:`maitred.Maitred.in_process`)
    in_process = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        read_only: bool = False,
        batch_pairs: int = DEFAULT_BATCH_PAIRS,
        max_batch_seconds: float = DEFAULT_MAX_BATCH_SECONDS,
    ) -> None:
        super().__init__(
            os.fspath(path),
            read_only=read_only,
            batch_pairs=batch_pairs,
            max_batch_seconds=max_batch_seconds,
        )
        self._conn = self._connect(Path(self.location))
        self._reader: sqlite3.Connection | None = None  # sessions' reads (see _session_query)
        self._reader_lock = threading.Lock()
        self._migrate()
        if not read_only:  # only once the file is known to be a log: never on a refused one
            self.execute("PRAGMA journal_mode = WAL")

    def _connect(self, path: Path) -> sqlite3.Connection:
        if self.read_only and not path.is_file():
            raise LogError(
                f"no decision log at {path}: the file does not exist; check the path (a "
                "read-only open never creates one)"
            )
        if not self.read_only and not path.parent.is_dir():
            raise LogError(
                f"cannot create the decision log {path}: directory {path.parent} does not "
                "exist; create it first"
            )
        target = f"file:{pathname2url(str(path.resolve()))}?mode=ro" if self.read_only else path
        try:
            conn = sqlite3.connect(
                target,
                uri=self.read_only,
                isolation_level=None,
                check_same_thread=False,
                timeout=_BUSY_TIMEOUT_S,
            )
            if self.read_only:
                conn.execute("PRAGMA query_only = ON")
            else:
                conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            raise LogError(
                f"cannot open the decision log {path}: {exc}; is it a SQLite database?"
            ) from exc
        return conn

    # -- backend hooks ------------------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        """Run one statement; SQLite errors become LogError naming the file."""
        with self._lock:  # one statement at a time: the flusher thread shares it
            try:
                self._conn.execute(sql, () if params is None else params)
            except sqlite3.Error as exc:
                raise LogError(f"decision log {self.location}: {exc}") from exc

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Run a query and return every row; SQLite errors become LogError naming the file."""
        with self._lock:  # one statement at a time: the flusher thread shares it
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise LogError(f"decision log {self.location}: {exc} (in: {sql[:200]})") from exc

    def table_exists(self, name: str) -> bool:
        """Whether the file has a table of that name."""
        return bool(
            self.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
        )

    def tables(self) -> list[str]:
        """Every table of the file (SQLite's own ``sqlite_*`` tables left out), by name."""
        rows = self.query(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%' "
            "ORDER BY name"
        )
        return [str(r[0]) for r in rows]

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` (takes the write lock up front) ... ``COMMIT`` / ``ROLLBACK``."""
        self.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise
        self.execute("COMMIT")

    @contextmanager
    def _read_transaction(self) -> Iterator[None]:
        """``BEGIN`` (deferred: the first read takes the snapshot) ... ``COMMIT``."""
        self.execute("BEGIN")
        try:
            yield
        finally:
            if self._conn.in_transaction:
                self._conn.execute("COMMIT")

    def _insert_batch(self, snapshots: list[Row], turns: list[Row], pairs: list[Row]) -> None:
        try:
            if snapshots:
                self._conn.executemany(_INSERT_SNAPSHOT, snapshots)
            self._conn.executemany(_INSERT_TURN, turns)
            self._conn.executemany(_INSERT_PAIR, pairs)
        except sqlite3.Error as exc:
            raise LogError(str(exc)) from exc

    def _turn_seqs(self, n: int) -> range:
        """The next ``n`` session-order positions: the rowids the turns are about to get."""
        base = int(self._conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM turns").fetchone()[0])
        return range(base + 1, base + n + 1)

    def _insert_rows(self, table: str, names: Sequence[str], rows: list[Row]) -> None:
        try:
            self._conn.executemany(insert_sql(table, names), rows)
        except sqlite3.Error as exc:
            raise LogError(str(exc)) from exc

    def _insert_decisions(self, rows: list[Row]) -> None:
        try:
            self._conn.executemany(_INSERT_DECISION, rows)
        except sqlite3.Error as exc:
            raise LogError(str(exc)) from exc

    def _session_query(self, sql: str, params: Sequence[Any]) -> list[Row]:
        """On a second, query-only connection: WAL readers see every committed transaction and
        never wait for the writer, so a session read does not queue behind a commit."""
        if self.read_only:
            return self.query(sql, params)
        with self._reader_lock:
            try:
                if self._reader is None:
                    self._reader = sqlite3.connect(
                        self.location,
                        isolation_level=None,
                        check_same_thread=False,
                        timeout=_BUSY_TIMEOUT_S,
                    )
                    self._reader.execute("PRAGMA query_only = ON")
                return self._reader.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise LogError(f"decision log {self.location}: {exc} (in: {sql[:200]})") from exc

    def _close_connection(self) -> None:
        with self._reader_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
        self._conn.close()
