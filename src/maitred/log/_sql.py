"""What the SQL backends share: buffering, batching and run checks (the read queries are
:mod:`maitred.log._reads`, mixed in).

A backend subclasses :class:`SqlLog` and supplies the connection-level pieces (``execute``,
``query``, ``table_exists``, ``tables``, ``transaction``, ``_insert_batch``,
``_close_connection``). SQL here is written with ``?`` placeholders in the subset SQLite and
PostgreSQL share; the PostgreSQL backend rewrites the placeholders.

Writes: :meth:`SqlLog.write` encodes a turn (computing its row hash) and appends its rows to an
in-memory buffer; once ``batch_pairs`` pair rows (or as many turns) are waiting, or the oldest
buffered row has waited ``max_batch_seconds`` (:mod:`maitred.log._flusher`, a background
thread, so also when no further write comes), the whole buffer is inserted in one
transaction. Each ``write`` is one *unit* (:mod:`maitred.log._units`); a value no backend can
store is refused before it is buffered (:mod:`maitred.log.storable`). Action decisions
(:meth:`SqlLog.write_decisions`) are
buffered the same way and land in the same batches (no run is needed for them). Snapshots are
inserted if absent (content-addressed), and each session remembers a bounded set of hashes it
already wrote so repeats cost nothing. Several threads may write through one log; read from one
thread at a time.

**Group commit.** Two locks: the *buffer lock*, held only to append rows or take the buffer,
and the *connection lock*, held for every statement and for the whole of a commit (one
committer at a time). A commit takes the buffer and writes it while other threads keep
buffering, so the rows of every thread that wrote during a commit go in the next one together.
:meth:`SqlLog.flush` returns once everything written before it was called is committed: a
caller whose rows a commit in flight (or just finished) already holds waits for it instead of
committing alone, so N concurrent ``write`` + ``flush`` callers cost far fewer than N commits.
**A bad row fails alone.** When a commit's transaction fails, its units are committed again
one by one, each in its own transaction, re-chained on the ones that made it: a unit the
database refuses (a turn id another process wrote, say) is dropped alone, and recorded under
its number. Each thread remembers the units it wrote; its ``flush`` (or its next write) raises
the failure of *its own* unit only -- a commit shared with other callers, other tenants
included, never fails their rows or their requests. When the database itself is gone (a probe
after the failure fails too), every unit of the commit fails with that error.
"""

from __future__ import annotations

import threading
import time
import uuid
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any

from maitred.errors import ConfigError, LogError
from maitred.log._chain import ChainHeads, Head
from maitred.log._flusher import Flusher
from maitred.log._reads import Row as Row
from maitred.log._reads import SqlReads
from maitred.log._reads import columns as columns
from maitred.log._units import Unit, rechain
from maitred.log.action_rows import ACTION_DECISION_COLUMNS, LoggableDecision, encode_decision
from maitred.log.links import LINK_COLUMNS, LinkHead, genesis, link_rows
from maitred.log.migrations import Dialect, applied, migrate
from maitred.log.rows import (
    DEPTH_COLUMNS,
    RUN_COLUMNS,
    TURN_COLUMNS,
    encode_run,
    encode_snapshot,
    encode_turn,
)
from maitred.records import RunInfo, TurnRecord

DEFAULT_BATCH_PAIRS = 20_000
#: the age bound of a buffered row: a written turn is committed at most this long afterwards
DEFAULT_MAX_BATCH_SECONDS = 1.0
#: columns of the ``replays`` table (migration ``0004_replays``)
REPLAY_COLUMNS: tuple[str, ...] = (
    "replay_id",
    "turn_id",
    "cohort",
    "model",
    "pick_gated",
    "pick_all",
    "picked_blocked",
    "error",
    "ts",
)
_SEEN_SNAPSHOTS_MAX = 100_000
#: failed commits remembered for the flushes that wait on them
_FAILURES_KEPT = 4096
#: a thread's unflushed unit list is pruned of settled, successful units at this length
_MINE_PRUNE = 256


def _insert_depth_sql() -> str:
    marks = ", ".join("?" for _ in DEPTH_COLUMNS)
    return f"INSERT INTO depth_decisions ({', '.join(DEPTH_COLUMNS)}) VALUES ({marks})"


_INSERT_DEPTH = _insert_depth_sql()
_INSERT_HEAD = "INSERT INTO chain_heads (run_id, chain_seq, head_hash) VALUES (?, ?, ?)"
_INSERT_LINK_HEAD = "INSERT INTO link_heads (stream, seq, link_hash) VALUES (?, ?, ?)"
_INSERT_SPENT = (
    "INSERT INTO spent_states (state_key, tenant, session_id, claim, spent_at, expires_at) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)
_DECISION_HASH = ACTION_DECISION_COLUMNS.index("decision_hash")
_ROW_HASH = TURN_COLUMNS.index("row_hash")


def insert_sql(table: str, names: Sequence[str], *, on_conflict_ignore: bool = False) -> str:
    """An ``INSERT`` with ``?`` placeholders (``ON CONFLICT DO NOTHING`` if asked)."""
    marks = ", ".join("?" for _ in names)
    tail = " ON CONFLICT DO NOTHING" if on_conflict_ignore else ""
    return f"INSERT INTO {table} ({columns(names)}) VALUES ({marks}){tail}"


class SqlLog(SqlReads):
    """The backend-independent half of a SQL decision log (see the module docstring)."""

    dialect: Dialect
    location: str
    read_only: bool

    def __init__(
        self,
        location: str,
        *,
        read_only: bool,
        batch_pairs: int,
        max_batch_seconds: float = DEFAULT_MAX_BATCH_SECONDS,
    ) -> None:
        if batch_pairs < 1:
            raise ConfigError(
                f"decision log {location}: batch_pairs must be at least 1 (got {batch_pairs}); "
                f"pass the number of pair rows to buffer per transaction (default "
                f"{DEFAULT_BATCH_PAIRS})"
            )
        if not max_batch_seconds > 0 or max_batch_seconds == float("inf"):
            raise ConfigError(
                f"decision log {location}: max_batch_seconds must be a positive number of "
                f"seconds (got {max_batch_seconds}); it bounds how long a written turn may wait "
                f"uncommitted (default {DEFAULT_MAX_BATCH_SECONDS})"
            )
        self.location = location
        self.read_only = read_only
        self.batch_pairs = batch_pairs
        self._lock = threading.RLock()  # the connection: statements, and a commit's whole time
        self._buf = threading.Lock()  # the buffers, chain heads and the counters below
        self._flusher = Flusher(self._buf, self._commit, max_batch_seconds)
        self._written = 0  # units (turns, decision batches) buffered since the log was opened
        self._settled = 0  # units up to this count are committed or failed
        self._failed: OrderedDict[int, LogError] = OrderedDict()  # unit -> why it failed
        self._mine = threading.local()  # per thread: the units it wrote and was not told of
        self._units: list[Unit] = []
        self._n_pairs = self._n_turns = self._n_decisions = 0
        self._buffered_ids: set[str] = set()  # turn ids in the buffer (a repeat fails alone)
        self._seen_snapshots: set[str] = set()
        self._chain = ChainHeads(self._load_head)
        self._stream = f"w-{uuid.uuid4().hex}"  # this writer's links chain (maitred.log.links)
        self._link_head: LinkHead = genesis(self._stream)
        self._tenants: dict[str, str] = {}  # run id -> its tenant (stamped on its turns)
        self._in_snapshot = False  # inside read_snapshot(): reads must not commit
        self._closed = False

    # -- backend hooks ------------------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        """Run one statement (``?`` placeholders); driver errors become LogError."""
        raise NotImplementedError

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Run a query (``?`` placeholders) and return every row; errors become LogError."""
        raise NotImplementedError

    def table_exists(self, name: str) -> bool:
        """Whether the log's schema has a table of that name."""
        raise NotImplementedError

    def tables(self) -> list[str]:
        """The names of every table in the log's database (SQLite) or schema (PostgreSQL)."""
        raise NotImplementedError

    def transaction(self) -> AbstractContextManager[None]:
        """A write transaction: commit on success, roll back on any exception."""
        raise NotImplementedError

    def _insert_batch(self, snapshots: list[Row], turns: list[Row], pairs: list[Row]) -> None:
        raise NotImplementedError

    def _insert_decisions(self, rows: list[Row]) -> None:
        raise NotImplementedError

    def _turn_seqs(self, n: int) -> Sequence[int]:
        """The next ``n`` session-order positions (``turns.turn_seq``), inside a commit."""
        raise NotImplementedError

    def _insert_rows(self, table: str, names: Sequence[str], rows: list[Row]) -> None:
        raise NotImplementedError

    def _close_connection(self) -> None:
        raise NotImplementedError

    # -- opening ------------------------------------------------------------------------------

    def _migrate(self) -> None:
        """Apply pending migrations (or, read-only, check there are none)."""
        try:
            migrate(self, read_only=self.read_only)
        except BaseException:
            self._close_connection()
            raise

    def migrations(self) -> list[str]:
        """The names of the schema migrations recorded in the log."""
        return applied(self)

    # -- writing ------------------------------------------------------------------------------

    def _writable(self, what: str) -> None:
        self._raise_mine()
        if self._closed:
            raise LogError(f"{what}: the decision log at {self.location} is closed")
        if self.read_only:
            raise LogError(
                f"{what}: the decision log at {self.location} was opened read-only; open it "
                "with read_only=False to write"
            )

    def begin_run(self, info: RunInfo) -> None:
        """Record a run header (written at once, not buffered).

        Raises:
            LogError: the run id is already in the log, or the log is read-only.
        """
        self._writable(f"begin_run({info.run_id!r})")
        row = encode_run(info)
        with self._lock:
            if self.query("SELECT 1 FROM runs WHERE run_id = ?", (info.run_id,)):
                raise LogError(
                    f"run {info.run_id!r} is already in the decision log at {self.location}; "
                    "run ids are unique -- start a new run with a fresh id"
                )
            with self.transaction():
                self.execute(insert_sql("runs", RUN_COLUMNS), row)
            with self._buf:
                self._chain.begin(info.run_id, row[RUN_COLUMNS.index("row_hash")])
                self._tenants[info.run_id] = str(info.tenant)

    def write(self, record: TurnRecord) -> None:
        """Buffer one turn; a full buffer is written in one transaction.

        Raises:
            LogError: the turn's run was never begun, a value is not finite JSON, the log is
                read-only or closed, or the batch could not be written.
        """
        self._writable(f"write({record.turn_id!r})")
        with self._buf:
            known = self._chain.known(record.run_id)
        if known is None:  # a run begun elsewhere: read its head without holding the buffer
            loaded = self._load_head(record.run_id)
            with self._buf:
                if loaded is not None:
                    self._chain.install(record.run_id, loaded)
        tenant = self._tenants.get(record.run_id)
        if tenant is None:
            tenant = self._run_tenant(record.run_id)
        with self._buf:
            seq, prev = self._check_run(record.run_id, record.turn_id)
            if record.turn_id in self._buffered_ids:
                raise LogError(
                    f"turn {record.turn_id!r} was already written to the decision log at "
                    f"{self.location}; turn ids are unique (one per run and message id): this "
                    "turn is not logged, the others are kept"
                )
            # encode everything first: a value that cannot be logged must not advance the chain
            encoded = encode_turn(record, seq=seq + 1, prev_hash=prev, tenant=tenant)
            unit = Unit(self._written + 1, record, tenant, encoded.turn, encoded.pairs)
            unit.depth = encoded.depth
            snap = record.snapshot
            if snap is not None and snap.hash not in self._seen_snapshots:
                unit.snapshot = encode_snapshot(snap, record.turn_id)
                if len(self._seen_snapshots) >= _SEEN_SNAPSHOTS_MAX:
                    self._seen_snapshots.clear()
                self._seen_snapshots.add(snap.hash)
            self._buffered_ids.add(record.turn_id)
            self._chain.advance(record.run_id, (seq + 1, encoded.turn[_ROW_HASH]))
            self._n_turns += 1
            self._n_pairs += len(encoded.pairs)
            self._buffer(unit)
            due = self._flusher.buffered()
            full = self._n_pairs >= self.batch_pairs or self._n_turns >= self.batch_pairs
        if due or full:
            self._commit_mine()

    def write_replays(self, rows: Sequence[Row]) -> None:
        """Append counterfactual-replay rows (``REPLAY_COLUMNS`` order) in one transaction.

        Raises:
            LogError: a replayed turn is not in the log, or the log is read-only / closed.
        """
        self._writable("write_replays")
        with self._lock:
            self._commit()
            for row in rows:
                if not self.query("SELECT 1 FROM turns WHERE turn_id = ?", (row[1],)):
                    raise LogError(
                        f"replay {row[0]!r} names turn {row[1]!r}, which is not in the decision "
                        f"log at {self.location}; replay turns of this log only"
                    )
            with self.transaction():
                for row in rows:
                    self.execute(insert_sql("replays", REPLAY_COLUMNS), row)

    def write_decisions(self, decisions: Sequence[LoggableDecision]) -> None:
        """Buffer action-gate decisions for the ``action_decisions`` table.

        They land with the next batch (``batch_pairs`` buffered rows), :meth:`flush` or
        :meth:`close`, in one transaction with any buffered turns.

        Raises:
            LogError: a decision holds a value that is not finite JSON, the log is read-only or
                closed, or the batch could not be written.
        """
        self._writable("write_decisions")
        rows = [encode_decision(d) for d in decisions]
        if not rows:
            return
        with self._buf:
            self._n_decisions += len(rows)
            self._buffer(Unit(self._written + 1, decisions=rows))
            due = self._flusher.buffered()
            full = self._n_decisions >= self.batch_pairs
        if due or full:
            self._commit_mine()

    def spend(self, key: str, *, tenant: str, session_id: str, expires_at: float) -> bool:
        """Record the one use of a single-use ``requestState`` (``key``: what was spent), at
        once and in its own statement, not with the next batch: True for the first use on
        any process sharing this log, False when it was spent before (the row's primary key
        decides between two processes spending it at the same moment). The row is kept; it
        says who spent it and until when the state could have been used at all.

        Raises:
            LogError: the log is read-only or closed, or the row could not be written.
        """
        self._writable("spend")
        claim = uuid.uuid4().hex
        row = (key, tenant, session_id, claim, time.time(), expires_at)
        with self._lock:  # not inside a batch's transaction: its own, committed now
            self.execute(_INSERT_SPENT, row)
            found = self.query("SELECT claim FROM spent_states WHERE state_key = ?", (key,))
        return bool(found) and found[0][0] == claim

    def _check_run(self, run_id: str, turn_id: str) -> Head:
        """The run's chain head; raises LogError when the run was never begun."""
        head = self._chain.known(run_id)
        if head is None:
            raise LogError(
                f"turn {turn_id!r} belongs to run {run_id!r}, which was never begun in the "
                f"decision log at {self.location}; call log.begin_run(RunInfo(...)) (or "
                "Pipeline.begin_run()) before writing its turns"
            )
        return head

    def _run_tenant(self, run_id: str) -> str:
        """The tenant of a run begun elsewhere (``""`` when unknown: the turn is refused later)."""
        found = self.query("SELECT tenant FROM runs WHERE run_id = ?", (run_id,))
        tenant = str(found[0][0]) if found else ""
        if found:
            with self._buf:
                self._tenants[run_id] = tenant
        return tenant

    def _load_head(self, run_id: str) -> Head | None:
        """A run's committed chain head, read from the log (None: no such run)."""
        run = self.query("SELECT row_hash FROM runs WHERE run_id = ?", (run_id,))
        if not run:
            return None
        last = self.query(
            "SELECT chain_seq, row_hash FROM turns WHERE run_id = ? AND chain_seq IS NOT NULL "
            "ORDER BY chain_seq DESC LIMIT 1",
            (run_id,),
        )
        if last:
            return int(last[0][0]), str(last[0][1])
        return 0, str(run[0][0] or "")  # a run from before the chain starts from ""

    def flush(self) -> None:
        """Return once every row written before this call is committed (group commit).

        A commit already under way, or one that another caller starts, may carry this caller's
        rows; it then waits for that commit rather than starting its own.

        Raises:
            LogError: a row *this thread* wrote could not be committed (it alone was dropped;
                the other rows of its commit are in the log), including one the background
                flusher tried. Another caller's failed row is never raised here.
        """
        with self._buf:
            target = self._written
        if target > self._settled:
            self._commit(upto=target)
        self._raise_mine()
        self._flusher.raise_pending()  # the background commit's own failure, not a row's

    def _buffer(self, unit: Unit) -> None:
        """Append a unit, and remember it as this thread's (call with the buffer lock held).

        A thread's units are in increasing order, so what is settled of them is a prefix,
        found by bisection: remembering a unit costs the same however many the thread has
        buffered (a batch writer's thousands of unflushed units included)."""
        self._units.append(unit)
        self._written = unit.index
        mine: list[int] | None = getattr(self._mine, "units", None)
        if mine is None:
            mine = self._mine.units = []
        if len(mine) >= _MINE_PRUNE:  # a writer that never flushes: forget what went well
            cut = bisect_right(mine, self._settled)
            if cut:
                mine[:cut] = [i for i in mine[:cut] if i in self._failed]
        mine.append(unit.index)

    def _raise_mine(self) -> None:
        """Raise the failure of a unit this thread wrote, once settled (then forget them)."""
        mine: list[int] | None = getattr(self._mine, "units", None)
        if not mine:
            return
        with self._buf:
            cut = bisect_right(mine, self._settled)  # the settled prefix (see _buffer)
            if not cut:
                return
            failed = self._failed
            errors = [failed.pop(i) for i in mine[:cut] if i in failed] if failed else []
            del mine[:cut]
        if errors:
            raise errors[0]

    def _commit_mine(self) -> None:
        """A commit a full or old buffer calls for, on the writing thread: a row of this
        thread's that it could not write is raised here."""
        self._commit()
        self._raise_mine()

    def _commit(self, upto: int | None = None) -> None:
        """Commit the buffer in one transaction, unless rows up to ``upto`` are already settled.

        Holds the connection lock throughout (one committer at a time; callers queue here and
        usually find their rows already settled), the buffer lock only to take the buffer.
        When the transaction fails, each unit is committed alone (:meth:`_one_by_one`), so a
        row the database refuses fails by itself; failures are recorded by unit for the
        threads that wrote them, never raised here.
        """
        with self._lock:
            with self._buf:
                if upto is not None and self._settled >= upto:
                    return
                end, units = self._written, self._units
                self._units, self._buffered_ids = [], set()
                self._n_pairs = self._n_turns = self._n_decisions = 0
                self._flusher.flushed()
            if not units:
                with self._buf:
                    self._settled = max(self._settled, end)
                return
            heads = rechain(units, self._chain.committed_head)
            try:
                with self.transaction():
                    linked = self._insert_units(units, heads)
                self._link_head = linked
            except LogError as exc:
                heads = self._one_by_one(units, exc)
            with self._buf:
                self._chain.committed(heads)
                self._settled = end

    def _insert_units(self, units: Sequence[Unit], heads: Mapping[str, Head]) -> LinkHead:
        """Insert ``units``' links with the stream's new head, then their rows and one
        ``chain_heads`` row per run (inside a transaction); the link head reached.

        The links go first: a turn or a decision is accepted by its table's guard only when it
        is linked already (``0012_chained_only``)."""
        turns = [u.turn for u in units if u.record is not None]
        seqs = iter(self._turn_seqs(len(turns)) if turns else ())
        records: list[tuple[str, str, str, int | None]] = []
        stored: list[Row] = []
        for unit in units:
            if unit.record is not None:
                turn_seq = next(seqs)
                stored.append((*unit.turn, turn_seq))
                records.append(("turn", unit.turn[0], unit.turn[_ROW_HASH], turn_seq))
            for row in unit.decisions:
                records.append(("decision", row[0], row[_DECISION_HASH], None))
        rows, head = link_rows(self._stream, self._link_head, records)
        if rows:
            self._insert_rows("links", LINK_COLUMNS, rows)
            self.execute(_INSERT_LINK_HEAD, (self._stream, *head))
        if stored:
            snapshots = [u.snapshot for u in units if u.snapshot is not None]
            pairs = [p for u in units for p in u.pairs]
            self._insert_batch(snapshots, stored, pairs)
        decisions = [r for u in units for r in u.decisions]
        if decisions:
            self._insert_decisions(decisions)
        for unit in units:
            if unit.depth is not None:
                self.execute(_INSERT_DEPTH, unit.depth)
        for run_id, (seq, digest) in heads.items():
            self.execute(_INSERT_HEAD, (run_id, seq, digest))
        return head

    def _one_by_one(self, units: list[Unit], first: LogError) -> dict[str, Head]:
        """After a failed commit: each unit in its own transaction, chained on the ones that
        made it; the heads reached. A unit that fails is recorded; when the log itself is
        gone (a probe fails too), every unit left fails with the first error."""
        heads: dict[str, Head] = {}
        self._seen_snapshots.clear()  # a failed unit may have carried a snapshot others need
        for n, unit in enumerate(units):
            alone = unit.alone()
            reached = rechain(
                [alone], lambda run: heads.get(run) or self._chain.committed_head(run)
            )
            try:
                with self.transaction():
                    linked = self._insert_units([alone], reached)
                self._link_head = linked
            except LogError as exc:
                if len(units) > 1 and not self._alive():
                    for rest in units[n:]:
                        self._fail(rest, first)
                    break
                self._fail(unit, exc)
                continue
            heads.update(reached)
        return heads

    def _alive(self) -> bool:
        try:
            self.query("SELECT 1")
        except LogError:
            return False
        return True

    def _fail(self, unit: Unit, exc: LogError) -> None:
        error = LogError(
            f"{unit.describe()} could not be written to the decision log at {self.location} "
            f"and is not logged: {exc}; the other rows committed with it are kept (turn ids "
            "and decision ids must be unique, and a run has a single writer)"
        )
        with self._buf:
            self._failed[unit.index] = error
            while len(self._failed) > _FAILURES_KEPT:
                self._failed.popitem(last=False)
            if unit.record is not None and not any(
                u.run_id == unit.run_id for u in self._units
            ):  # nothing of its run buffered behind: new turns chain on what was committed
                self._chain.reset(unit.run_id)

    def close(self) -> None:
        """Flush buffered turns and close the connection (idempotent).

        Raises:
            LogError: the final batch, or one the background flusher tried, was not written.
        """
        self._flusher.stop()
        with self._lock:
            if self._closed:
                return
            try:
                if not self.read_only:
                    self._commit()
                    self._raise_mine()
            finally:
                self._closed = True
                self._close_connection()

    def __enter__(self) -> SqlLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
