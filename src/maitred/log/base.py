"""The decision-log interface and :func:`open_log`, which picks a backend by URL scheme.

Every turn the pipeline decides is written to a :class:`DecisionLog`: a run header
(:meth:`~DecisionLog.begin_run`), then one :class:`~maitred.records.TurnRecord` per message
(:meth:`~DecisionLog.write`); every action-gate decision goes in with
:meth:`~DecisionLog.write_decisions` (a log is a :class:`~maitred.actions.sink.DecisionSink`).
Writes are buffered and land in batches, one transaction each: a batch is committed when it
holds ``batch_pairs`` pair rows or when its oldest row is ``max_batch_seconds`` old (1 s by
default), whichever comes first; :meth:`~DecisionLog.flush` and :meth:`~DecisionLog.close` (or
leaving the ``with`` block) commit at once. The log is
append-only: there is no update or delete API.

Analytics, replay and ``verify`` read a log through the same interface, usually opened with
``read_only=True``, which the database itself enforces (SQLite ``mode=ro``, a PostgreSQL
session with ``default_transaction_read_only``).

Backends are found by URL scheme among the entry points of the group ``maitred.log_backends``
(the built-ins are declared in ``pyproject.toml``; see :mod:`maitred.plugins`):

* a filesystem path or ``sqlite:///path`` -> :class:`~maitred.log.sqlite.SqliteLog` (default);
* ``postgresql://...`` or ``postgres://...`` -> :class:`~maitred.log.postgres.PostgresLog`
  (needs the ``postgres`` extra).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, Literal, Protocol, runtime_checkable

import maitred.plugins as plugins
from maitred.errors import ConfigError
from maitred.log.action_rows import LoggableDecision
from maitred.log.migrations import Dialect
from maitred.log.offers import CommittedOffer
from maitred.records import RunInfo, TurnRecord
from maitred.state.snapshot import Snapshot


@runtime_checkable
class DecisionLog(Protocol):
    """An append-only store of runs, turns, candidate pairs and state snapshots.

    Attributes:
        location: where the log lives (a path, or a URL without its password), for messages.
        dialect: the SQL dialect of :meth:`query`.
        read_only: True when opened for reading; writes raise
            :class:`~maitred.errors.LogError`.
    """

    location: str
    dialect: Dialect
    read_only: bool

    def begin_run(self, info: RunInfo) -> None:
        """Record a run header; every turn written must belong to a begun run."""
        ...

    def write(self, record: TurnRecord) -> None:
        """Buffer one turn (its pairs and snapshot); it lands at the next batch or flush."""
        ...

    def flush(self) -> None:
        """Return once every row written before the call is committed.

        Concurrent callers share commits (group commit): rows another caller's commit already
        holds are waited for, not committed again.
        """
        ...

    def close(self) -> None:
        """Flush and release the connection."""
        ...

    def __enter__(self) -> DecisionLog: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def write_replays(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Append counterfactual-replay rows (see ``REPLAY_COLUMNS``), tied to logged turns."""
        ...

    def write_decisions(self, decisions: Sequence[LoggableDecision]) -> None:
        """Buffer action-gate decisions (``action_decisions``); they land with the next batch."""
        ...

    def spend(self, key: str, *, tenant: str, session_id: str, expires_at: float) -> bool:
        """Record the one use of a single-use ``requestState`` now (not batched): True the
        first time ``key`` is spent on any process sharing the log, False after."""
        ...

    def iter_depth_decisions(self) -> Iterator[dict[str, Any]]:
        """Stored depth-decision rows (per-prefix estimates of CAM-DF-like rules)."""
        ...

    def runs(self) -> list[RunInfo]:
        """Every run in the log, oldest first."""
        ...

    def iter_turns(
        self, run_id: str | None = None, *, order: Literal["time", "chain"] = "time"
    ) -> Iterator[dict[str, Any]]:
        """Stored turns (all runs, or one), each a dict of its columns plus ``"pairs"``.

        Turns come run by run, each run in ``(ts, turn_id)`` order, or with ``order="chain"``
        in hash-chain order (see :meth:`maitred.log._sql.SqlLog.iter_turns`). Column values are as
        stored (JSON columns as text; see :mod:`maitred.log.rows`), ``visible``/``exposed``
        as booleans. :func:`maitred.log.rows.decode_turn` rebuilds the ``TurnRecord``.
        """
        ...

    def snapshot(self, hash: str) -> Snapshot | None:
        """The snapshot stored under ``hash``, or None."""
        ...

    def iter_snapshots(self) -> Iterator[dict[str, Any]]:
        """Every stored snapshot row (``hash``, ``account_id``, ``as_of``, ``json``)."""
        ...

    def iter_action_decisions(self, session_id: str | None = None) -> Iterator[dict[str, Any]]:
        """Stored action-decision rows (see :mod:`maitred.log.action_rows`), by decision id."""
        ...

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run read SQL (``?`` placeholders, in :attr:`dialect`) and return every row."""
        ...

    def migrations(self) -> list[str]:
        """The names of the schema migrations recorded in the log."""
        ...

    def read_snapshot(self) -> AbstractContextManager[None]:
        """Reads inside see one consistent state (one read transaction; see ``verify``)."""
        ...

    def committed_turn(self, tenant: str, session_id: str) -> str | None:
        """The id of the session's latest committed turn (see :mod:`maitred.log.offers`)."""
        ...

    def has_turn(self, turn_id: str) -> bool:
        """Whether the turn is committed to the log."""
        ...

    def committed_offer(self, tenant: str, session_id: str) -> CommittedOffer | None:
        """What the session's latest committed turn offered, or None."""
        ...

    def disclosed(self, tenant: str, session_id: str, account: str) -> dict[str, str]:
        """Everything the session's committed turns for ``account`` exposed, each with the
        latest turn that exposed it (a session whose turns disclose; :mod:`maitred.log.offers`)."""
        ...


Opener = Callable[..., DecisionLog]


def backends() -> list[str]:
    """Every decision-log URL scheme a backend is registered for (a bare path is ``sqlite``)."""
    return plugins.names("log")


def open_log(
    url_or_path: str | os.PathLike[str],
    *,
    read_only: bool = False,
    batch_pairs: int | None = None,
    max_batch_seconds: float | None = None,
    schema: str | None = None,
) -> DecisionLog:
    """Open (creating and migrating when writable) the decision log at a path or URL.

    Args:
        url_or_path: a file path or ``sqlite:///path`` for SQLite; ``postgresql://...`` for
            PostgreSQL (a ``schema=NAME`` query parameter is accepted there too).
        read_only: open for reading only (analytics, replay, verify); the database refuses
            writes, and a log that needs a migration is refused rather than upgraded.
        batch_pairs: buffered pair rows that trigger a batch write (backend default if None).
        max_batch_seconds: the longest a written turn waits uncommitted (default 1 s): a
            background thread commits the batch then even if no further write comes.
        schema: PostgreSQL only: the schema holding the tables (created if absent).

    Returns:
        The open log; use it as a context manager so it is flushed and closed.

    Raises:
        ConfigError: an unknown URL scheme, or an option the backend does not take.
        MissingExtraError: PostgreSQL without the ``postgres`` extra installed.
        SchemaError: a log written by a newer maitred, or one needing migration read-only.
        LogError: the log cannot be opened.
    """
    location = os.fspath(url_or_path)
    scheme, sep, rest = location.partition("://")
    if not sep:
        scheme, rest = "sqlite", location
    elif scheme == "sqlite":
        location = rest
    if scheme not in backends():
        raise ConfigError(
            f"decision log {location!r}: unknown scheme {scheme!r}; choose one of "
            f"{backends()} (or give a plain file path for SQLite)"
        )
    opener: Opener = plugins.load("log", scheme, what="decision-log backend")
    options: dict[str, Any] = {"read_only": read_only}
    if batch_pairs is not None:
        options["batch_pairs"] = batch_pairs
    if max_batch_seconds is not None:
        options["max_batch_seconds"] = max_batch_seconds
    if schema is not None:
        if scheme not in ("postgres", "postgresql"):
            raise ConfigError(
                f"decision log {location!r}: `schema` is a PostgreSQL option; a SQLite log is "
                "isolated by its file path instead"
            )
        options["schema"] = schema
    return opener(location, **options)
