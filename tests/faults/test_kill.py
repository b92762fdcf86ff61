"""`kill -9` of a running `maitred run`: what was committed stays, verifies, and is most of it.

Issue 12 item 2: turns used to be buffered up to 20,000 pair rows, so a run killed at 60 % of
2,000 messages kept none. Now a batch is committed once its oldest turn is 1 s old (and every
20,000 pair rows), by a background thread, so a kill loses at most the last second of turns.
"""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

import pytest

from maitred.log import verify

from .conftest import Deployment, committed_turns, wait_for

pytestmark = pytest.mark.skipif(os.name != "posix", reason="needs SIGKILL and FIFOs")


def test_a_killed_batch_keeps_its_committed_turns_in_order_and_they_verify(
    deployment: Deployment, spawn, tmp_path: Path
) -> None:
    n = 2500  # about 15,000 pair rows: under the row bound, so only the age bound commits
    messages, log = tmp_path / "msgs.jsonl", tmp_path / "log.sqlite"
    ids = deployment.messages(messages, n)
    proc = spawn(deployment.run_args(messages, log))
    seen: list[int] = []

    def two_commits_while_running() -> bool:  # periodic commits, not one at the end
        count = len(committed_turns(log))
        if count and (not seen or count > seen[-1]):
            seen.append(count)
        return len(seen) >= 2

    wait_for("two commits while the run was going", two_commits_while_running, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    kept = committed_turns(log)
    assert seen[-1] <= len(kept) < n, "the run finished before the kill: raise n"
    assert kept == ids[: len(kept)]  # a prefix of the file: no gap, no turn from later
    report = verify(log)
    assert report.ok, report.summary()
    assert report.turns == len(kept)


def test_a_stream_that_goes_quiet_has_every_routed_turn_committed(
    deployment: Deployment, spawn, tmp_path: Path
) -> None:
    """The age bound holds with no further write: 40 lines in, then silence, then kill -9."""
    n = 40
    source, fifo, log = tmp_path / "msgs.jsonl", tmp_path / "live", tmp_path / "live.sqlite"
    ids = deployment.messages(source, n)
    os.mkfifo(fifo)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    proc = spawn(deployment.run_args(fifo, log))
    writer: list[int] = []

    def reader_attached() -> bool:
        try:
            writer.append(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # ENXIO: `maitred run` has not opened the stream yet
            return False
        return True

    wait_for("the run opening its input", reader_attached, proc)
    os.set_blocking(writer[0], True)
    os.write(writer[0], source.read_bytes())  # the stream stays open: no end of input
    try:
        wait_for(f"all {n} turns committed", lambda: len(committed_turns(log)) == n, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        os.close(writer[0])
    assert committed_turns(log) == ids
    assert verify(log).ok
