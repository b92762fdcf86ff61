"""Snapshots of authoritative account state and the provider interface.

A :class:`Snapshot` holds exactly the keys the gate asked for in one turn, fetched in one
batch: the values, when each was last known to be true (``key_as_of``), which keys the source
did not have, the source's own version (an etag, a row version, a file mtime) and a content hash
of all of it. The hash is what the decision log keeps so a turn can be replayed and audited.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from maitred._canonical import content_hash


@dataclass(frozen=True)
class Snapshot:
    """The state one turn's gate saw.

    Attributes:
        account: whose state this is.
        values: key -> JSON value, for the keys that were found.
        as_of: when the snapshot was taken (unix seconds).
        key_as_of: key -> when that value was last updated at the source (unix seconds);
            a key without an entry is taken as current at ``as_of``.
        missing: the requested keys the source did not have.
        version: the source's own version marker, if it has one.
        hash: content hash of (account, values, key_as_of, missing); see :meth:`compute_hash`.
    """

    account: str
    values: Mapping[str, Any]
    as_of: float
    key_as_of: Mapping[str, float] = field(default_factory=dict)
    missing: frozenset[str] = frozenset()
    version: str = ""
    hash: str = ""

    def __post_init__(self) -> None:
        if not self.hash:
            object.__setattr__(self, "hash", self.compute_hash())

    def compute_hash(self) -> str:
        """Recompute the content hash (what ``log verify`` checks)."""
        return content_hash(self.to_json(with_hash=False))

    def age(self, key: str, now: float) -> float:
        """Seconds between the key's last update and ``now``."""
        return max(0.0, now - self.key_as_of.get(key, self.as_of))

    def to_json(self, *, with_hash: bool = True) -> dict[str, Any]:
        """The snapshot as a JSON object (what the log stores)."""
        out: dict[str, Any] = {
            "account": self.account,
            "values": dict(self.values),
            "as_of": self.as_of,
            "key_as_of": dict(self.key_as_of),
            "missing": sorted(self.missing),
            "version": self.version,
        }
        if with_hash:
            out["hash"] = self.hash
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Snapshot:
        """Rebuild a snapshot stored by :meth:`to_json` (keeping the stored hash as it is)."""
        return cls(
            account=str(data["account"]),
            values=dict(data["values"]),
            as_of=float(data["as_of"]),
            key_as_of={k: float(v) for k, v in dict(data.get("key_as_of", {})).items()},
            missing=frozenset(data.get("missing", ())),
            version=str(data.get("version", "")),
            hash=str(data.get("hash", "")),
        )


@runtime_checkable
class StateProvider(Protocol):
    """A source of authoritative account state.

    ``fetch`` is called once per turn with every key the turn's candidates need. It must return
    a snapshot listing, for each requested key, either a value or the key in ``missing``. It
    raises :class:`~maitred.errors.ProviderError` when the source fails; the gate then treats
    every key as missing (and says so in the log).
    """

    def fetch(self, account: str, keys: Collection[str]) -> Snapshot: ...


def now() -> float:
    """The wall clock, in one place so tests and replays can pass their own."""
    return time.time()
