"""``verify``: recompute every stored hash, walk every run's hash chain, check the guards.

What is checked (through the :class:`~maitred.log.base.DecisionLog` interface and plain read
SQL, so both backends alike):

* **the guards**: every append-only trigger the applied migrations created is there, unchanged
  (SQLite: its stored SQL is the migration's text) and enabled (PostgreSQL: ``pg_trigger``, and
  the guard function still raises) -- a dropped or altered trigger is reported by name;
* **runs**: each ``runs`` row hashes to its ``row_hash``
  (:func:`~maitred.log.rows.run_hash_payload`); runs begun before ``0008_hash_chain`` have
  none (below: *pre-chain*);
* **turns**, run by run in chain order: ``row_hash`` equals the content hash of
  :func:`~maitred.log.rows.row_hash_payload` over the stored turn, pair and depth rows (an edit
  of any turn or pair column, a pair added or removed, a depth row removed shows up here); the
  number of pairs equals ``n_candidates``; ``snapshot_hash`` names a stored snapshot;
* **the chain**: positions run 1, 2, 3, ... with no gap, each turn's ``prev_hash`` is the
  ``row_hash`` of the turn before it (the run row's for the first) -- a turn deleted with its
  pairs, inserted, or moved breaks the link after it; each ``chain_heads`` row (one per
  committed batch) names a turn that is there with that hash, and no turn lies past the last
  one -- turns cut from, or added to, the end of a run show up here;
* **leftovers**: turns, pairs or depth rows that belong to no run or turn in the log;
* **snapshots**: the ``json`` text hashes to the ``hash`` key, ``account_id`` / ``as_of`` agree;
* **action decisions** (:mod:`maitred.log.action_rows`): ``decision_json`` hashes to
  ``decision_hash`` and every query column agrees with it; **depth decisions** hash to their
  ``row_hash``;
* **decisions and their turns** (``turn_link``): a decision that names a turn names one that
  is in the log, of the same session (``conversation_id``) and tenant; an *allowed* call is
  for a tool that turn exposed (a rejection records why it was not, in its code);
* **the links chain** (``link``, :mod:`maitred.log.links`): every stream of links hashes
  link to link up to its last recorded head; each linked turn and action decision is there
  with the hash it was linked with, and each linked turn keeps its ``turn_seq`` (a session's
  order) and, on SQLite, the rowid it was inserted at -- so a deleted decision, a turn moved
  to its session's end or re-ordered, is reported;
* **approvals** (``approval_link``): a decision made with a person's answer (its JSON's
  ``approval``) names in ``approval.of`` a decision that is in the log, is
  ``APPROVAL_REQUIRED`` and asked no one before it, of the same session and tenant, on the
  same call (name, arguments, call id); an allowed one was made on a yes (``approve``).

Everything is read in one snapshot (:meth:`~maitred.log.base.DecisionLog.read_snapshot`:
one SQLite read transaction, or PostgreSQL ``REPEATABLE READ``), so a verify that runs while
writers commit sees each commit wholly or not at all -- never a decision without the turn
committed with it, or a chain head without its turns -- and reports no tampering that did
not happen.

What it cannot prove: the hashes are keyless, so someone who rewrites a whole run -- every
turn's hash recomputed, the chain rebuilt, its heads rewritten -- or deletes a run entirely
leaves a log that verifies. The report gives each run's head (last position and hash); kept
outside the log (a ticket, a signed message), a head pins the run up to that point.

**Unchained rows** (``unchained``, :mod:`maitred.log.chained_only`): once the chain has
begun, every run has a row hash, every turn a chain position, every action decision (tasks and
approvals included) a link. A row without one is *pre-chain* only when migration ``0012``
recorded it as there before the chain (``prechain``): it is checked against its own hash
(layout 1 for a turn) and counted (``legacy_runs``, ``legacy_turns``, ``legacy_decisions``),
its reordering cannot be detected, a deletion of it can. Any other unchained row -- on a log
created at ``0012`` or later, every one -- was inserted afterwards and is reported as
tampering; so is a depth row of an unchained turn that ``0012`` did not record.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Literal

from maitred._canonical import HASH_SCHEME, content_hash
from maitred.errors import VerifyError
from maitred.log._decision_links import ApprovalLinks, TurnLinks
from maitred.log._guards import check_triggers
from maitred.log.action_rows import COPIED_COLUMNS, decision_columns
from maitred.log.base import DecisionLog, open_log
from maitred.log.chained_only import check_prechain, prechain
from maitred.log.links import check_links
from maitred.log.rows import (
    RUN_COLUMNS,
    _content_hash_fast,
    depth_payload,
    row_hash_payload,
    run_hash_payload,
)

MismatchKind = Literal[
    "row_hash",
    "pair_count",
    "missing_snapshot",
    "snapshot_hash",
    "snapshot",
    "decision_hash",
    "decision",
    "depth_hash",
    "run_hash",
    "chain",
    "chain_head",
    "leftover",
    "trigger",
    "turn_link",
    "approval_link",
    "link",
    "unchained",
    "unreadable",
]


@dataclass(frozen=True)
class Mismatch:
    """One thing that did not check out.

    Attributes:
        kind: what was checked.
        key: the turn id, run id, snapshot hash, decision id or trigger name.
        detail: stored versus recomputed, for people.
    """

    kind: MismatchKind
    key: str
    detail: str


@dataclass(frozen=True)
class RunHead:
    """Where a run's chain ends: record it elsewhere to pin the run (see the module docstring).

    Attributes:
        run_id: the run.
        turns: the position of its last chained turn (its number of chained turns).
        head: that turn's row hash (the run row's hash when it has no turn yet).
    """

    run_id: str
    turns: int
    head: str


@dataclass(frozen=True)
class VerifyReport:
    """The result of :func:`verify`.

    Attributes:
        turns: turns checked.
        pairs: pair rows checked.
        snapshots: snapshots checked.
        mismatch_count: every problem found.
        mismatches: the first ``limit`` of each kind, in the order found.
        decisions: action-gate decisions checked.
        runs: runs checked.
        triggers: append-only triggers checked.
        legacy_runs: runs begun before the hash chain (no row hash), as migration ``0012``
            recorded them (:mod:`maitred.log.chained_only`): *pre-chain*, not tampering.
        legacy_turns: turns written before the hash chain (hashed, not chained), likewise.
        heads: each run's chain head.
        legacy_decisions: action decisions logged before the links chain (hashed, not
            linked), likewise.
    """

    turns: int
    pairs: int
    snapshots: int
    mismatch_count: int
    mismatches: tuple[Mismatch, ...] = field(default_factory=tuple)
    decisions: int = 0
    runs: int = 0
    triggers: int = 0
    legacy_runs: int = 0
    legacy_turns: int = 0
    heads: tuple[RunHead, ...] = ()
    legacy_decisions: int = 0

    @property
    def ok(self) -> bool:
        """True when every hash, link, count and guard checked out."""
        return self.mismatch_count == 0

    def summary(self) -> str:
        """For people: what was checked and whether it matched, then the mismatches."""
        head = (
            f"{'OK' if self.ok else 'FAILED'}: {self.runs:,} runs, {self.turns:,} turns, "
            f"{self.pairs:,} pairs, {self.snapshots:,} snapshots, {self.decisions:,} action "
            f"decisions, {self.triggers} triggers checked; {self.mismatch_count} mismatch(es)"
        )
        lines = [f"  {m.kind} {m.key}: {m.detail}" for m in self.mismatches]
        if self.mismatch_count > len(self.mismatches):
            lines.append(f"  ... and {self.mismatch_count - len(self.mismatches)} more")
        if self.legacy_runs or self.legacy_turns or self.legacy_decisions:
            lines.append(
                f"  pre-chain (logged before the chains, as migration 0012 recorded them): "
                f"{self.legacy_runs} run(s) without a row hash, {self.legacy_turns} turn(s) "
                f"hashed but not chained, {self.legacy_decisions} decision(s) hashed but not "
                "linked (reordering them cannot be detected; no session takes such a turn as "
                "an offer)"
            )
        return "\n".join([head, *lines])

    def to_json(self) -> dict[str, Any]:
        """The report as JSON (``ok`` included; mismatches and run heads as objects)."""
        return {
            "ok": self.ok,
            "runs": self.runs,
            "turns": self.turns,
            "pairs": self.pairs,
            "snapshots": self.snapshots,
            "decisions": self.decisions,
            "triggers": self.triggers,
            "legacy_runs": self.legacy_runs,
            "legacy_turns": self.legacy_turns,
            "legacy_decisions": self.legacy_decisions,
            "mismatch_count": self.mismatch_count,
            "mismatches": [
                {"kind": m.kind, "key": m.key, "detail": m.detail} for m in self.mismatches
            ],
            "heads": [{"run_id": h.run_id, "turns": h.turns, "head": h.head} for h in self.heads],
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
    """Counts every mismatch and keeps the first ``limit`` of each kind, so that one kind (a
    dropped guard on every table, say) cannot crowd out another (the edit made after it)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0
        self.kept: list[Mismatch] = []
        self._per_kind: dict[str, int] = {}

    def add(self, kind: MismatchKind, key: str, detail: str) -> None:
        self.count += 1
        seen = self._per_kind.get(kind, 0)
        if seen < self.limit:
            self._per_kind[kind] = seen + 1
            self.kept.append(Mismatch(kind, key, detail))


def _recompute(stored: str, value: Any) -> str:
    """The hash of ``value`` with the scheme ``stored`` names (raises ValueError if unknown)."""
    scheme = stored.split(":", 1)[0] if ":" in stored else ""
    if scheme == HASH_SCHEME:
        return _content_hash_fast(value)
    return content_hash(value, scheme=scheme)


def _check_turn(turn: dict[str, Any], known_snapshots: set[str], out: _Collector) -> None:
    tid = str(turn["turn_id"])
    pairs = turn["pairs"]
    stored = str(turn["row_hash"])
    try:
        fresh = _recompute(stored, row_hash_payload(turn, pairs, turn.get("depth_hash")))
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


class _Chain:
    """Walks one run's turns in chain order (see the module docstring)."""

    def __init__(
        self,
        run_id: str,
        run_hash: str | None,
        checkpoints: dict[int, str],
        prechain: frozenset[str] = frozenset(),
    ) -> None:
        self.run_id = run_id
        self.hashed_run = run_hash is not None
        self.seq = 0
        self.head = run_hash or ""
        self.checkpoints = checkpoints
        self.prechain = prechain

    def step(self, turn: dict[str, Any], out: _Collector) -> bool:
        """Check one turn's link; False when it is not chained (pre-chain, or tampering)."""
        tid = str(turn["turn_id"])
        if turn["chain_seq"] is None:
            if tid not in self.prechain:
                why = "its run was begun with the chain" if self.hashed_run else "it is not"
                out.add(
                    "unchained",
                    tid,
                    f"has no chain position and is not among the turns migration 0012 found "
                    f"predating the chain ({why} one of them either): it was inserted "
                    "afterwards, and no session takes it as an offer",
                )
            return False
        seq, expected = int(turn["chain_seq"]), self.seq + 1
        if seq != expected:
            out.add(
                "chain",
                tid,
                f"is at position {seq}, but the run's turn before it is at "
                f"{self.seq}: turn(s) {expected}..{seq - 1} are missing",
            )
        elif turn["prev_hash"] != self.head:
            what = "the run row" if self.seq == 0 else f"turn {self.seq}"
            out.add(
                "chain",
                tid,
                f"links to {turn['prev_hash']}, but {what} hashes to "
                f"{self.head}: a turn before it was replaced or moved",
            )
        self.seq, self.head = seq, str(turn["row_hash"])
        recorded = self.checkpoints.get(seq)
        if recorded is not None and recorded != self.head:
            out.add(
                "chain_head",
                tid,
                f"a commit recorded position {seq} as {recorded}, "
                f"the turn there hashes to {self.head}",
            )
        return True

    def finish(self, out: _Collector) -> RunHead:
        """Check the run's end against its last recorded commit."""
        last = max(self.checkpoints, default=0)
        if last > self.seq:
            out.add(
                "chain_head",
                self.run_id,
                f"a commit recorded {last} turn(s), the chain "
                f"ends at {self.seq}: turns {self.seq + 1}..{last} were removed",
            )
        elif self.seq > last:
            out.add(
                "chain_head",
                self.run_id,
                f"turns {last + 1}..{self.seq} were never "
                "recorded by a commit: they were added afterwards",
            )
        return RunHead(self.run_id, self.seq, self.head)


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
    if not isinstance(data, dict):
        out.add("snapshot", key, f"its JSON is a {type(data).__name__}, not an object")
        return
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


def _run_rows(log: DecisionLog, run_id: str | None) -> list[dict[str, Any]]:
    where = " WHERE run_id = ?" if run_id is not None else ""
    rows = log.query(
        f"SELECT {', '.join(RUN_COLUMNS)} FROM runs{where} ORDER BY started_at, run_id",
        () if run_id is None else (run_id,),
    )
    return [dict(zip(RUN_COLUMNS, r, strict=True)) for r in rows]


def _checkpoints(log: DecisionLog, run_id: str) -> dict[int, str]:
    rows = log.query("SELECT chain_seq, head_hash FROM chain_heads WHERE run_id = ?", (run_id,))
    return {int(seq): str(digest) for seq, digest in rows}


def _check_leftovers(log: DecisionLog, turns: int, pairs: int, out: _Collector) -> None:
    """Rows that belong to no run or turn in the log (their owner was deleted)."""
    counts = {
        "turns": (int(log.query("SELECT COUNT(*) FROM turns")[0][0]) - turns, "run"),
        "pairs": (int(log.query("SELECT COUNT(*) FROM pairs")[0][0]) - pairs, "turn"),
        "depth_decisions": (
            int(
                log.query(
                    "SELECT COUNT(*) FROM depth_decisions d "
                    "WHERE NOT EXISTS (SELECT 1 FROM turns t WHERE t.turn_id = d.turn_id)"
                )[0][0]
            ),
            "turn",
        ),
    }
    for table, (extra, owner) in counts.items():
        if extra:
            out.add(
                "leftover",
                table,
                f"{extra} row(s) belong to no {owner} in the log: their {owner} was deleted",
            )


@dataclass
class _Tally:
    turns: int = 0
    pairs: int = 0
    legacy_runs: int = 0
    legacy_turns: int = 0
    heads: list[RunHead] = field(default_factory=list)


def _check_runs(
    log: DecisionLog,
    run_id: str | None,
    known: set[str],
    census: dict[str, frozenset[str]],
    out: _Collector,
) -> tuple[int, _Tally]:
    """Every run's header hash and its turns' hashes and chain."""
    tally = _Tally()
    runs = _run_rows(log, run_id)
    for run in runs:
        rid, stored = str(run["run_id"]), run["row_hash"]
        if stored is None and rid in census["run"]:
            tally.legacy_runs += 1
        elif stored is None:
            out.add(
                "unchained",
                rid,
                "the run has no row hash and is not among the runs migration 0012 found "
                "predating the chain: it was inserted afterwards",
            )
        elif _recompute(str(stored), run_hash_payload(run)) != stored:
            out.add(
                "run_hash",
                rid,
                f"the run row does not hash to its row_hash {stored}: a column of it was edited",
            )
        chain = _Chain(rid, stored, _checkpoints(log, rid), census["turn"])
        for turn in log.iter_turns(rid, order="chain"):
            tally.turns += 1
            tally.pairs += len(turn["pairs"])
            _check_turn(turn, known, out)
            if not chain.step(turn, out) and str(turn["turn_id"]) in census["turn"]:
                tally.legacy_turns += 1
        tally.heads.append(chain.finish(out))
    return len(runs), tally


def verify(
    log: DecisionLog | str | os.PathLike[str], *, run_id: str | None = None, limit: int = 20
) -> VerifyReport:
    """Check every hash, chain link and guard of the log (see the module docstring).

    Args:
        log: an open log, or a path / URL (opened read-only and closed again).
        run_id: check one run's turns only (snapshots, decisions and guards are always all
            checked; rows left by deleted runs are looked for only when checking every run).
        limit: how many mismatches of each kind to keep in the report (all are counted).

    Returns:
        The report; ``report.ok`` is True when everything matched.
    """
    if not isinstance(log, DecisionLog):
        with open_log(log, read_only=True) as opened:
            return verify(opened, run_id=run_id, limit=limit)
    with log.read_snapshot():
        return _verify(log, run_id, limit)


def _verify(log: DecisionLog, run_id: str | None, limit: int) -> VerifyReport:
    """:func:`verify`'s checks; a stored value of the wrong type for its column (SQLite keeps
    what it is given: ``''`` in an INTEGER column) is reported, never a crash."""
    out = _Collector(limit)
    try:
        return _checks(log, run_id, out)
    except (ValueError, TypeError, KeyError, json.JSONDecodeError) as exc:
        out.add(
            "unreadable",
            "",
            f"a stored value does not have its column's type ({type(exc).__name__}: {exc}): "
            "a row was edited outside maitred; the checks stopped there",
        )
        return VerifyReport(0, 0, 0, out.count, tuple(out.kept))


def _checks(log: DecisionLog, run_id: str | None, out: _Collector) -> VerifyReport:
    triggers = check_triggers(log, out.add)
    known: set[str] = set()
    n_snapshots = 0
    for row in log.iter_snapshots():
        n_snapshots += 1
        known.add(str(row["hash"]))
        _check_snapshot(row, out)
    census = prechain(log)
    n_runs, tally = _check_runs(log, run_id, known, census, out)
    if run_id is None:
        _check_leftovers(log, tally.turns, tally.pairs, out)
        check_prechain(log, census, out.add)
    n_decisions = 0
    links = TurnLinks(log)
    approvals = ApprovalLinks(log)
    legacy_decisions = 0
    for row in log.iter_action_decisions():
        n_decisions += 1
        legacy_decisions += str(row["decision_id"]) in census["decision"]
        _check_decision(row, out)
        links.check(row, out)
        approvals.check(row, out)
    check_links(log, out.add, census)
    for row in log.iter_depth_decisions():
        payload = depth_payload(row["turn_id"], row["depth_rule"], int(row["k"]), row["probs_json"])
        if _recompute(str(row["row_hash"]), payload) != row["row_hash"]:
            out.add("depth_hash", str(row["turn_id"]), "stored row hash differs from its content")
    return VerifyReport(
        tally.turns,
        tally.pairs,
        n_snapshots,
        out.count,
        tuple(out.kept),
        decisions=n_decisions,
        runs=n_runs,
        triggers=triggers,
        legacy_runs=tally.legacy_runs,
        legacy_turns=tally.legacy_turns,
        heads=tuple(tally.heads),
        legacy_decisions=legacy_decisions,
    )
