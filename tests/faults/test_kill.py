"""`kill -9` of a running `maitred run`: what was committed stays, verifies, and is most of it.

Issue 12 item 2: turns used to be buffered up to 20,000 pair rows, so a run killed at 60 % of
2,000 messages kept none. Now a batch is committed once its oldest turn is 1 s old (and every
20,000 pair rows), by a background thread, so a kill loses at most the last second of turns.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
from pathlib import Path

import pytest

from maitred.log import verify

from .conftest import Deployment, committed_turns, wait_for

pytestmark = pytest.mark.skipif(os.name != "posix", reason="needs SIGKILL and FIFOs")


def _open_writer(fifo: Path, proc: subprocess.Popen[bytes]) -> int:
    """The write end of ``fifo`` once `maitred run` has opened it for reading (blocking)."""
    writer: list[int] = []

    def reader_attached() -> bool:
        try:
            writer.append(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # ENXIO: `maitred run` has not opened the stream yet
            return False
        return True

    wait_for("the run opening its input", reader_attached, proc)
    os.set_blocking(writer[0], True)
    return writer[0]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def test_a_killed_batch_keeps_its_committed_turns_in_order_and_they_verify(
    deployment: Deployment, spawn, tmp_path: Path
) -> None:
    """Two commits happen while the run is going, then kill -9: the committed prefix stays.

    The input is a FIFO kept open, so the run cannot finish before the kill however fast the
    machine is: whatever it committed, it committed mid-run, by the age bound (2,500 messages
    make about 15,000 pair rows, under the row bound).
    """
    n = 2500
    source, fifo, log = tmp_path / "msgs.jsonl", tmp_path / "live", tmp_path / "log.sqlite"
    ids = deployment.messages(source, n)
    lines = source.read_bytes().splitlines(keepends=True)
    os.mkfifo(fifo)
    proc = spawn(deployment.run_args(fifo, log))
    writer = _open_writer(fifo, proc)
    seen: list[int] = []

    def committed_more() -> bool:
        count = len(committed_turns(log))
        if count > (seen[-1] if seen else 0):
            seen.append(count)
            return True
        return False

    try:
        _write_all(writer, b"".join(lines[: n // 2]))
        wait_for("a first commit while the run was going", committed_more, proc)
        _write_all(writer, b"".join(lines[n // 2 :]))
        wait_for("a second commit while the run was going", committed_more, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        os.close(writer)
    assert proc.returncode == -signal.SIGKILL
    kept = committed_turns(log)
    assert len(seen) == 2 and seen[0] < seen[1] <= len(kept)
    assert kept == ids[: len(kept)]  # a prefix of the input: no gap, no turn from later
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
    writer = _open_writer(fifo, proc)
    _write_all(writer, source.read_bytes())  # the stream stays open: no end of input
    try:
        wait_for(f"all {n} turns committed", lambda: len(committed_turns(log)) == n, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        os.close(writer)
    assert committed_turns(log) == ids
    assert verify(log).ok
