"""The writer's side of the hash chain: each run's head, advanced turn by turn.

Every turn of a run is written with its position (``chain_seq``) and the ``row_hash`` of the
turn before it (``prev_hash``; the run row's own hash for the first turn), so the writer keeps
one head per run: the position and hash of the last turn it wrote. Buffered turns advance the
head at once; a batch that is committed records the heads it reached in ``chain_heads``; a
batch that is discarded puts the heads back where the last commit left them. While one batch
is being committed the next one fills (group commit, :mod:`maitred.log._sql`): its turns chain
on the batch in flight, so when that batch is discarded the one filling behind it is too.

Why a run has one writer: the next position comes from this head, so two processes appending
to one run would both write position n+1. The unique index on ``(run_id, chain_seq)`` refuses
the second, whose batch fails with an error that says so. Several writers on PostgreSQL are
fine as long as each has its own runs (``Pipeline.begin_run`` gives each a fresh id).
"""

from __future__ import annotations

from collections.abc import Callable

#: (position of the last turn written, its row hash); position 0 is the run row itself
Head = tuple[int, str]


class ChainHeads:
    """Each run's head, as written (buffered included) and as last committed.

    Args:
        load: reads a run's committed head from the log, for a run this writer did not begin
            (None when the run is not in the log).
    """

    def __init__(self, load: Callable[[str], Head | None]) -> None:
        self._load = load
        self._written: dict[str, Head] = {}
        self._committed: dict[str, Head] = {}
        self._batch: dict[str, Head] = {}

    def begin(self, run_id: str, run_hash: str) -> None:
        """A run this writer has just recorded: its chain starts at its own row hash."""
        self._written[run_id] = self._committed[run_id] = (0, run_hash)

    def known(self, run_id: str) -> Head | None:
        """The run's head as written so far, without reading the log (None: not seen yet)."""
        return self._written.get(run_id)

    def head(self, run_id: str) -> Head | None:
        """The run's head as written so far (loaded from the log the first time), or None."""
        head = self._written.get(run_id)
        if head is None:
            head = self._load(run_id)
            if head is None:
                return None
            self.install(run_id, head)
        return head

    def install(self, run_id: str, head: Head) -> None:
        """A run's committed head, read from the log by the caller (kept if already known)."""
        if run_id not in self._written:
            self._written[run_id] = self._committed[run_id] = head

    def advance(self, run_id: str, head: Head) -> None:
        """A turn of the run was buffered at ``head``."""
        self._written[run_id] = self._batch[run_id] = head

    def take(self) -> list[tuple[str, int, str]]:
        """The heads the buffered batch reaches, one ``chain_heads`` row per run; turns
        buffered from now on belong to the next batch."""
        heads = [(run_id, seq, digest) for run_id, (seq, digest) in self._batch.items()]
        self._batch = {}
        return heads

    def committed(self, heads: list[tuple[str, int, str]]) -> None:
        """The batch that reached ``heads`` is in the log: they are the committed ones now."""
        self._committed.update((run_id, (seq, digest)) for run_id, seq, digest in heads)

    def discarded(self) -> None:
        """Everything not committed was thrown away: heads go back to the last commit."""
        self._written.update(self._committed)
        self._batch = {}
