"""Batches are bounded by rows and by age: a written turn is committed within about a second
even when no further write comes; a batch the background thread cannot commit is reported."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from maitred.errors import ConfigError, LogError
from maitred.log import open_log

from .builders import Opener, make_run, make_turn

DEADLINE_S = 30.0


def _committed(opener: Opener) -> int:
    with opener(read_only=True) as reader:
        return int(reader.query("SELECT COUNT(*) FROM turns")[0][0])


def test_a_lone_turn_is_committed_without_flush_or_close(opener: Opener) -> None:
    with opener(max_batch_seconds=0.05) as log:
        log.begin_run(make_run())
        log.write(make_turn(0))
        log.write(make_turn(1))
        deadline = time.monotonic() + DEADLINE_S
        while _committed(opener) < 2:  # another connection sees them: they are committed
            assert time.monotonic() < deadline, "the age bound never committed the batch"
            time.sleep(0.01)


def test_the_row_bound_still_commits_at_once(opener: Opener) -> None:
    with opener(batch_pairs=6, max_batch_seconds=3600) as log:
        log.begin_run(make_run())
        log.write(make_turn(0))  # 3 pairs: buffered
        assert _committed(opener) == 0
        log.write(make_turn(1))  # 6 pairs: committed by this write
        assert _committed(opener) == 2


def test_a_batch_the_thread_cannot_commit_is_raised_at_the_next_call(tmp_path: Path) -> None:
    log = open_log(tmp_path / "log.db", max_batch_seconds=0.05)
    log.begin_run(make_run())
    log.write(make_turn(0))
    log.flush()
    log.write(make_turn(0))  # the same turn id again, in a new batch: the database refuses it
    deadline = time.monotonic() + DEADLINE_S
    with pytest.raises(LogError, match=r"turn 'run-1/m0' could not be written"):
        while time.monotonic() < deadline:
            log.flush()  # raises the thread's error once it has tried
            time.sleep(0.01)
    log.write(make_turn(1))  # the log goes on
    log.close()
    with open_log(tmp_path / "log.db", read_only=True) as reader:
        assert [t["message_id"] for t in reader.iter_turns()] == ["m0", "m1"]


def test_a_turn_id_repeated_within_a_batch_fails_alone(tmp_path: Path) -> None:
    with open_log(tmp_path / "log.db") as log:
        log.begin_run(make_run())
        log.write(make_turn(0))
        with pytest.raises(LogError, match=r"turn 'run-1/m0' was already written"):
            log.write(make_turn(0))
        log.write(make_turn(1))
    with open_log(tmp_path / "log.db", read_only=True) as reader:
        assert [t["message_id"] for t in reader.iter_turns()] == ["m0", "m1"]


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan")])
def test_a_bound_that_cannot_work_is_refused(tmp_path: Path, bad: float) -> None:
    with pytest.raises(ConfigError, match="max_batch_seconds must be a positive number"):
        open_log(tmp_path / "log.db", max_batch_seconds=bad)


def test_a_background_commit_that_fails_outside_any_row_is_raised_at_the_next_flush(
    tmp_path: Path,
) -> None:
    """The flusher's own failure (not a row the database refused: those are raised to the
    thread that wrote them) is never swallowed: the next flush raises it, once."""
    log = open_log(tmp_path / "log.db", max_batch_seconds=0.05)
    log.begin_run(make_run())
    tried = threading.Event()

    def broken() -> None:
        tried.set()
        raise LogError("the background commit broke")

    log._flusher._flush = broken  # type: ignore[attr-defined]
    log.write(make_turn(0))
    assert tried.wait(DEADLINE_S)
    with pytest.raises(LogError, match="the background commit broke"):
        log.flush()
    log.flush()  # raised once (the flush that raised it had committed the row)
    log.close()
    with open_log(tmp_path / "log.db", read_only=True) as reader:
        assert [t["message_id"] for t in reader.iter_turns()] == ["m0"]
