"""The state an action gate reads: a JSON document, or a flat :class:`Snapshot`.

Policy predicates read ``state.<path>``; an :class:`ActionState` answers one path at a time
without copying (a gate check must stay well under a millisecond, so values are passed by
reference and never mutated). Freshness is per path prefix: ``key_as_of={"flights": t}`` says the
flights part of the document was last known true at ``t``; a path without a prefix entry is as
fresh as the document's ``read_at`` (``None``: current at the gate's clock).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from maitred.state.snapshot import Snapshot

MISSING: Any = object()
"""Returned by :meth:`ActionState.lookup` for a path that does not exist."""


@runtime_checkable
class ActionState(Protocol):
    """Authoritative state for the action gate."""

    def lookup(self, path: Sequence[str]) -> Any:
        """The value at ``path`` (keys from the root), or :data:`MISSING`."""
        ...

    def as_of(self, path: Sequence[str]) -> float | None:
        """When the value at ``path`` was last known true (unix seconds); ``None`` = now."""
        ...


def walk(root: Any, path: Sequence[str]) -> Any:
    """Follow ``path`` through nested mappings (and lists, by decimal index)."""
    node = root
    for part in path:
        if isinstance(node, Mapping):
            if part not in node:
                return MISSING
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return MISSING
    return node


@dataclass(frozen=True)
class DocumentState:
    """One JSON document (the tau2 airline database, for instance).

    Attributes:
        doc: the document; read, never written, by the gate.
        read_at: when the document was read (unix seconds); ``None`` = current.
        key_as_of: dotted prefix (``"flights"``) -> when that part was last known true.
    """

    doc: Mapping[str, Any]
    read_at: float | None = None
    key_as_of: Mapping[str, float] = field(default_factory=dict)

    def lookup(self, path: Sequence[str]) -> Any:
        return walk(self.doc, path)

    def as_of(self, path: Sequence[str]) -> float | None:
        if self.key_as_of:
            for i in range(len(path), 0, -1):
                hit = self.key_as_of.get(".".join(path[:i]))
                if hit is not None:
                    return hit
        return self.read_at


@dataclass(frozen=True)
class SnapshotState:
    """A flat :class:`Snapshot` (``"account.plan"`` keys) seen as action state.

    ``state.account.plan`` finds the key ``account.plan``; a longer path walks into the value
    of its longest stored prefix.
    """

    snapshot: Snapshot
    #: why the state could not be read (the provider's error); ``""`` when it was read
    unavailable: str = ""

    def lookup(self, path: Sequence[str]) -> Any:
        values = self.snapshot.values
        for i in range(len(path), 0, -1):
            key = ".".join(path[:i])
            if key in values:
                return walk(values[key], path[i:])
        return MISSING

    def as_of(self, path: Sequence[str]) -> float | None:
        for i in range(len(path), 0, -1):
            key = ".".join(path[:i])
            if key in self.snapshot.values:
                return self.snapshot.key_as_of.get(key, self.snapshot.as_of)
        return self.snapshot.as_of


def as_action_state(state: ActionState | Snapshot | Mapping[str, Any]) -> ActionState:
    """Accept a document, a snapshot or an :class:`ActionState` where a gate needs state."""
    if isinstance(state, Snapshot):
        return SnapshotState(state)
    if isinstance(state, Mapping):
        return DocumentState(state)
    return state
