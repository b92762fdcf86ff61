"""What the SQL backends share: buffering, batching, run checks and the read queries.

A backend subclasses :class:`SqlLog` and supplies the connection-level pieces (``execute``,
``query``, ``table_exists``, ``tables``, ``transaction``, ``_insert_batch``,
``_close_connection``). SQL here is written with ``?`` placeholders in the subset SQLite and
PostgreSQL share; the PostgreSQL backend rewrites the placeholders.

Writes: :meth:`SqlLog.write` encodes a turn (computing its row hash) and appends its rows to an
in-memory buffer; once ``batch_pairs`` pair rows (or as many turns) are waiting, or the oldest
buffered row has waited ``max_batch_seconds`` (:mod:`maitred.log._flusher`, a background
thread, so also when no further write comes), the whole buffer is inserted in one
transaction. A failed batch is rolled back and discarded, and the error says how many turns
were lost. Action decisions (:meth:`SqlLog.write_decisions`) are
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
When a commit fails, its batch *and* the rows buffered behind it (their hash chains continue
the lost rows) are discarded, and every ``flush`` whose rows were among them raises.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from types import TracebackType
from typing import Any, Literal

from maitred.decision import RunInfo, TurnRecord
from maitred.errors import ConfigError, LogError
from maitred.log._chain import ChainHeads, Head
from maitred.log._flusher import Flusher
from maitred.log.action_rows import ACTION_DECISION_COLUMNS, LoggableDecision, encode_decision
from maitred.log.migrations import Dialect, applied, migrate
from maitred.log.offers import EXPOSED_SQL, LATEST_TURN_ACCOUNT_SQL, LATEST_TURN_SQL, CommittedOffer
from maitred.log.rows import (
    DEPTH_COLUMNS,
    PAIR_COLUMNS,
    RUN_COLUMNS,
    SNAPSHOT_COLUMNS,
    TURN_COLUMNS,
    decode_run,
    decode_snapshot,
    encode_run,
    encode_snapshot,
    encode_turn,
)
from maitred.state.snapshot import Snapshot

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
_PAGE = 500
_SEEN_SNAPSHOTS_MAX = 100_000
#: failed commits remembered for the flushes that wait on them
_FAILURES_KEPT = 1024

Row = tuple[Any, ...]
#: the order :meth:`SqlLog.iter_turns` yields a run's turns in
TurnOrder = Literal["time", "chain"]


def _insert_depth_sql() -> str:
    marks = ", ".join("?" for _ in DEPTH_COLUMNS)
    return f"INSERT INTO depth_decisions ({', '.join(DEPTH_COLUMNS)}) VALUES ({marks})"


_INSERT_DEPTH = _insert_depth_sql()
_INSERT_HEAD = "INSERT INTO chain_heads (run_id, chain_seq, head_hash) VALUES (?, ?, ?)"
_ROW_HASH = TURN_COLUMNS.index("row_hash")


def columns(names: Sequence[str], alias: str = "") -> str:
    """A column list, optionally qualified by a table alias."""
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + n for n in names)


def insert_sql(table: str, names: Sequence[str], *, on_conflict_ignore: bool = False) -> str:
    """An ``INSERT`` with ``?`` placeholders (``ON CONFLICT DO NOTHING`` if asked)."""
    marks = ", ".join("?" for _ in names)
    tail = " ON CONFLICT DO NOTHING" if on_conflict_ignore else ""
    return f"INSERT INTO {table} ({columns(names)}) VALUES ({marks}){tail}"


class SqlLog:
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
        self._written = 0  # rows (turns, decision batches) buffered since the log was opened
        self._settled = 0  # rows up to this count are committed or discarded
        self._failures: deque[tuple[int, int, LogError]] = deque(maxlen=_FAILURES_KEPT)
        self._since = threading.local()  # per thread: rows after this count are its unflushed
        self._turns: list[Row] = []
        self._buffered_ids: set[str] = set()  # turn ids in the buffer (a repeat fails alone)
        self._pairs: list[Row] = []
        self._snapshots: list[Row] = []
        self._decisions: list[Row] = []
        self._depth: list[Row] = []
        self._seen_snapshots: set[str] = set()
        self._chain = ChainHeads(self._load_head)
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
        self._flusher.raise_pending()
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
            snap = record.snapshot
            if snap is not None and snap.hash not in self._seen_snapshots:
                self._snapshots.append(encode_snapshot(snap, record.turn_id))
                if len(self._seen_snapshots) >= _SEEN_SNAPSHOTS_MAX:
                    self._seen_snapshots.clear()
                self._seen_snapshots.add(snap.hash)
            self._buffered_ids.add(record.turn_id)
            self._chain.advance(record.run_id, (seq + 1, encoded.turn[_ROW_HASH]))
            self._turns.append(encoded.turn)
            self._pairs.extend(encoded.pairs)
            if encoded.depth is not None:
                self._depth.append(encoded.depth)
            self._note_written()
            due = self._flusher.buffered()
            full = len(self._pairs) >= self.batch_pairs or len(self._turns) >= self.batch_pairs
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
        with self._buf:
            self._decisions.extend(rows)
            self._note_written()
            due = self._flusher.buffered()
            full = len(self._decisions) >= self.batch_pairs
        if due or full:
            self._commit_mine()

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
            LogError: a commit that held rows written before this call failed (they are
                discarded), including one the background flusher tried.
        """
        start = getattr(self._since, "count", None)
        self._since.count = None  # whatever this flush finds, it reports
        self._flusher.raise_pending()
        with self._buf:
            target = self._written
            start = self._settled if start is None else start
        if target > start:
            self._commit(upto=target)
            self._raise_lost(start, target)

    def _note_written(self) -> None:
        """Count one buffered row, and remember where this thread's unflushed rows begin
        (call with the buffer lock held): a commit that loses them may be another thread's."""
        if getattr(self._since, "count", None) is None:
            self._since.count = self._written
        self._written += 1

    def _commit_mine(self) -> None:
        """A commit a full or old buffer calls for, on the writing thread: its failure is
        raised here, so this thread's next flush need not report it again."""
        try:
            self._commit()
        except LogError:
            self._since.count = None
            raise

    def _raise_lost(self, start: int, target: int) -> None:
        """Raise the error of a failed commit that held rows ``start + 1 .. target``."""
        with self._buf:
            for first, last, error in self._failures:
                if first < target and last > start:
                    raise error

    def _commit(self, upto: int | None = None) -> None:
        """Commit the buffer in one transaction, unless rows up to ``upto`` are already settled.

        Holds the connection lock throughout (one committer at a time; callers queue here and
        usually find their rows already settled), the buffer lock only to take the buffer.
        """
        with self._lock:
            with self._buf:
                if upto is not None and self._settled >= upto:
                    return
                start, end = self._settled, self._written
                snapshots, turns, pairs = self._snapshots, self._turns, self._pairs
                decisions, depth = self._decisions, self._depth
                self._snapshots, self._turns, self._pairs, self._decisions = [], [], [], []
                self._depth = []
                self._buffered_ids = set()
                self._flusher.flushed()
                heads = self._chain.take()
            if not turns and not decisions:
                with self._buf:
                    self._settled = max(self._settled, end)
                return
            try:
                with self.transaction():
                    if turns:
                        self._insert_batch(snapshots, turns, pairs)
                    if decisions:
                        self._insert_decisions(decisions)
                    for row in depth:
                        self.execute(_INSERT_DEPTH, row)
                    for head in heads:
                        self.execute(_INSERT_HEAD, head)
            except LogError as exc:
                raise self._discard(start, snapshots, turns, pairs, decisions, exc) from exc
            with self._buf:
                self._chain.committed(heads)
                self._settled = end

    def _discard(
        self,
        start: int,
        snapshots: list[Row],
        turns: list[Row],
        pairs: list[Row],
        decisions: list[Row],
        exc: LogError,
    ) -> LogError:
        """Throw away a failed batch and the rows buffered behind it; the error to raise."""
        with self._buf:
            lost = len(self._turns)
            snapshots = snapshots + self._snapshots
            self._snapshots, self._turns, self._pairs, self._decisions = [], [], [], []
            self._depth = []
            self._buffered_ids = set()
            self._flusher.flushed()
            self._seen_snapshots.difference_update(s[0] for s in snapshots)
            self._chain.discarded()
            end = self._settled = self._written
            error = LogError(
                f"a batch of {len(turns)} turns ({len(pairs)} pairs) and {len(decisions)} "
                f"action decisions could not be written to the decision log at "
                f"{self.location} and was discarded, with {lost} turns buffered behind it: "
                f"{exc}; turn ids must be unique (one per run and message), and so must "
                "decision ids; a run has a single writer (its turns form one hash chain)"
            )
            self._failures.append((start, end, error))
        return error

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
                    self._flusher.raise_pending()
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

    # -- reading ------------------------------------------------------------------------------

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
            pair["visible"] = bool(pair["visible"])
            pair["exposed"] = bool(pair["exposed"])
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
        rows = self._session_query(LATEST_TURN_SQL, (tenant, session_id))
        return str(rows[0][0]) if rows else None

    def committed_offer(self, tenant: str, session_id: str) -> CommittedOffer | None:
        """What the session's latest committed turn offered (None: the session has no turn)."""
        if self._closed:
            raise LogError(f"read: the decision log at {self.location} is closed")
        rows = self._session_query(LATEST_TURN_ACCOUNT_SQL, (tenant, session_id))
        if not rows:
            return None
        turn_id, account = str(rows[0][0]), str(rows[0][1])
        skills = self._session_query(EXPOSED_SQL, (turn_id, True))  # a committed turn's pairs
        offered = frozenset(str(r[0]) for r in skills)
        return CommittedOffer(tenant, session_id, turn_id, account, offered)

    def _session_query(self, sql: str, params: Sequence[Any]) -> list[Row]:
        """A read of committed rows that never waits for this log's commit in flight (the
        backends read sessions on a second connection); here, the log's own connection."""
        return self.query(sql, params)

    def iter_snapshots(self) -> Iterator[dict[str, Any]]:
        """Every stored snapshot row, in hash order."""
        self._before_read()
        yield from self._pages("snapshots", SNAPSHOT_COLUMNS, "hash")
