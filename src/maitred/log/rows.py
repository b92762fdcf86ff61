"""How a :class:`~maitred.records.TurnRecord` becomes rows, and how its row hash is defined.

A turn is stored as one ``turns`` row, one ``pairs`` row per candidate and, when the gate read
state, one ``snapshots`` row shared by every turn that saw the same content (the snapshot's own
hash is its primary key). This module is the single place that maps between the dataclasses and
those rows; both backends and :func:`~maitred.log.verify.verify` go through it.

The row hash (the contract ``verify`` checks)
---------------------------------------------

``turns.row_hash`` is :func:`~maitred._canonical.content_hash` of the JSON value returned by
:func:`row_hash_payload`::

    {"v": 2,
     "turn":  {<every column of TURN_COLUMNS except row_hash>: <stored value>},
     "pairs": [[<the stored values of HASHED_PAIR_COLUMNS, in that order>], ...],
     "depth": <the row_hash of the turn's depth_decisions row, or null>}

Layout 2 (migration ``0008_hash_chain``) makes the turns of a run a hash chain: ``chain_seq``
is the turn's position in its run (1, 2, 3, ... in write order) and ``prev_hash`` is the
``row_hash`` of the turn before it -- for the first turn, the ``row_hash`` of the run's own
``runs`` row, whose hash covers every run column (:func:`run_hash_payload`). Both are in the
payload, so deleting, inserting or reordering a turn breaks the link of the turn after it, and
editing the run header breaks its hash. ``recall_batch`` marks a recall time that is a share:
``t_recall_us`` is the recall time of a batch of that many messages divided by their number.
Turns written before ``0008`` have ``chain_seq`` NULL and keep layout 1: the same payload with
``"v": 1``, without the three chain columns and without ``"depth"``.

with pairs sorted by ``(rank, skill)`` (``HASHED_PAIR_COLUMNS`` is ``PAIR_COLUMNS`` without
``turn_id``; pairs are positional lists because hashing is on the write path of every turn).
Values are exactly what the columns hold: text as text, ``REAL`` columns as floats (``ts``,
``message_ts``, ``score`` are coerced to ``float`` *before* hashing so that SQLite's REAL
affinity cannot change them), ``visible``/``exposed`` as booleans, and the ``*_json`` columns as
their stored **text** (canonical JSON), not as parsed values -- so any edit of a stored byte
changes the hash. Because the pairs are inside the payload, deleting, adding or editing a pair
row breaks its turn's hash too. ``snapshot_hash`` is in the payload and the snapshot row is
checked against its own content hash, which chains the two.
"""

from __future__ import annotations

import hashlib
import json
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from maitred._canonical import HASH_SCHEME, _default, canonical_json, content_hash
from maitred.contract.evaluate import PredicateOutcome
from maitred.errors import LogError
from maitred.log.storable import check_row
from maitred.records import Message, PairRecord, RunInfo, TurnRecord
from maitred.state.snapshot import Snapshot

#: Version of the row-hash payload layout (the ``"v"`` field); bump with a migration.
ROW_HASH_LAYOUT = 2
#: The layout of turns written before ``0008_hash_chain`` (``chain_seq`` NULL).
LEGACY_ROW_HASH_LAYOUT = 1

#: The timing keys of ``TurnRecord.timings_us`` that have a column (other keys are not stored).
TIMING_KEYS: tuple[str, ...] = ("recall", "gate", "depth", "menu")
#: The ``timings_us`` key that marks a batch share: ``recall`` is the recall time of a batch of
#: this many messages divided by their number (absent: the turn's own recall time).
RECALL_BATCH = "recall_batch"

RUN_COLUMNS: tuple[str, ...] = (
    "run_id",
    "started_at",
    "catalog_version",
    "n_skills",
    "tokens_all_skills",
    "config_json",
    "tenant",
    "row_hash",
)
#: the run columns every run hash covers; ``tenant`` (``0009_tenants_sessions``) is added to the
#: payload only when it is not empty, so runs logged before it keep their hashes
HASHED_RUN_COLUMNS: tuple[str, ...] = RUN_COLUMNS[:-2]

#: The turn columns added by ``0008_hash_chain`` (NULL in older rows).
CHAIN_COLUMNS: tuple[str, ...] = ("chain_seq", "prev_hash", "recall_batch")

TURN_COLUMNS: tuple[str, ...] = (
    "turn_id",
    "run_id",
    "message_id",
    "conversation_id",
    "account_id",
    "message_text",
    "message_ts",
    "ts",
    "catalog_version",
    "recall_method",
    "depth_rule",
    "snapshot_hash",
    "provider_error",
    "n_candidates",
    "n_visible",
    "n_exposed",
    "menu_tokens",
    *(f"t_{k}_us" for k in TIMING_KEYS),
    *CHAIN_COLUMNS,
    "tenant",
    "row_hash",
)

PAIR_COLUMNS: tuple[str, ...] = (
    "turn_id",
    "skill",
    "rank",
    "score",
    "components_json",
    "visible",
    "exposed",
    "desc_tokens",
    "fired_json",
    "soft_json",
)

SNAPSHOT_COLUMNS: tuple[str, ...] = ("hash", "account_id", "as_of", "json")

#: like the run's, a turn's ``tenant`` is in its hash payload only when it is not empty
HASHED_TURN_COLUMNS: tuple[str, ...] = TURN_COLUMNS[:-2]
LEGACY_HASHED_TURN_COLUMNS: tuple[str, ...] = tuple(
    c for c in HASHED_TURN_COLUMNS if c not in CHAIN_COLUMNS
)
HASHED_PAIR_COLUMNS: tuple[str, ...] = PAIR_COLUMNS[1:]

_EMPTY_LIST = "[]"
_INFINITIES = (float("inf"), float("-inf"))
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.+-]+").fullmatch
_SKILL, _RANK, _VISIBLE, _EXPOSED = (
    PAIR_COLUMNS.index(c) for c in ("skill", "rank", "visible", "exposed")
)
_PAIR_ORDER = operator.itemgetter(_RANK, _SKILL)
_TURN_ROW = operator.itemgetter(*TURN_COLUMNS)
_STORED_TURN_COLUMNS = TURN_COLUMNS[:-1]  # all but the row hash, computed after the check
_STORED_TURN_ROW = operator.itemgetter(*_STORED_TURN_COLUMNS)
#: the turn columns that are indexed ids (:mod:`maitred.log.storable`)
TURN_KEYS: tuple[str, ...] = (
    "turn_id",
    "run_id",
    "message_id",
    "conversation_id",
    "account_id",
    "tenant",
)
_PAIR_ROW = operator.itemgetter(*PAIR_COLUMNS)


def _fast_encoder() -> Callable[[Any], str]:
    """``canonical_json`` without its per-call set-up (the write path encodes ~15 values a turn).

    ``json.dumps`` builds a ``JSONEncoder`` and then, per call, CPython's C encoder; here the C
    encoder is built once with exactly the settings ``canonical_json`` passes (sorted keys,
    compact separators, non-ASCII kept, NaN refused, the same ``default``). Circular-reference
    checking is off (values come from ``to_json`` methods; a cycle raises RecursionError, which
    ``encode_turn`` reports). Where there is no C encoder, the ``JSONEncoder`` is used. A
    property test keeps the output equal to ``canonical_json``.
    """
    encoder = json.JSONEncoder(
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
        default=_default,
    )
    make = getattr(json.encoder, "c_make_encoder", None)
    try:
        c_encode = make(  # type: ignore[misc]
            None, _default, json.encoder.encode_basestring, None, ":", ",", True, False, False
        )
    except TypeError:  # pragma: no cover - no C encoder, or another signature
        return encoder.encode

    def encode(value: Any) -> str:
        return "".join(c_encode(value, 0))

    return encode


_canonical_fast = _fast_encoder()


def _content_hash_fast(value: Any) -> str:
    """``content_hash(value)`` through the fast encoder (a test keeps them equal)."""
    digest = hashlib.sha256(_canonical_fast(value).encode("utf-8")).hexdigest()
    return f"{HASH_SCHEME}:{digest}"


@dataclass(frozen=True)
class EncodedTurn:
    """One turn as the rows a backend inserts (column order as in ``*_COLUMNS``).

    The snapshot is not encoded here: the writer encodes it (:func:`encode_snapshot`) only the
    first time it sees its hash.
    """

    turn: tuple[Any, ...]
    pairs: list[tuple[Any, ...]]
    depth: tuple[Any, ...] | None = None


def row_hash_payload(
    turn: Mapping[str, Any],
    pairs: Sequence[Sequence[Any] | Mapping[str, Any]],
    depth_hash: str | None = None,
) -> dict[str, Any]:
    """The JSON value whose content hash is ``turns.row_hash`` (see the module docstring).

    Args:
        turn: the turn's columns (``row_hash`` may be present; it is left out). A turn whose
            ``chain_seq`` is None (or absent) predates the chain and gets layout 1.
        pairs: the turn's pair rows, any order: mappings by column name, or tuples in
            ``PAIR_COLUMNS`` order (as :func:`encode_pair` makes them).
        depth_hash: the ``row_hash`` of the turn's ``depth_decisions`` row, if it has one.
    """
    rows = [_normalised(p) for p in pairs]
    if turn.get("chain_seq") is None:
        legacy = {c: turn[c] for c in LEGACY_HASHED_TURN_COLUMNS}
        if turn.get("tenant"):
            legacy["tenant"] = turn["tenant"]
        return {
            "v": LEGACY_ROW_HASH_LAYOUT,
            "turn": legacy,
            "pairs": [list(p[1:]) for p in sorted(rows, key=_PAIR_ORDER)],
        }
    return _payload(turn, rows, depth_hash)


def run_hash_payload(run: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON value whose content hash is ``runs.row_hash``: every other run column
    (``tenant`` only when it is not empty: a run from before it had none)."""
    cols = {c: run[c] for c in HASHED_RUN_COLUMNS}
    if run.get("tenant"):
        cols["tenant"] = run["tenant"]
    return {"v": 1, "run": cols}


def _normalised(pair: Sequence[Any] | Mapping[str, Any]) -> tuple[Any, ...]:
    row = _PAIR_ROW(pair) if type(pair) is dict or isinstance(pair, Mapping) else tuple(pair)
    return (*row[:_VISIBLE], bool(row[_VISIBLE]), bool(row[_EXPOSED]), *row[_EXPOSED + 1 :])


def _payload(
    turn: Mapping[str, Any], rows: list[tuple[Any, ...]], depth_hash: str | None
) -> dict[str, Any]:
    """:func:`row_hash_payload` for rows already in ``PAIR_COLUMNS`` order with real booleans."""
    cols = {c: turn[c] for c in HASHED_TURN_COLUMNS}
    if turn.get("tenant"):
        cols["tenant"] = turn["tenant"]
    return {
        "v": ROW_HASH_LAYOUT,
        "turn": cols,
        "pairs": [list(p[1:]) for p in sorted(rows, key=_PAIR_ORDER)],
        "depth": depth_hash,
    }


def _components_json(components: Mapping[str, float]) -> str:
    """Canonical JSON of a flat ``{name: score}`` map, formatted directly when that is safe.

    Recall components are a few plain-named finite floats, written for every pair; for them
    the text is built with ``repr`` (which is what ``json`` uses for floats) instead of going
    through the encoder. Anything else takes the encoder. A test keeps both equal.
    """
    if not components:
        return "{}"
    parts = []
    for key in sorted(components):
        value = components[key]
        if (
            type(value) is not float
            or value != value
            or value in _INFINITIES
            or not _PLAIN_KEY(key)
        ):
            return _canonical_fast(dict(components))
        parts.append(f'"{key}":{value!r}')
    return "{" + ",".join(parts) + "}"


def _outcomes_json(outcomes: tuple[PredicateOutcome, ...]) -> str:
    if not outcomes:
        return _EMPTY_LIST
    return _canonical_fast([o.to_json() for o in outcomes])


def encode_pair(turn_id: str, pair: PairRecord) -> tuple[Any, ...]:
    """One ``pairs`` row (``PAIR_COLUMNS`` order)."""
    return (
        turn_id,
        str(pair.skill),
        int(pair.rank),
        float(pair.score),
        _components_json(pair.components),
        bool(pair.visible),
        bool(pair.exposed),
        int(pair.desc_tokens),
        _outcomes_json(pair.fired),
        _outcomes_json(pair.soft),
    )


def encode_snapshot(snapshot: Snapshot, turn_id: str = "") -> tuple[Any, ...]:
    """One ``snapshots`` row: keyed by the snapshot's hash, content as canonical JSON.

    Raises:
        LogError: a snapshot value that is not finite JSON (``turn_id`` names the turn).
    """
    check_row(f"turn {turn_id!r}'s snapshot", ("account_id",), (snapshot.account,), ("account_id",))
    try:
        text = _canonical_fast(snapshot.to_json(with_hash=False))
    except (TypeError, ValueError, RecursionError) as exc:
        raise LogError(
            f"turn {turn_id!r}: snapshot {snapshot.hash} of account {snapshot.account!r} cannot "
            f"be logged: {exc}; snapshot values must be finite JSON"
        ) from exc
    return (snapshot.hash, snapshot.account, float(snapshot.as_of), text)


def encode_turn(
    record: TurnRecord, *, seq: int = 1, prev_hash: str = "", tenant: str = ""
) -> EncodedTurn:
    """Encode one turn (and its depth row), computing its row hash.

    Args:
        record: the turn.
        seq: its position in its run's chain (1 for the first turn).
        prev_hash: the ``row_hash`` of the turn before it (of the run row, for the first).
        tenant: the tenant of the turn's run (``RunInfo.tenant``; ``""``: none).

    Raises:
        LogError: the record holds a value canonical JSON refuses (NaN, an infinity, an object
            that is not JSON).
    """
    try:
        return _encode_turn(record, seq, prev_hash, tenant)
    except (TypeError, ValueError, RecursionError) as exc:
        raise LogError(
            f"turn {record.turn_id!r} cannot be logged: {exc}; every value in a TurnRecord "
            "(scores, components, predicate values, snapshot values) must be finite JSON"
        ) from exc


def _encode_turn(record: TurnRecord, seq: int, prev_hash: str, tenant: str) -> EncodedTurn:
    # str() / int() / float() pin each value to its column's type before hashing, so that what
    # the database stores (and verify reads back) is exactly what was hashed.
    tid = str(record.turn_id)
    pairs = [encode_pair(tid, p) for p in record.pairs]  # in PAIR_COLUMNS order, real bools
    msg = record.message
    timings = record.timings_us
    snap = record.snapshot
    turn: dict[str, Any] = {
        "turn_id": tid,
        "run_id": str(record.run_id),
        "message_id": str(msg.id),
        "conversation_id": str(msg.conversation),
        "account_id": str(msg.account),
        "message_text": str(msg.text),
        "message_ts": None if msg.ts is None else float(msg.ts),
        "ts": float(record.ts),
        "catalog_version": str(record.catalog_version),
        "recall_method": str(record.recall_method),
        "depth_rule": str(record.depth_rule),
        "snapshot_hash": str(snap.hash) if snap is not None else None,
        "provider_error": str(record.provider_error),
        "n_candidates": len(pairs),
        "n_visible": sum(p[_VISIBLE] for p in pairs),
        "n_exposed": sum(p[_EXPOSED] for p in pairs),
        "menu_tokens": int(record.menu_tokens),
    }
    for key in TIMING_KEYS:
        value = timings.get(key)
        turn[f"t_{key}_us"] = None if value is None else int(value)
    turn["chain_seq"] = int(seq)
    turn["prev_hash"] = str(prev_hash)
    batch = timings.get(RECALL_BATCH)
    turn["recall_batch"] = None if batch is None else int(batch)
    turn["tenant"] = str(tenant)
    what = f"turn {tid!r}"
    check_row(what, _STORED_TURN_COLUMNS, _STORED_TURN_ROW(turn), TURN_KEYS)
    for pair in pairs:
        check_row(what, PAIR_COLUMNS, pair, ("skill",))
    depth = encode_depth(record)
    depth_hash = None if depth is None else depth[-1]
    turn["row_hash"] = _content_hash_fast(_payload(turn, pairs, depth_hash))
    return EncodedTurn(turn=_TURN_ROW(turn), pairs=pairs, depth=depth)


def encode_run(info: RunInfo) -> tuple[Any, ...]:
    """One ``runs`` row (``RUN_COLUMNS`` order)."""
    try:
        config = canonical_json(dict(info.config))
    except (TypeError, ValueError) as exc:
        raise LogError(
            f"run {info.run_id!r}: its config cannot be logged ({exc}); RunInfo.config must be "
            "finite JSON"
        ) from exc
    check_row(
        f"run {info.run_id!r}",
        ("run_id", "tenant"),
        (info.run_id, info.tenant),
        ("run_id", "tenant"),
    )
    row: dict[str, Any] = {
        "run_id": str(info.run_id),
        "started_at": float(info.started_at),
        "catalog_version": str(info.catalog_version),
        "n_skills": int(info.n_skills),
        "tokens_all_skills": int(info.tokens_all_skills),
        "config_json": config,
        "tenant": str(info.tenant),
    }
    row["row_hash"] = content_hash(run_hash_payload(row))
    return tuple(row[c] for c in RUN_COLUMNS)


def decode_run(row: Mapping[str, Any]) -> RunInfo:
    """Rebuild a :class:`RunInfo` from its ``runs`` row."""
    return RunInfo(
        run_id=row["run_id"],
        started_at=float(row["started_at"]),
        catalog_version=row["catalog_version"],
        n_skills=int(row["n_skills"]),
        tokens_all_skills=int(row["tokens_all_skills"]),
        config=json.loads(row["config_json"]),
        tenant=str(row.get("tenant") or ""),
    )


def decode_snapshot(row: Mapping[str, Any]) -> Snapshot:
    """Rebuild a :class:`Snapshot` from its ``snapshots`` row (the stored hash is kept)."""
    data = json.loads(row["json"])
    data["hash"] = row["hash"]
    return Snapshot.from_json(data)


def _outcomes(text: str) -> tuple[PredicateOutcome, ...]:
    return tuple(PredicateOutcome(**o) for o in json.loads(text))


def decode_pair(row: Mapping[str, Any]) -> PairRecord:
    """Rebuild a :class:`PairRecord` from its ``pairs`` row."""
    return PairRecord(
        skill=row["skill"],
        rank=int(row["rank"]),
        score=float(row["score"]),
        visible=bool(row["visible"]),
        exposed=bool(row["exposed"]),
        desc_tokens=int(row["desc_tokens"]),
        components=json.loads(row["components_json"]),
        fired=_outcomes(row["fired_json"]),
        soft=_outcomes(row["soft_json"]),
    )


def decode_turn(row: Mapping[str, Any], snapshot: Snapshot | None) -> TurnRecord:
    """Rebuild a :class:`TurnRecord` from a row of ``DecisionLog.iter_turns``.

    Args:
        row: the turn's columns plus ``"pairs"`` (its pair rows).
        snapshot: the snapshot named by ``row["snapshot_hash"]`` (``DecisionLog.snapshot``),
            or None.
    """
    timings = {k: int(row[f"t_{k}_us"]) for k in TIMING_KEYS if row[f"t_{k}_us"] is not None}
    if row.get("recall_batch") is not None:
        timings[RECALL_BATCH] = int(row["recall_batch"])
    pairs = sorted(row["pairs"], key=lambda p: (p["rank"], p["skill"]))
    return TurnRecord(
        turn_id=row["turn_id"],
        run_id=row["run_id"],
        message=Message(
            id=row["message_id"],
            text=row["message_text"],
            account=row["account_id"],
            conversation=row["conversation_id"],
            ts=row["message_ts"],
        ),
        catalog_version=row["catalog_version"],
        recall_method=row["recall_method"],
        depth_rule=row["depth_rule"],
        pairs=tuple(decode_pair(p) for p in pairs),
        snapshot=snapshot,
        timings_us=timings,
        ts=float(row["ts"]),
        provider_error=row["provider_error"],
        menu_tokens=int(row["menu_tokens"]),
    )


#: columns of ``depth_decisions`` (migration ``0006_depth_decisions``): what the depth rule
#: estimated at each prefix of a turn's visible list, and how many it exposed
DEPTH_COLUMNS: tuple[str, ...] = ("turn_id", "depth_rule", "k", "probs_json", "row_hash")


def depth_payload(turn_id: str, rule: str, k: int, probs_json: str) -> dict[str, Any]:
    """The JSON value whose content hash is ``depth_decisions.row_hash``."""
    return {"v": 1, "turn_id": turn_id, "depth_rule": rule, "k": k, "probs_json": probs_json}


def encode_depth(record: TurnRecord) -> tuple[Any, ...] | None:
    """The turn's ``depth_decisions`` row, or None when its rule gave no estimates."""
    if not record.depth_probs:
        return None
    tid, rule = str(record.turn_id), str(record.depth_rule)
    k = sum(1 for p in record.pairs if p.exposed)
    probs = _canonical_fast([float(p) for p in record.depth_probs])
    return (tid, rule, k, probs, _content_hash_fast(depth_payload(tid, rule, k, probs)))
