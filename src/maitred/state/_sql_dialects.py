"""The few places where SQLite and PostgreSQL differ, for :mod:`maitred.state.sql`.

Everything else -- planning the queries, checking columns, converting rows -- is one code
path. A dialect knows: its parameter placeholder, the statement that opens a consistent
read-only transaction, how to put a time limit on a connection, which exceptions its driver
raises, and which of those mean "out of time". Connections are put in autocommit mode when they
are prepared, so the transaction is opened and closed by explicit statements, identically for
both drivers. A dialect also reads a table's declared column types (:meth:`Dialect.column_types`),
and :func:`open_url` turns a database URL into a connection factory.
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Final, Literal
from urllib.parse import quote, urlsplit, urlunsplit

from maitred.errors import ConfigError, MissingExtraError
from maitred.state.schema import StateType, postgres_type, sqlite_type

DialectName = Literal["sqlite", "postgresql"]

# sqlite3 primary result codes that mean "waited for a lock" or "stopped by our deadline".
_SQLITE_BUSY: Final = 5
_SQLITE_LOCKED: Final = 6
_SQLITE_INTERRUPT: Final = 9
_PROGRESS_STEPS: Final = 1000  # virtual-machine steps between two deadline checks


class Dialect:
    """What one database needs; subclasses fill in the differences."""

    name: ClassVar[DialectName]
    placeholder: ClassVar[str]
    begin: ClassVar[str]
    timeout_mechanism: ClassVar[str]

    def errors(self) -> tuple[type[BaseException], ...]:
        """The driver's exception base classes (what becomes a ProviderError)."""
        raise NotImplementedError

    def prepare(self, conn: Any, timeout_s: float | None) -> None:
        """Set a fresh connection up: autocommit, and the session time limit if any."""
        raise NotImplementedError

    def arm(self, conn: Any, timeout_s: float | None) -> None:
        """Start a per-read deadline (where the session limit alone is not enough)."""

    def disarm(self, conn: Any) -> None:
        """Remove what :meth:`arm` set."""

    def is_timeout(self, exc: BaseException) -> bool:
        """Whether ``exc`` means the database ran out of the time it was given."""
        raise NotImplementedError

    def column_types(self, conn: Any, quoted_table: str, description: Any) -> dict[str, StateType]:
        """Column -> state type, from the declared column types (``description``: the cursor
        description of a ``SELECT * ... LIMIT 0`` of the table, names in table order)."""
        raise NotImplementedError


class SqliteDialect(Dialect):
    """stdlib :mod:`sqlite3`.

    ``timeout_s`` is both the busy timeout (how long to wait for a writer's lock) and a
    deadline on each read, enforced with a progress handler that interrupts a slow statement.
    """

    name = "sqlite"
    placeholder = "?"
    begin = "BEGIN"
    timeout_mechanism = "SQLite busy timeout and read deadline"

    def errors(self) -> tuple[type[BaseException], ...]:
        return (sqlite3.Error,)

    def prepare(self, conn: Any, timeout_s: float | None) -> None:
        conn.isolation_level = None  # autocommit: we BEGIN and ROLLBACK ourselves
        if timeout_s is not None:
            conn.execute(f"PRAGMA busy_timeout = {_millis(timeout_s)}")

    def arm(self, conn: Any, timeout_s: float | None) -> None:
        if timeout_s is None:
            return
        deadline = time.monotonic() + timeout_s
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), _PROGRESS_STEPS)

    def disarm(self, conn: Any) -> None:
        conn.set_progress_handler(None, 0)

    def is_timeout(self, exc: BaseException) -> bool:
        code = getattr(exc, "sqlite_errorcode", None)
        if isinstance(code, int):
            return (code & 0xFF) in (_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_INTERRUPT)
        text = str(exc)
        return isinstance(exc, sqlite3.OperationalError) and (
            "locked" in text or "interrupted" in text
        )

    def column_types(self, conn: Any, quoted_table: str, description: Any) -> dict[str, StateType]:
        schema, _, table = quoted_table.rpartition(".")
        pragma = f"PRAGMA {schema + '.' if schema else ''}table_info({table})"
        declared = {str(row[1]): str(row[2] or "") for row in conn.execute(pragma).fetchall()}
        names = [str(column[0]) for column in description or ()]
        return {name: sqlite_type(declared.get(name, "")) for name in names}


class PostgresDialect(Dialect):
    """PostgreSQL through psycopg 3 (the ``postgres`` extra).

    ``timeout_s`` becomes the session's ``statement_timeout`` (each statement, lock waits
    included); reads run in a ``REPEATABLE READ READ ONLY`` transaction so every table of one
    fetch is read from the same database snapshot.
    """

    name = "postgresql"
    placeholder = "%s"
    begin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
    timeout_mechanism = "PostgreSQL statement_timeout"

    def __init__(self) -> None:
        self.psycopg = import_psycopg()

    def errors(self) -> tuple[type[BaseException], ...]:
        return (self.psycopg.Error,)

    def prepare(self, conn: Any, timeout_s: float | None) -> None:
        conn.autocommit = True
        if timeout_s is not None:
            conn.execute(
                "SELECT set_config('statement_timeout', %s, false)", (f"{_millis(timeout_s)}ms",)
            )

    def is_timeout(self, exc: BaseException) -> bool:
        errors = self.psycopg.errors
        if isinstance(exc, (errors.QueryCanceled, errors.LockNotAvailable)):
            return True
        return isinstance(exc, self.psycopg.OperationalError) and "timeout" in str(exc).lower()

    def column_types(self, conn: Any, quoted_table: str, description: Any) -> dict[str, StateType]:
        out: dict[str, StateType] = {}
        for column in description or ():
            info = conn.adapters.types.get(column.type_code)  # arrays map to their element
            if info is None:
                name = ""
            elif column.type_code == info.array_oid:
                name = f"_{info.name}"
            else:
                name = info.name
            out[str(column.name)] = postgres_type(name, column.scale)
        return out

    def connect(self, url: str, timeout_s: float | None) -> Any:
        """Open a connection to ``url`` (libpq's connect_timeout is whole seconds, at least 2)."""
        extra: dict[str, Any] = {}
        if timeout_s is not None:
            extra["connect_timeout"] = max(2, math.ceil(timeout_s))
        return self.psycopg.connect(url, autocommit=True, **extra)


def import_psycopg() -> Any:
    """psycopg 3, or a MissingExtraError naming the install command."""
    try:
        import psycopg
    except ImportError:
        raise MissingExtraError(
            "the PostgreSQL state provider", "postgres", "psycopg[binary]"
        ) from None
    return psycopg


def dialect_named(name: DialectName) -> Dialect:
    """The dialect for ``name``."""
    return SqliteDialect() if name == "sqlite" else PostgresDialect()


def detect(conn: Any) -> DialectName | None:
    """Which dialect a connection object belongs to, from its type; None if unknown."""
    if isinstance(conn, sqlite3.Connection):
        return "sqlite"
    if type(conn).__module__.split(".")[0] == "psycopg":
        return "postgresql"
    return None


ConnectionFactory = Callable[[], Any]
"""Returns a new DB-API connection (``sqlite3.Connection`` or ``psycopg.Connection``)."""


def open_url(url: str, timeout_s: float | None) -> tuple[ConnectionFactory, Dialect, str]:
    """(factory, dialect, display name) for a database URL."""
    scheme = url.partition(":")[0].lower()
    if scheme == "sqlite":
        return open_sqlite(url, timeout_s)
    if scheme in ("postgresql", "postgres"):
        dialect = PostgresDialect()
        return (lambda: dialect.connect(url, timeout_s)), dialect, redact(url)
    raise ConfigError(
        f"SQL state provider: unsupported database URL {redact(url)!r}; use "
        "sqlite:///path/to.db or postgresql://user@host:port/db"
    )


def open_sqlite(url: str, timeout_s: float | None) -> tuple[ConnectionFactory, Dialect, str]:
    prefix = "sqlite:///"
    raw = url[len(prefix) :] if url.startswith(prefix) else ""
    if not raw or raw.startswith(":memory:") or "?" in raw:
        raise ConfigError(
            f"SQL state provider: {url!r} does not name a SQLite database file; write "
            "sqlite:///relative/path.db or sqlite:////absolute/path.db (an in-memory database "
            "is private to one connection: pass a connection factory instead)"
        )
    path = Path(raw).resolve()
    if not path.is_file():
        raise ConfigError(
            f"SQL state provider: no SQLite database at {str(path)!r} (from {url!r}); "
            "check the path (state databases are opened read-only and never created)"
        )
    uri = f"file:{quote(str(path))}?mode=ro"
    busy = 5.0 if timeout_s is None else timeout_s

    def connect() -> sqlite3.Connection:
        return sqlite3.connect(uri, uri=True, timeout=busy, check_same_thread=False)

    return connect, SqliteDialect(), url


def redact(url: str) -> str:
    """``url`` without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rpartition("@")[2]
    user = f"{parts.username}:***@" if parts.username else ""
    return urlunsplit(parts._replace(netloc=user + netloc))


def _millis(seconds: float) -> int:
    return max(1, round(seconds * 1000))
