"""What a commit carries: one *unit* per ``write`` (a turn with its rows) or ``write_decisions``
call, kept apart so that a unit the database refuses fails alone.

The writer encodes a turn when it is written, chained on its run's head *as written so far*
(buffered turns included), which is what keeps ``write`` cheap. The committer then makes the
chain true (:func:`rechain`): each turn must follow its run's head *as committed* (plus the
turns before it in this commit); one that does not -- because a turn before it failed, or was
buffered behind a commit that lost a turn -- is encoded again at its real position. So
dropping one unit never breaks the chain of the units after it, and nothing else is lost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from maitred.log._chain import Head
from maitred.log.rows import TURN_COLUMNS, encode_snapshot, encode_turn
from maitred.records import TurnRecord

Row = tuple[Any, ...]
_SEQ, _PREV, _HASH = (TURN_COLUMNS.index(c) for c in ("chain_seq", "prev_hash", "row_hash"))


@dataclass
class Unit:
    """The rows of one ``write`` or ``write_decisions`` call.

    Attributes:
        index: its number among everything written to this log (1, 2, ...): what a flush
            waits for and what a failure is recorded under.
        record: the turn (None for a unit of action decisions).
        tenant: the turn's tenant (stamped on its row).
        turn: its ``turns`` row; ``pairs`` its pair rows; ``depth`` its depth row.
        snapshot: the ``snapshots`` row this unit carries (the first turn to see it).
        decisions: ``action_decisions`` rows.
    """

    index: int
    record: TurnRecord | None = None
    tenant: str = ""
    turn: Row = ()
    pairs: list[Row] = field(default_factory=list)
    depth: Row | None = None
    snapshot: Row | None = None
    decisions: list[Row] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return "" if self.record is None else str(self.record.run_id)

    def describe(self) -> str:
        if self.record is not None:
            return f"turn {self.record.turn_id!r}"
        return f"{len(self.decisions)} action decision(s) ({self.decisions[0][0]!r}, ...)"

    def alone(self) -> Unit:
        """The unit with its snapshot row, for a commit of its own (it may not carry it)."""
        snap = None if self.record is None else self.record.snapshot
        if snap is None or self.snapshot is not None:
            return self
        row = encode_snapshot(snap, str(self.record.turn_id)) if self.record else None
        return Unit(self.index, self.record, self.tenant, self.turn, self.pairs, self.depth, row)


def rechain(units: Iterable[Unit], committed: Callable[[str], Head | None]) -> dict[str, Head]:
    """Put every turn of ``units`` at its real chain position (in place); the heads reached.

    Args:
        units: in the order they are to be inserted.
        committed: a run's committed head (None: unknown, the turn is kept as written).
    """
    heads: dict[str, Head] = {}
    for unit in units:
        if unit.record is None:
            continue
        run = unit.run_id
        head = heads.get(run) or committed(run)
        if head is not None and (unit.turn[_SEQ], unit.turn[_PREV]) != (head[0] + 1, head[1]):
            again = encode_turn(unit.record, seq=head[0] + 1, prev_hash=head[1], tenant=unit.tenant)
            unit.turn, unit.pairs, unit.depth = again.turn, again.pairs, again.depth
        heads[run] = (int(unit.turn[_SEQ]), str(unit.turn[_HASH]))
    return heads
