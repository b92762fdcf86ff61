"""The links chain: every row a later decision reads back, in one hash chain per writer.

The turns of a run are chained (:mod:`maitred.log.rows`), but what a *check* reads back from
the log is wider: a session's latest turn is chosen by its order (``turns.turn_seq``), which no
turn's hash covered, and action decisions were hashed one by one, not chained. So a turn moved
to the end of the table, or a decision deleted, left every hash intact.

Each writer (one open log, a *stream*) therefore links everything it commits, in commit order:
a ``links`` row per turn and per action decision, with the row's kind, key and own hash, the
turn's ``turn_seq``, and ``link_hash`` -- the content hash of those and the previous link's
hash (for the first, of the stream's name). Every commit records its stream's head in
``link_heads``. ``verify`` walks each stream (:func:`check_links`):

* a link edited, removed or inserted breaks ``link_hash`` from there on; a stream cut at its
  end no longer reaches its last recorded head, and links past it were never recorded;
* a linked row that is gone, or whose hash differs, is reported (a deleted decision, a
  replaced turn); a turn whose ``turn_seq`` is not the one linked was reordered;
* on SQLite, ``turn_seq`` is the ``rowid`` the turn was inserted at, so a turn deleted and
  inserted again (which would have moved it to its session's end) is reported as moved; the
  session order itself is ``turn_seq``, which such a move keeps, so no decision changes.

A new kind of record joins by a line in :data:`KINDS` (its table, key column and hash column)
and by the writer passing its rows' ``(kind, key, hash)`` to :func:`link_rows`.
Turns written before ``0011_links`` are not linked; their order is as tamperable as before.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from maitred._canonical import HASH_SCHEME

LINK_COLUMNS: tuple[str, ...] = (
    "stream",
    "seq",
    "kind",
    "key",
    "row_hash",
    "turn_seq",
    "link_hash",
)
#: kind -> (table, key column, hash column): the records the chain covers
KINDS: dict[str, tuple[str, str, str]] = {
    "turn": ("turns", "turn_id", "row_hash"),
    "decision": ("action_decisions", "decision_id", "decision_hash"),
}
#: (last position, its link hash) of a stream
LinkHead = tuple[int, str]


def genesis(stream: str) -> LinkHead:
    """The head of a stream before its first link."""
    return 0, _digest(["maitred-links/1", stream])


def link_hash(prev: str, kind: str, key: str, row_hash: str, turn_seq: int | None) -> str:
    """The hash of one link (see the module docstring)."""
    return _digest([prev, kind, key, row_hash, turn_seq])


def link_rows(
    stream: str, head: LinkHead, records: Iterable[tuple[str, str, str, int | None]]
) -> tuple[list[tuple[Any, ...]], LinkHead]:
    """The ``links`` rows of ``records`` (kind, key, row hash, turn_seq) after ``head``, and the
    head they reach."""
    seq, prev = head
    rows = []
    for kind, key, row_hash, turn_seq in records:
        seq += 1
        prev = link_hash(prev, kind, key, row_hash, turn_seq)
        rows.append((stream, seq, kind, key, row_hash, turn_seq, prev))
    return rows, (seq, prev)


def _digest(value: Sequence[Any]) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return f"{HASH_SCHEME}:{hashlib.sha256(text.encode('utf-8')).hexdigest()}"


def check_links(log: Any, add: Any, prechain: Mapping[str, frozenset[str]] | None = None) -> int:
    """Walk every stream of ``log`` (a :class:`~maitred.log.base.DecisionLog`) and report each
    fault through ``add(kind, key, detail)``; return the number of links. ``prechain``: what
    was committed before the links, by kind (:func:`maitred.log.chained_only.prechain`)."""
    prechain = prechain or {}
    if not log.table_exists("links"):
        return 0
    heads: dict[str, dict[int, str]] = {}
    for stream, seq, digest in log.query("SELECT stream, seq, link_hash FROM link_heads"):
        heads.setdefault(str(stream), {})[int(seq)] = str(digest)
    rowid = ", rowid" if log.dialect == "sqlite" else ", NULL"
    turn_rows = log.query(f"SELECT turn_id, row_hash, turn_seq{rowid}, chain_seq FROM turns")
    turns = {str(r[0]): (str(r[1]), r[2], r[3]) for r in turn_rows}
    decided = log.query(
        "SELECT decision_id, decision_hash, logged_at, turn_id FROM action_decisions"
    )
    decisions = {str(r[0]): (str(r[1]), None, None) for r in decided}
    stored = {"turn": turns, "decision": decisions}
    rows = log.query(f"SELECT {', '.join(LINK_COLUMNS)} FROM links ORDER BY stream, seq")
    walk: _Walk | None = None
    for row in rows:
        stream = str(row[0])
        if walk is None or walk.stream != stream:
            if walk is not None:
                walk.finish(add)
            walk = _Walk(stream, heads.pop(stream, {}))
        walk.step(row, stored, add)
    if walk is not None:
        walk.finish(add)
    for stream, recorded in heads.items():  # heads of a stream whose every link is gone
        add("link", stream, f"a commit recorded {max(recorded)} link(s); none is in the log")
    linked = {(str(r[2]), str(r[3])) for r in rows}
    chained = [(r[0],) for r in turn_rows if r[4] is not None]  # unchained: the run walk's
    _unlinked("turn", chained, linked, prechain.get("unlinked_turn", frozenset()), add)
    _unlinked("decision", decided, linked, prechain.get("decision", frozenset()), add)
    return len(rows)


def _unlinked(
    kind: str,
    records: Sequence[Any],
    linked: set[tuple[str, str]],
    prechain: frozenset[str],
    add: Any,
) -> None:
    """Every turn and action decision is linked when committed since ``0011_links`` (and
    refused by its table unless linked since ``0012_chained_only``): one in no link that
    migration ``0012`` did not record as predating the links (``prechain``) was inserted behind
    the writers' backs -- whatever its ``logged_at`` claims."""
    for key, *_ in records:
        if (kind, str(key)) in linked or str(key) in prechain:
            continue
        add(
            "unchained",
            str(key),
            f"is in no link and is not among the {kind}s migration 0012 found predating the "
            f"links: it was inserted afterwards (no session, task or approval honours it)",
        )


class _Walk:
    """One stream, link by link (see :func:`check_links`)."""

    def __init__(self, stream: str, heads: dict[int, str]) -> None:
        self.stream = stream
        self.heads = heads
        self.seq, self.prev = genesis(stream)

    def step(self, row: Sequence[Any], stored: dict[str, dict[str, Any]], add: Any) -> None:
        _, seq, kind, key, row_hash, turn_seq, digest = row
        seq, where = int(seq), f"{self.stream}#{int(seq)}"
        if seq != self.seq + 1:
            add("link", where, f"follows link {self.seq}: links {self.seq + 1}..{seq - 1} are gone")
        turn_seq = None if turn_seq is None else int(turn_seq)
        if link_hash(self.prev, str(kind), str(key), str(row_hash), turn_seq) != digest:
            add(
                "link",
                where,
                "does not hash to its link_hash: it, or the link before it, was edited",
            )
        recorded = self.heads.get(seq)
        if recorded is not None and recorded != digest:
            add("link", where, f"a commit recorded this position as {recorded}, it is {digest}")
        self.seq, self.prev = seq, str(digest)
        table = stored.get(str(kind))
        if table is None:
            add("link", where, f"links a record of unknown kind {kind!r}")
            return
        found = table.get(str(key))
        if found is None:
            add("link", str(key), f"the {kind} linked at {where} is not in the log: it was deleted")
            return
        if found[0] != row_hash:
            add(
                "link", str(key), f"the {kind} hashes to {found[0]}, linked as {row_hash}: replaced"
            )
        if kind == "turn" and found[1] != turn_seq:
            add(
                "link",
                str(key),
                f"its turn_seq is {found[1]}, linked as {turn_seq}: its place among its "
                "session's turns was changed",
            )
        elif kind == "turn" and found[2] is not None and found[2] != turn_seq:
            add(
                "link",
                str(key),
                f"is stored at rowid {found[2]} but was committed at {turn_seq}: it was deleted "
                "and inserted again",
            )

    def finish(self, add: Any) -> None:
        last = max(self.heads, default=0)
        if last > self.seq:
            add(
                "link",
                self.stream,
                f"a commit recorded {last} link(s), the stream ends at {self.seq}: links were "
                "removed",
            )
        elif self.seq > last:
            add(
                "link",
                self.stream,
                f"links {last + 1}..{self.seq} were never recorded by a commit: added afterwards",
            )
