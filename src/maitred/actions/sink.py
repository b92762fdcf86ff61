"""Where action decisions go: the decision log, or anything else that takes them in batches.

A :class:`DecisionSink` is one method, ``write_decisions(decisions)``. Every decision log
(:func:`maitred.log.open_log`) is one: it buffers the decisions and writes them to its
``action_decisions`` table -- decision id, session, tool, verdict, code, fields, policy and
predicate versions, the decision's canonical JSON and its content hash -- in the same batches as
turns, so they are durable after ``flush()`` / ``close()``. :class:`MemorySink` keeps them in a
list (tests, evaluations).

Give a sink to :class:`~maitred.actions.ActionGate` (``log=``) and every ``check`` is recorded,
whichever wrapper made the call. A sink that raises (a broken log) makes ``check`` raise: the
call does not run, and the error says why -- a decision that cannot be recorded is not taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from maitred.actions.model import Decision


@runtime_checkable
class DecisionSink(Protocol):
    """Takes action decisions, in order (a decision log, a list, a queue)."""

    def write_decisions(self, decisions: Sequence[Decision]) -> None:
        """Record ``decisions`` (buffering is allowed; a flush makes them durable)."""
        ...


class MemorySink:
    """A :class:`DecisionSink` that keeps every decision in :attr:`decisions`."""

    def __init__(self) -> None:
        self.decisions: list[Decision] = []

    def write_decisions(self, decisions: Sequence[Decision]) -> None:
        """Append ``decisions`` to :attr:`decisions`."""
        self.decisions.extend(decisions)
