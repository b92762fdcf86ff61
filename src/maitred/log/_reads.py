"""The read half of a SQL decision log: runs, turns, snapshots, decisions, sessions.

:class:`SqlReads` is mixed into :class:`~maitred.log._sql.SqlLog`; it reads through the backend's
``query`` (``?`` placeholders). Every read of a writable log first flushes the buffer, so a
reader sees what was written before it -- except inside :meth:`SqlReads.read_snapshot`, where
one read transaction is held (what ``verify`` needs) and nothing may commit, and except the
session reads (:meth:`SqlReads.committed_turn`, :meth:`SqlReads.committed_offer`), which read
*committed* rows only, on a connection of their own (:mod:`maitred.log.offers`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Literal

from maitred.errors import LogError
from maitred.log.action_rows import ACTION_DECISION_COLUMNS
from maitred.log.migrations import Dialect
from maitred.log.offers import (
    EXPOSED_SQL,
    CommittedOffer,
    disclosed_sql,
    latest_turn_sql,
    unchained_turn,
)
from maitred.log.rows import (
    DEPTH_COLUMNS,
    PAIR_COLUMNS,
    RUN_COLUMNS,
    SNAPSHOT_COLUMNS,
    TURN_COLUMNS,
    decode_run,
    decode_snapshot,
)
from maitred.log.storable import text_fault
from maitred.records import RunInfo
from maitred.state.snapshot import Snapshot

_PAGE = 500

Row = tuple[Any, ...]
#: the order :meth:`SqlReads.iter_turns` yields a run's turns in
TurnOrder = Literal["time", "chain"]


def columns(names: Sequence[str], alias: str = "") -> str:
    """A column list, optionally qualified by a table alias."""
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + n for n in names)


class SqlReads:
    """Reads over a SQL decision log (see the module docstring)."""

    location: str
    dialect: Dialect
    read_only: bool
    _closed: bool
    _in_snapshot: bool
    _lock: threading.RLock

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Run a query (``?`` placeholders) and return every row; errors become LogError."""
        raise NotImplementedError

    def flush(self) -> None:
        """Commit what was written before the call."""
        raise NotImplementedError

    def _before_read(self) -> None:
        if self._closed:
            raise LogError(f"read: the decision log at {self.location} is closed")
        if not self.read_only and not self._in_snapshot:
            self.flush()

    @contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """Every read inside sees one consistent state of the log (what ``verify`` walks).

        The buffer is flushed first; then one read transaction is held (SQLite: ``BEGIN``,
        whose first read fixes the snapshot; PostgreSQL: ``REPEATABLE READ``) together with
        the connection lock, so this log's own commits wait and other writers' commits are
        not seen until it ends.
        """
        if not self.read_only:
            self.flush()
        with self._lock:
            self._in_snapshot = True
            try:
                with self._read_transaction():
                    yield
            finally:
                self._in_snapshot = False

    def _read_transaction(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def runs(self) -> list[RunInfo]:
        """Every run in the log, oldest first."""
        self._before_read()
        rows = self.query(f"SELECT {columns(RUN_COLUMNS)} FROM runs ORDER BY started_at, run_id")
        return [decode_run(dict(zip(RUN_COLUMNS, r, strict=True))) for r in rows]

    def iter_turns(
        self, run_id: str | None = None, *, order: TurnOrder = "time"
    ) -> Iterator[dict[str, Any]]:
        """Stored turns with their pairs, run by run.

        ``order="time"``: each run in ``(ts, turn_id)`` order. ``order="chain"`` (what
        ``verify`` walks): each run's chained turns by ``chain_seq``, then its turns from before
        the chain in ``(ts, turn_id)`` order; each turn also carries ``"depth_hash"``, the
        ``row_hash`` of its ``depth_decisions`` row or None.
        """
        self._before_read()
        run_ids = [run_id] if run_id is not None else [r.run_id for r in self.runs()]
        for rid in run_ids:
            if order == "chain":
                yield from self._pages_of_run(rid, "chain_seq IS NOT NULL", ("chain_seq",))
                yield from self._pages_of_run(rid, "chain_seq IS NULL", ("ts", "turn_id"))
            else:
                yield from self._pages_of_run(rid, "", ("ts", "turn_id"))

    def _pages_of_run(
        self, run_id: str, condition: str, key: tuple[str, ...]
    ) -> Iterator[dict[str, Any]]:
        """A run's turns matching ``condition``, with pairs, paged in ``key`` order."""
        select = f"SELECT {columns(TURN_COLUMNS)} FROM turns WHERE run_id = ?"
        select += f" AND {condition}" if condition else ""
        order = f"ORDER BY {', '.join(key)} LIMIT {_PAGE}"
        after = f"({', '.join(key)}) > ({', '.join('?' for _ in key)})"
        rows = self.query(f"{select} {order}", (run_id,))
        with_depth = key == ("chain_seq",)
        while rows:
            turns = self._with_pairs([dict(zip(TURN_COLUMNS, r, strict=True)) for r in rows])
            if with_depth:
                self._add_depth_hashes(turns)
            yield from turns
            last = turns[-1]
            rows = self.query(f"{select} AND {after} {order}", (run_id, *(last[k] for k in key)))

    def _with_pairs(self, turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
        by_id = {t["turn_id"]: t for t in turns}
        for t in turns:
            t["pairs"] = []
        marks = ", ".join("?" for _ in by_id)
        pair_rows = self.query(
            f"SELECT {columns(PAIR_COLUMNS)} FROM pairs WHERE turn_id IN ({marks}) "
            "ORDER BY turn_id, rank, skill",
            list(by_id),
        )
        for p in pair_rows:
            pair = dict(zip(PAIR_COLUMNS, p, strict=True))
            pair["visible"] = stored_bool(pair["visible"], "pairs.visible")
            pair["exposed"] = stored_bool(pair["exposed"], "pairs.exposed")
            by_id[pair["turn_id"]]["pairs"].append(pair)
        return turns

    def _add_depth_hashes(self, turns: list[dict[str, Any]]) -> None:
        marks = ", ".join("?" for _ in turns)
        found: dict[str, str] = dict(
            self.query(
                f"SELECT turn_id, row_hash FROM depth_decisions WHERE turn_id IN ({marks})",
                [t["turn_id"] for t in turns],
            )
        )
        for t in turns:
            t["depth_hash"] = found.get(t["turn_id"])

    def snapshot(self, hash: str) -> Snapshot | None:
        """The snapshot stored under ``hash``, or None."""
        self._before_read()
        rows = self.query(
            f"SELECT {columns(SNAPSHOT_COLUMNS)} FROM snapshots WHERE hash = ?", (hash,)
        )
        if not rows:
            return None
        return decode_snapshot(dict(zip(SNAPSHOT_COLUMNS, rows[0], strict=True)))

    def iter_depth_decisions(self) -> Iterator[dict[str, Any]]:
        """Stored depth-decision rows, in turn-id order."""
        self._before_read()
        yield from self._pages("depth_decisions", DEPTH_COLUMNS, "turn_id")

    def _pages(self, table: str, names: Sequence[str], key: str) -> Iterator[dict[str, Any]]:
        """Every row of ``table`` as a dict, paged in ``key`` order (``key`` is unique)."""
        select = f"SELECT {columns(names)} FROM {table}"
        position = list(names).index(key)
        rows = self.query(f"{select} ORDER BY {key} LIMIT {_PAGE}")
        while rows:
            for r in rows:
                yield dict(zip(names, r, strict=True))
            rows = self.query(
                f"{select} WHERE {key} > ? ORDER BY {key} LIMIT {_PAGE}", (rows[-1][position],)
            )

    def iter_action_decisions(self, session_id: str | None = None) -> Iterator[dict[str, Any]]:
        """Stored action-decision rows (all, or one session's), in decision-id order.

        Values are as stored (``decision_json`` as text, ``mutates`` as a bool).
        """
        self._before_read()
        select = f"SELECT {columns(ACTION_DECISION_COLUMNS)} FROM action_decisions"
        where = [] if session_id is None else ["session_id = ?"]
        params: list[Any] = [] if session_id is None else [session_id]
        last: str | None = None
        while True:
            conds = [*where, "decision_id > ?"] if last is not None else where
            clause = f" WHERE {' AND '.join(conds)}" if conds else ""
            args = [*params, last] if last is not None else params
            rows = self.query(f"{select}{clause} ORDER BY decision_id LIMIT {_PAGE}", args)
            for r in rows:
                row = dict(zip(ACTION_DECISION_COLUMNS, r, strict=True))
                row["mutates"] = bool(row["mutates"])
                yield row
            if len(rows) < _PAGE:
                return
            last = str(rows[-1][0])

    # -- sessions (see maitred.log.offers) ----------------------------------------------------

    def committed_turn(self, tenant: str, session_id: str) -> str | None:
        """The id of the session's latest committed turn (None: it has none).

        Reads committed rows only (it neither flushes nor sees the buffer): one index probe,
        on a connection of its own, so it does not queue behind a commit in flight.
        """
        if self._closed:
            raise LogError(f"read: the decision log at {self.location} is closed")
        rows = self._latest_chained(tenant, session_id, with_account=False)
        return str(rows[0][0]) if rows else None

    def _latest_chained(self, tenant: str, session_id: str, *, with_account: bool) -> list[Row]:
        """The session's latest committed turn that is chained (:mod:`maitred.log.offers`): in
        one probe, unless the latest turn is not chained -- then it is reported and skipped."""
        params = (tenant, session_id)
        rows = self._committed_rows(
            latest_turn_sql(self.dialect, with_account=with_account, chained=False), params
        )
        if rows and not rows[0][-1]:
            unchained_turn(str(rows[0][0]), tenant, session_id)
            rows = self._committed_rows(
                latest_turn_sql(self.dialect, with_account=with_account), params
            )
        return rows

    def has_turn(self, turn_id: str) -> bool:
        """Whether the turn is committed to the log (on the sessions' reader connection)."""
        if self._closed:
            raise LogError(f"read: the decision log at {self.location} is closed")
        return bool(self._committed_rows("SELECT 1 FROM turns WHERE turn_id = ?", (turn_id,)))

    def committed_offer(self, tenant: str, session_id: str) -> CommittedOffer | None:
        """What the session's latest committed turn offered (None: the session has no turn)."""
        if self._closed:
            raise LogError(f"read: the decision log at {self.location} is closed")
        rows = self._latest_chained(tenant, session_id, with_account=True)
        if not rows:
            return None
        turn_id, account = str(rows[0][0]), str(rows[0][1])
        skills = self._committed_rows(EXPOSED_SQL, (turn_id, True))  # a committed turn's pairs
        offered = frozenset(str(r[0]) for r in skills)
        return CommittedOffer(tenant, session_id, turn_id, account, offered)

    def disclosed(self, tenant: str, session_id: str, account: str) -> dict[str, str]:
        """Every tool the session's committed turns for ``account`` exposed, with the latest
        turn that exposed it (a session whose turns disclose, :mod:`maitred.log.offers`);
        committed rows only."""
        if self._closed:
            raise LogError(f"read: the decision log at {self.location} is closed")
        params = (tenant, session_id, account, True)
        rows = self._committed_rows(disclosed_sql(self.dialect), params)
        found: dict[str, str] = {}
        for skill, turn_id, chained in rows:
            if not chained:  # never an offer: reported, skipped
                unchained_turn(str(turn_id), tenant, session_id)
                continue
            found[str(skill)] = str(turn_id)  # the last turn wins
        return found

    def _committed_rows(self, sql: str, params: Sequence[Any]) -> list[Row]:
        """:meth:`_session_query`, but no query at all for an id no row can hold (a NUL or a
        lone surrogate, :mod:`maitred.log.storable`): nothing matches it, and neither driver
        could send it (PostgreSQL refuses a NUL in ``text``, neither encodes a lone surrogate)
        -- a caller's bad session id is then refused where its row is written, alike on both
        backends, not as a database error here."""
        if any(type(p) is str and text_fault(p) for p in params):
            return []
        return self._session_query(sql, params)

    def _session_query(self, sql: str, params: Sequence[Any]) -> list[Row]:
        """A read of committed rows that never waits for this log's commit in flight (the
        backends read sessions on a second connection); here, the log's own connection."""
        return self.query(sql, params)

    def iter_snapshots(self) -> Iterator[dict[str, Any]]:
        """Every stored snapshot row, in hash order."""
        self._before_read()
        yield from self._pages("snapshots", SNAPSHOT_COLUMNS, "hash")


def stored_bool(value: Any, column: str) -> bool:
    """A boolean column's stored value as read back: ``True``/``False`` (PostgreSQL) or exactly
    ``1``/``0`` (SQLite, which keeps whatever integer it is given).

    Raises:
        ValueError: any other value: the row was edited outside maitred. It is never read as
            its truth value, since the checks that select by the column (``exposed = 1``)
            would not see it as the hash chain, which hashes the truth value, does.
    """
    if value is True or value is False or (type(value) is int and value in (0, 1)):
        return bool(value)
    raise ValueError(f"{column} holds {value!r}, not a boolean")
