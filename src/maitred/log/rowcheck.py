"""Whether one decision's row still stands in its chains: ``verify``, for a single row.

``maitred log verify`` walks the whole log. The console's page of one decision asks the same
questions about that row alone, each answered by a few index reads:

* **hash** -- its stored hash is the hash of what is stored now (a turn's row hash over its
  pairs and depth row; an action decision's hash of its JSON; :mod:`maitred.log.lookup`);
* **run chain** (a turn) -- its ``prev_hash`` is the row hash of the turn before it in its run
  (the run row's own hash for the first), and the turn after it names its ``row_hash``;
* **link** -- its row in the links chain (:mod:`maitred.log.links`) names the row's stored
  hash, and that link's hash is recomputed from the previous link (or the stream's start).

A row written before the chains (``0008`` / ``0011``) has no chain position or link: that is
said as such (``pre-chain``, ``unlinked``), not as a fault. ``verify`` remains the check of
record: it also finds rows that were removed, which no single row can show.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from maitred.errors import LogError
from maitred.log.base import DecisionLog
from maitred.log.links import genesis, link_hash

Status = Literal["ok", "broken", "absent"]


@dataclass(frozen=True)
class RowCheck:
    """One question about a row, and its answer.

    Attributes:
        check: ``hash``, ``run chain`` or ``link``.
        status: ``ok``; ``broken`` (a fault); ``absent`` (the row predates that chain).
        detail: what was compared, in words.
    """

    check: str
    status: Status
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"check": self.check, "status": self.status, "detail": self.detail}


def chain_ok(checks: tuple[RowCheck, ...]) -> bool:
    """No check is broken."""
    return all(c.status != "broken" for c in checks)


def check_turn(log: DecisionLog, turn_id: str, hash_ok: bool) -> tuple[RowCheck, ...]:
    """The checks of the turn ``turn_id`` (``hash_ok``: its row hash, already recomputed)."""
    rows = log.query(
        "SELECT run_id, chain_seq, prev_hash, row_hash, turn_seq FROM turns WHERE turn_id = ?",
        (turn_id,),
    )
    if not rows:
        return (RowCheck("hash", "broken", "the turn is not in the log"),)
    run_id, seq, prev, own, turn_seq = rows[0]
    out = [_hash(hash_ok)]
    if seq is None:
        out.append(RowCheck("run chain", "absent", "written before the run's hash chain"))
    else:
        out.append(_run_chain(log, str(run_id), int(seq), str(prev), str(own)))
    out.append(_link(log, "turn", turn_id, str(own), turn_seq))
    return tuple(out)


def check_action(
    log: DecisionLog, decision_id: str, decision_hash: str, hash_ok: bool
) -> tuple[RowCheck, ...]:
    """The checks of the action decision ``decision_id``."""
    return (_hash(hash_ok), _link(log, "decision", decision_id, decision_hash, None))


def _hash(ok: bool) -> RowCheck:
    if ok:
        return RowCheck("hash", "ok", "the stored hash is the hash of the stored content")
    return RowCheck("hash", "broken", "the stored hash differs from the content's: edited")


def _run_chain(log: DecisionLog, run_id: str, seq: int, prev: str, own: str) -> RowCheck:
    if seq == 1:
        found = log.query("SELECT row_hash FROM runs WHERE run_id = ?", (run_id,))
        before, what = (found[0][0] if found else None), f"run {run_id}'s own hash"
    else:
        found = log.query(
            "SELECT row_hash FROM turns WHERE run_id = ? AND chain_seq = ?", (run_id, seq - 1)
        )
        before, what = (found[0][0] if found else None), f"turn {seq - 1} of run {run_id}"
    if before is None:
        return RowCheck("run chain", "broken", f"position {seq}: {what} is missing")
    if str(before) != prev:
        return RowCheck("run chain", "broken", f"position {seq}: prev_hash is not {what}")
    after = log.query(
        "SELECT prev_hash FROM turns WHERE run_id = ? AND chain_seq = ?", (run_id, seq + 1)
    )
    if after and str(after[0][0]) != own:
        return RowCheck(
            "run chain", "broken", f"position {seq}: turn {seq + 1} does not name this row's hash"
        )
    nxt = "the next turn names it" if after else "the run's last turn so far"
    return RowCheck("run chain", "ok", f"position {seq} of run {run_id}: follows {what}; {nxt}")


def _link(log: DecisionLog, kind: str, key: str, own: str, turn_seq: Any) -> RowCheck:
    try:
        rows = log.query(
            "SELECT stream, seq, row_hash, turn_seq, link_hash FROM links "
            "WHERE kind = ? AND key = ?",
            (kind, key),
        )
    except LogError:  # a log before 0011 has no links table
        rows = []
    if not rows:
        return RowCheck("link", "absent", "not in the links chain (written before 0011_links)")
    stream, seq, linked, linked_seq, digest = rows[0]
    if str(linked) != own:
        return RowCheck("link", "broken", f"link {stream}#{seq} names another hash for this row")
    if kind == "turn" and linked_seq != turn_seq:
        return RowCheck("link", "broken", f"link {stream}#{seq}: the turn was moved in its session")
    if int(seq) == 1:
        prev = genesis(str(stream))[1]
    else:
        found = log.query(
            "SELECT link_hash FROM links WHERE stream = ? AND seq = ?", (stream, int(seq) - 1)
        )
        if not found:
            return RowCheck("link", "broken", f"link {stream}#{int(seq) - 1} before it is missing")
        prev = str(found[0][0])
    if link_hash(prev, kind, key, own, linked_seq) != str(digest):
        return RowCheck("link", "broken", f"link {stream}#{seq}: its hash does not recompute")
    return RowCheck("link", "ok", f"link {seq} of stream {stream} recomputes from the one before")
