"""The time bound on buffered writes: a background thread that commits what waited too long.

A :class:`~maitred.log._sql.SqlLog` buffers rows and commits them in batches (one transaction
each), which is what makes the write path fast. Batches fill by row count; this module adds the
second bound, by age: once the oldest buffered row has waited ``max_seconds``, the batch is
committed whether or not more rows arrive. So a decided turn is durable at most about
``max_seconds`` (plus the time of one commit) after it was written to the log, and a process
killed outright (``kill -9``, a power cut with ``synchronous=FULL``) loses at most the turns of
its last ``max_seconds`` -- also when the writer has gone quiet (a service between requests, a
batch waiting on its input).

The thread is started by the first buffered write, is a daemon (it never keeps a process
alive), and is stopped and joined by :meth:`Flusher.stop` before the log's final flush. A batch
it cannot commit is discarded as any failed batch is; the error is kept and raised to the
writer at its next call (:meth:`Flusher.raise_pending`), so it is never swallowed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from maitred.errors import LogError


class Flusher:
    """Commits a log's buffer once its oldest row is ``max_seconds`` old.

    Args:
        lock: the log's buffer lock (held while the buffer's age is inspected).
        flush: commits the whole buffer; called without ``lock`` held (it takes the log's
            locks itself). It raises LogError when the batch could not be written.
        max_seconds: the age bound.
        name: the thread's name, for debuggers.
    """

    def __init__(
        self,
        lock: AbstractContextManager[Any],
        flush: Callable[[], None],
        max_seconds: float,
        name: str = "maitred-log-flusher",
    ) -> None:
        self._lock = lock
        self._flush = flush
        self.max_seconds = max_seconds
        self._name = name
        self._oldest: float | None = None  # monotonic time the oldest buffered row arrived
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: LogError | None = None

    def buffered(self) -> bool:
        """Note that a row was buffered (call with the lock held); True when the batch is due.

        The first call starts the thread. The writer commits a due batch itself, at once,
        rather than waiting for the thread.
        """
        now = time.monotonic()
        if self._oldest is None:
            self._oldest = now
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
        return now - self._oldest >= self.max_seconds

    def flushed(self) -> None:
        """Note that the buffer is empty (committed or discarded); call with the lock held."""
        self._oldest = None

    def raise_pending(self) -> None:
        """Raise the error of a batch the thread could not commit, once."""
        error, self._error = self._error, None
        if error is not None:
            raise error

    def stop(self) -> None:
        """Stop the thread and wait for it (call without the lock held)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        while True:
            with self._lock:
                due = None if self._oldest is None else self._oldest + self.max_seconds
            if due is not None and time.monotonic() >= due:
                try:
                    self._flush()
                except LogError as exc:
                    self._error = exc
                due = None
            delay = self.max_seconds if due is None else max(0.0, due - time.monotonic())
            if self._stop.wait(delay):
                return
