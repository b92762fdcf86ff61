"""Snapshots of authoritative account state and the provider interface.

A :class:`Snapshot` holds exactly the keys the gate asked for in one turn, fetched in one
batch: the values, when each was last known to be true (``key_as_of``), which keys the source
did not have, the source's own version (an etag, a row version, a file mtime), whether the source
knows the account at all, and a content hash of all of it. The hash is what the decision log
keeps so a turn can be replayed and audited.

"A key is missing" and "the account does not exist" are different facts: the first is data for
a predicate's ``on_missing`` fail mode (a customer with no domain record yet), the second means
every value the gate would read is unknown, so the gate fails closed with its own cause
(``account_not_found``) instead of letting ``on_missing: offer`` predicates pass.
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
        account_found: True when the source knows the account, False when it has no record of
            it at all, None when the source cannot tell (see :class:`StateProvider`).
        hash: content hash of (account, values, key_as_of, missing, and ``account_found``
            when it is False, and ``invalid`` when it is not empty); see :meth:`compute_hash`.
        invalid: key -> why its value does not fit the key's declared type (a 2 in a BOOLEAN
            column); such a key is in ``values`` as read, and every predicate reading it is an
            evaluation error (it holds). See :mod:`maitred.state.schema`.
    """

    account: str
    values: Mapping[str, Any]
    as_of: float
    key_as_of: Mapping[str, float] = field(default_factory=dict)
    missing: frozenset[str] = frozenset()
    version: str = ""
    hash: str = ""
    account_found: bool | None = None
    invalid: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.hash:
            object.__setattr__(self, "hash", self.compute_hash())

    def compute_hash(self) -> str:
        """Recompute the content hash (what ``log verify`` checks)."""
        return content_hash(self.to_json(with_hash=False))

    def invalid_reads(self, keys: Collection[str]) -> str:
        """Why some of ``keys`` hold no valid value ("" when all are valid)."""
        if not self.invalid:
            return ""
        bad = [f"{key}: {self.invalid[key]}" for key in keys if key in self.invalid]
        return "; ".join(bad) and f"invalid state (does not fit its type): {'; '.join(bad)}"

    def age(self, key: str, now: float) -> float:
        """Seconds between the key's last update and ``now``."""
        return max(0.0, now - self.key_as_of.get(key, self.as_of))

    def to_json(self, *, with_hash: bool = True) -> dict[str, Any]:
        """The snapshot as a JSON object (what the log stores).

        ``account_found`` is written only when it is False: a snapshot of a known account (or
        from a source that cannot tell) keeps exactly the JSON, and so the hash, it had before
        the field existed, and every stored snapshot still verifies; ``invalid`` likewise is
        written only when some key is invalid.
        """
        out: dict[str, Any] = {
            "account": self.account,
            "values": dict(self.values),
            "as_of": self.as_of,
            "key_as_of": dict(self.key_as_of),
            "missing": sorted(self.missing),
            "version": self.version,
        }
        if self.account_found is False:
            out["account_found"] = False
        if self.invalid:
            out["invalid"] = dict(sorted(self.invalid.items()))
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
            account_found=False if data.get("account_found") is False else None,
            invalid={str(k): str(v) for k, v in dict(data.get("invalid") or {}).items()},
        )


@runtime_checkable
class StateProvider(Protocol):
    """A source of authoritative account state.

    ``fetch`` is called once per turn with every key the turn's candidates need. It must return
    a snapshot listing, for each requested key, either a value or the key in ``missing``, and
    should set ``account_found`` (False when the source has no record of the account at all;
    None when it cannot tell). It raises :class:`~maitred.errors.ProviderError` when the source
    fails; the gate then blocks every candidate that reads state, with the cause
    ``state_unavailable`` (and says so in the log).
    """

    def fetch(self, account: str, keys: Collection[str]) -> Snapshot: ...


@runtime_checkable
class CoverageAware(Protocol):
    """A provider that knows, before any fetch, which keys it can never serve.

    SQL providers map key roots to tables and callable providers map names to fetchers: a key
    whose root has no table (or no fetcher) is missing for *every* account, which silently
    turns ``on_missing: offer`` predicates into offers. The gate asks such providers, when a
    pipeline is built, whether they cover every key the catalog's predicates read
    (:func:`maitred.gate.executability.require_coverage`).
    """

    def uncovered(self, keys: Collection[str]) -> frozenset[str]:
        """The subset of ``keys`` this provider has no source for."""
        ...


def now() -> float:
    """The wall clock, in one place so tests and replays can pass their own."""
    return time.time()
