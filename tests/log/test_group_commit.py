"""Group commit: concurrent writers' rows go in one transaction, and each ``flush`` returns only
once its own rows are committed (or raises when the commit holding them failed).

The test holds the log's connection lock -- the one a commit holds throughout -- while the
writers buffer and call ``flush``, so every row is waiting when the first commit starts: the
outcome is the same on any machine, however the threads are scheduled.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from maitred.errors import LogError
from maitred.log import verify
from maitred.log._sql import _MINE_PRUNE, Row, SqlLog
from maitred.log.sqlite import SqliteLog

from .builders import Opener, make_run, make_turn

WRITERS = 8
DEADLINE_S = 30.0


def _buffered_then_released(log: SqlLog, n: int, futures: list[Future[None]]) -> None:
    """Wait (bounded) until ``n`` rows are buffered, with the writers blocked on the commit."""
    deadline = time.monotonic() + DEADLINE_S
    while log._written < n:
        assert time.monotonic() < deadline, "the writers never buffered their rows"
        assert not any(f.done() for f in futures), "a flush returned before any commit"
        time.sleep(0.005)


def _write_and_flush(log: SqlLog, n: int) -> None:
    log.write(make_turn(n))
    log.flush()


def test_concurrent_flushes_share_one_commit_and_each_sees_its_row(opener: Opener) -> None:
    with opener(max_batch_seconds=3600) as log:
        log.begin_run(make_run())
        assert isinstance(log, SqlLog)
        lock = log._lock
        with ThreadPoolExecutor(WRITERS) as pool:
            with lock:  # a commit in flight: nobody can commit until it ends
                futures = [pool.submit(_write_and_flush, log, i) for i in range(WRITERS)]
                _buffered_then_released(log, WRITERS, futures)
            for f in futures:
                f.result(timeout=DEADLINE_S)
        with opener(read_only=True) as reader:  # another connection: they are committed
            assert int(reader.query("SELECT COUNT(*) FROM turns")[0][0]) == WRITERS
            # one chain_heads row per commit that carried turns of the run
            assert reader.query("SELECT COUNT(*) FROM chain_heads")[0][0] == 1
            assert verify(reader).ok


def test_a_row_the_database_refuses_fails_alone_in_a_shared_commit(opener: Opener) -> None:
    with opener(max_batch_seconds=3600) as log:
        log.begin_run(make_run())
        log.write(make_turn(0))
        log.flush()
        assert isinstance(log, SqlLog)
        lock = log._lock
        with ThreadPoolExecutor(WRITERS) as pool:
            with lock:
                # m0 again: the database refuses it; the others ride in the same commit
                futures = [pool.submit(_write_and_flush, log, n) for n in range(WRITERS)]
                _buffered_then_released(log, WRITERS + 1, futures)
            bad, *good = futures
            with pytest.raises(LogError, match=r"turn 'run-1/m0' could not be written"):
                bad.result(timeout=DEADLINE_S)
            for f in good:
                f.result(timeout=DEADLINE_S)  # their rows are committed: no error
        log.write(make_turn(WRITERS))  # the log goes on, its chain continuing
        log.flush()
        with opener(read_only=True) as reader:
            logged = sorted(t["message_id"] for t in reader.iter_turns())
            assert logged == sorted(f"m{i}" for i in range(WRITERS + 1))
            assert verify(reader).ok


class _PausedLog(SqliteLog):
    """A real SQLite log whose commits stop inside their transaction until released."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, max_batch_seconds=3600)
        self.inside = threading.Event()
        self.release = threading.Event()

    def _insert_batch(self, snapshots: list[Row], turns: list[Row], pairs: list[Row]) -> None:
        self.inside.set()
        assert self.release.wait(DEADLINE_S), "the test never released the commit"
        super()._insert_batch(snapshots, turns, pairs)


def test_rows_buffered_behind_a_failed_row_are_kept_and_chained_on_what_was_committed(
    tmp_path: Path,
) -> None:
    log = _PausedLog(tmp_path / "log.db")
    log.release.set()
    log.begin_run(make_run())
    log.write(make_turn(0))
    log.flush()
    log.inside.clear()
    log.release.clear()
    with ThreadPoolExecutor(1) as pool:
        failing = pool.submit(_write_and_flush, log, 0)  # m0 again: this commit will fail
        assert log.inside.wait(DEADLINE_S)
        log.write(make_turn(1))  # buffered while that commit is in flight: chained on it
        log.release.set()
        with pytest.raises(LogError, match=r"turn 'run-1/m0' could not be written"):
            failing.result(timeout=DEADLINE_S)
    log.flush()  # m1 is not this failure's: it is committed, re-chained on m0
    log.write(make_turn(2))
    log.flush()
    log.close()
    with SqliteLog(tmp_path / "log.db", read_only=True) as reader:
        assert [t["message_id"] for t in reader.iter_turns()] == ["m0", "m1", "m2"]
        assert verify(reader).ok


def test_a_writer_that_buffers_past_the_prune_length_is_told_of_its_one_failed_row(
    opener: Opener,
) -> None:
    """A batch writer buffers more units than a thread's list is pruned at (``_MINE_PRUNE``)
    before it flushes: the one row the database refuses is raised at that flush, once, and the
    thread then remembers nothing of the settled rows."""
    many = _MINE_PRUNE * 2 + 7
    with opener(max_batch_seconds=3600, batch_pairs=10 * many) as log:
        assert isinstance(log, SqlLog)
        log.begin_run(make_run())
        log.write(make_turn(0))
        log.flush()
        for n in range(1, many):
            log.write(make_turn(n))
        log.write(make_turn(0))  # m0 again: refused by the database, alone
        for n in range(many, many + 3):
            log.write(make_turn(n))
        assert len(log._mine.units) == many + 3  # nothing settled yet: all remembered
        with pytest.raises(LogError, match=r"turn 'run-1/m0' could not be written"):
            log.flush()
        assert log._mine.units == []
        log.flush()  # told once
        with opener(read_only=True) as reader:
            logged = sorted(t["message_id"] for t in reader.iter_turns())
            assert logged == sorted(f"m{i}" for i in range(many + 3))
            assert verify(reader).ok
