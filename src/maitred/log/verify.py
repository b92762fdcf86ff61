"""``verify``: recompute every stored hash and count from the stored rows themselves.

What is checked, per turn (through :meth:`DecisionLog.iter_turns`, so both backends):

* ``row_hash`` equals :func:`~maitred._canonical.content_hash` of
  :func:`~maitred.log.rows.row_hash_payload` over the stored turn and pair rows -- an edit of
  any turn or pair column, or a pair added or removed, shows up here;
* the number of stored pairs equals ``n_candidates``;
* ``snapshot_hash``, when set, names a stored snapshot;

per snapshot: its ``json`` text hashes (with the scheme named in the stored hash) to its
``hash`` key, and its ``account_id`` / ``as_of`` columns agree with the JSON;

and per action decision (``action_decisions``, see :mod:`maitred.log.action_rows`): its
``decision_json`` text hashes to ``decision_hash``, and every query column (decision id, session,
tool, verdict, code, fields, policy, versions, mutates, clock) agrees with that JSON.

The first ``limit`` problems are kept with the turn id, snapshot hash or decision id; all are
counted.
:meth:`VerifyReport.raise_for_mismatch` turns a failed report into
:class:`~maitred.errors.VerifyError` for callers that want an exception.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Literal

from maitred._canonical import content_hash
from maitred.errors import VerifyError
from maitred.log.action_rows import COPIED_COLUMNS, decision_columns
from maitred.log.base import DecisionLog, open_log
from maitred.log.rows import depth_payload, row_hash_payload

MismatchKind = Literal[
    "row_hash",
    "pair_count",
    "missing_snapshot",
    "snapshot_hash",
    "snapshot",
    "decision_hash",
    "decision",
    "depth_hash",
]


@dataclass(frozen=True)
class Mismatch:
    """One thing that did not check out.

    Attributes:
        kind: what was checked.
        key: the turn id, the snapshot hash, or the decision id.
        detail: stored versus recomputed, for people.
    """

    kind: MismatchKind
    key: str
    detail: str


@dataclass(frozen=True)
class VerifyReport:
    """The result of :func:`verify`.

    Attributes:
        turns: turns checked.
        pairs: pair rows checked.
        snapshots: snapshots checked.
        mismatch_count: every problem found.
        mismatches: the first ``limit`` of them.
        decisions: action-gate decisions checked.
    """

    turns: int
    pairs: int
    snapshots: int
    mismatch_count: int
    mismatches: tuple[Mismatch, ...] = field(default_factory=tuple)
    decisions: int = 0

    @property
    def ok(self) -> bool:
        """True when every hash and count checked out."""
        return self.mismatch_count == 0

    def summary(self) -> str:
        """One line for people: what was checked and whether it matched, then the mismatches."""
        head = (
            f"{'OK' if self.ok else 'FAILED'}: {self.turns:,} turns, {self.pairs:,} pairs, "
            f"{self.snapshots:,} snapshots, {self.decisions:,} action decisions checked; "
            f"{self.mismatch_count} mismatch(es)"
        )
        lines = [f"  {m.kind} {m.key}: {m.detail}" for m in self.mismatches]
        if self.mismatch_count > len(self.mismatches):
            lines.append(f"  ... and {self.mismatch_count - len(self.mismatches)} more")
        return "\n".join([head, *lines])

    def to_json(self) -> dict[str, Any]:
        """The report as JSON (``ok`` included; mismatches as objects)."""
        return {
            "ok": self.ok,
            "turns": self.turns,
            "pairs": self.pairs,
            "snapshots": self.snapshots,
            "decisions": self.decisions,
            "mismatch_count": self.mismatch_count,
            "mismatches": [
                {"kind": m.kind, "key": m.key, "detail": m.detail} for m in self.mismatches
            ],
        }

    def raise_for_mismatch(self) -> None:
        """Raise :class:`VerifyError` listing the first mismatches unless :attr:`ok`."""
        if self.ok:
            return
        lines = "; ".join(f"{m.kind} {m.key}: {m.detail}" for m in self.mismatches)
        raise VerifyError(
            f"decision log verification failed: {self.mismatch_count} mismatch(es) over "
            f"{self.turns} turns, {self.snapshots} snapshots and {self.decisions} action "
            f"decisions, first: {lines}. The log was "
            "edited or corrupted after it was written; restore it from a copy, or re-run "
            "the affected turns"
        )


class _Collector:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0
        self.kept: list[Mismatch] = []

    def add(self, kind: MismatchKind, key: str, detail: str) -> None:
        self.count += 1
        if len(self.kept) < self.limit:
            self.kept.append(Mismatch(kind, key, detail))


def _recompute(stored: str, value: Any) -> str:
    """The hash of ``value`` with the scheme ``stored`` names (raises ValueError if unknown)."""
    scheme = stored.split(":", 1)[0] if ":" in stored else ""
    return content_hash(value, scheme=scheme)


def _check_turn(turn: dict[str, Any], known_snapshots: set[str], out: _Collector) -> None:
    tid = str(turn["turn_id"])
    pairs = turn["pairs"]
    stored = str(turn["row_hash"])
    try:
        fresh = _recompute(stored, row_hash_payload(turn, pairs))
    except ValueError as exc:
        out.add("row_hash", tid, f"cannot recompute: {exc}")
    else:
        if fresh != stored:
            out.add("row_hash", tid, f"stored {stored}, recomputed {fresh}")
    if len(pairs) != turn["n_candidates"]:
        out.add("pair_count", tid, f"n_candidates={turn['n_candidates']}, pairs={len(pairs)}")
    snap = turn["snapshot_hash"]
    if snap is not None and snap not in known_snapshots:
        out.add("missing_snapshot", tid, f"snapshot {snap} is not in the log")


def _check_snapshot(row: dict[str, Any], out: _Collector) -> None:
    key = str(row["hash"])
    try:
        data = json.loads(row["json"])
        fresh = _recompute(key, data)
    except ValueError as exc:
        out.add("snapshot_hash", key, f"cannot recompute: {exc}")
        return
    if fresh != key:
        out.add("snapshot_hash", key, f"content hashes to {fresh}")
    if data.get("account") != row["account_id"] or data.get("as_of") != row["as_of"]:
        out.add(
            "snapshot",
            key,
            f"columns account_id={row['account_id']!r}, as_of={row['as_of']!r} disagree with "
            f"its JSON ({data.get('account')!r}, {data.get('as_of')!r})",
        )


def _check_decision(row: dict[str, Any], out: _Collector) -> None:
    key = str(row["decision_id"])
    stored = str(row["decision_hash"])
    try:
        data = json.loads(row["decision_json"])
        fresh = _recompute(stored, data)
        cols = decision_columns(data)
    except (ValueError, KeyError, TypeError) as exc:
        out.add("decision_hash", key, f"cannot recompute: {exc}")
        return
    if fresh != stored:
        out.add("decision_hash", key, f"stored {stored}, recomputed {fresh}")
    wrong = [c for c in COPIED_COLUMNS if cols[c] != row[c]]
    if wrong:
        detail = ", ".join(f"{c}={row[c]!r} (JSON: {cols[c]!r})" for c in wrong)
        out.add("decision", key, f"columns disagree with its JSON: {detail}")


def verify(
    log: DecisionLog | str | os.PathLike[str], *, run_id: str | None = None, limit: int = 20
) -> VerifyReport:
    """Recompute every turn's, snapshot's and action decision's hash from the stored rows.

    Args:
        log: an open log, or a path / URL (opened read-only and closed again).
        run_id: check one run's turns only (snapshots are always all checked).
        limit: how many mismatches to keep in the report (all are counted).

    Returns:
        The report; ``report.ok`` is True when everything matched.
    """
    if not isinstance(log, DecisionLog):
        with open_log(log, read_only=True) as opened:
            return verify(opened, run_id=run_id, limit=limit)
    out = _Collector(limit)
    known: set[str] = set()
    n_snapshots = 0
    for row in log.iter_snapshots():
        n_snapshots += 1
        known.add(str(row["hash"]))
        _check_snapshot(row, out)
    n_turns = n_pairs = 0
    for turn in log.iter_turns(run_id):
        n_turns += 1
        n_pairs += len(turn["pairs"])
        _check_turn(turn, known, out)
    n_decisions = 0
    for row in log.iter_action_decisions():
        n_decisions += 1
        _check_decision(row, out)
    for row in log.iter_depth_decisions():
        payload = depth_payload(row["turn_id"], row["depth_rule"], int(row["k"]), row["probs_json"])
        if _recompute(str(row["row_hash"]), payload) != row["row_hash"]:
            out.add("depth_hash", str(row["turn_id"]), "stored row hash differs from its content")
    return VerifyReport(
        n_turns, n_pairs, n_snapshots, out.count, tuple(out.kept), decisions=n_decisions
    )
