"""Evaluate one predicate against one snapshot: the single code path gate and procedures share.

Rules, in order:

1. a declared key the snapshot lacks -> status ``missing``; the predicate holds iff its
   ``on_missing`` fail mode is ``"block"``;
2. a declared key older than its ``max_age_s`` bound -> status ``stale``; holds iff
   ``on_stale == "block"``;
3. otherwise the predicate runs; an exception of any kind (a CEL error, a Python bug, an
   undeclared read) -> status ``error`` and the predicate **holds**. An error never passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from maitred.contract.predicate import Predicate, StateView, max_age_for
from maitred.state.snapshot import Snapshot

Status = Literal["ok", "missing", "stale", "error"]


@dataclass(frozen=True)
class PredicateOutcome:
    """What evaluating one predicate gave.

    Attributes:
        predicate: the predicate's name.
        version: its version hash.
        holds: True when the exit condition counts as true (the skill is blocked / exits).
        status: ``ok`` (evaluated), ``missing`` / ``stale`` (a policy decided), ``error``.
        values: the state values the predicate declared, as read (absent keys left out).
        detail: why, for people: the error text or the keys that were missing or stale.
    """

    predicate: str
    version: str
    holds: bool
    status: Status
    values: Mapping[str, Any] = field(default_factory=dict)
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "predicate": self.predicate,
            "version": self.version,
            "holds": self.holds,
            "status": self.status,
            "values": dict(self.values),
            "detail": self.detail,
        }


def evaluate(predicate: Predicate, snapshot: Snapshot, now: float) -> PredicateOutcome:
    """Evaluate ``predicate`` on ``snapshot`` at time ``now`` (see the module rules)."""
    if invalid := snapshot.invalid_reads(predicate.reads):  # a value unfit for its type
        return PredicateOutcome(predicate.name, predicate.version, True, "error", {}, invalid)
    reads, state = predicate.reads, snapshot.values
    values = {k: state[k] for k in reads if k in state}
    if len(values) < len(reads):
        missing = [k for k in reads if k not in state]
        return PredicateOutcome(
            predicate.name,
            predicate.version,
            predicate.on_missing == "block",
            "missing",
            values,
            f"missing state: {', '.join(missing)} (on_missing: {predicate.on_missing})",
        )
    bounds = predicate.max_age_s
    stale = (
        [
            k
            for k in reads
            if (bound := max_age_for(bounds, k)) is not None and snapshot.age(k, now) > bound
        ]
        if bounds is not None
        else ()
    )
    if stale:
        return PredicateOutcome(
            predicate.name,
            predicate.version,
            predicate.on_stale == "block",
            "stale",
            values,
            f"stale state (older than its freshness bound): {', '.join(stale)} "
            f"(on_stale: {predicate.on_stale})",
        )
    try:
        held = predicate.holds(
            StateView(snapshot.values, predicate.reads, predicate.name, snapshot.as_of)
        )
    except Exception as exc:
        return PredicateOutcome(
            predicate.name,
            predicate.version,
            True,
            "error",
            values,
            f"{type(exc).__name__}: {exc} (an error counts as holding)",
        )
    return PredicateOutcome(predicate.name, predicate.version, held, "ok", values)
