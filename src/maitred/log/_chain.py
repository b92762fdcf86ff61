"""The writer's side of the hash chain: each run's head, advanced turn by turn.

Every turn of a run is written with its position (``chain_seq``) and the ``row_hash`` of the
turn before it (``prev_hash``; the run row's own hash for the first turn), so the writer keeps
one head per run: the position and hash of the last turn it wrote. Buffered turns advance the
*written* head at once (that is how ``write`` chains without waiting); a commit records the
heads it reached in ``chain_heads`` and makes them the *committed* heads. The committer
re-chains what it carries on the committed heads (:func:`maitred.log._units.rechain`), so a
turn the database refused -- dropped alone -- never breaks the chain of the turns written
after it, in its commit or buffered behind it (group commit, :mod:`maitred.log._sql`).

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
        self._written[run_id] = head

    def committed_head(self, run_id: str) -> Head | None:
        """The run's head as last committed (None: not known to this writer)."""
        return self._committed.get(run_id)

    def committed(self, heads: dict[str, Head]) -> None:
        """A commit reached ``heads``: they are the committed ones now."""
        self._committed.update(heads)

    def reset(self, run_id: str) -> None:
        """Nothing of the run is buffered and its last written turn was dropped: new turns
        chain on the committed head."""
        if run_id in self._committed:
            self._written[run_id] = self._committed[run_id]
