"""Finding decisions in the log: one by its id, or the newest that match a filter.

An operator holds a decision id -- from a tool result's ``_meta["maitred/decision_id"]``, a
rejection's ``decision_id``, a span's ``maitred.decision.id`` -- or only a session, an account,
a code and a time. Two reads answer them, on SQLite and PostgreSQL alike (``?`` SQL through
:meth:`DecisionLog.query <maitred.log.base.DecisionLog.query>`, no migration of its own):

* :func:`find_decision` -- everything the log holds about one decision. A **turn** (stages 1-4:
  what a message was offered) comes back as a :class:`LoggedTurn`: the
  :class:`~maitred.records.TurnRecord` (every candidate with its score, visibility, exposure
  and the predicates that fired, the state snapshot it read, the depth rule's estimates), its
  run, its tenant, its place in the run's hash chain, and the action decisions made on its
  menu. An **action decision** (stage 5: one tool call) comes back as a :class:`LoggedAction`:
  the decision's own JSON as stored (the call and its arguments, verdict, code, both
  messages, every predicate with the values it read), when it was logged, the turn whose menu
  the call came from, and the decisions that answered it (approval). Each carries whether its
  stored hash still matches its content (``hash_ok``); ``maitred log verify`` walks the whole
  log, chains and guards included.
* :func:`list_decisions` -- :class:`DecisionSummary` rows, newest first, at most
  ``DecisionFilter.limit``, of turns and action decisions matching a :class:`DecisionFilter`
  (tenant, session, account, code, kind, a time range).

**Tenants** are matched exactly, as everywhere in the log: with ``tenant=`` a decision of
another tenant is not found, and is said to be not found in the same words as an id the log
never held (:class:`~maitred.errors.DecisionNotFoundError`).

**Time** is each decision's own clock: a turn's ``ts``, an action decision's ``now`` (the
gate's clock, ``decided_at``). Newest first orders by it, ties by id.

**What each filter means for each kind:** ``session`` is a turn's conversation and an action
decision's session; ``account`` is a turn's account and an action decision's own (the session's
account, stored with every decision since ``0014_decision_accounts``: surface reads, task
accesses and refusals before any turn included; an older row has the account of the turn it
is linked to, or none); ``code`` is an action decision's code (``OK`` for an allowed
call) -- a turn has no code, so a code filter lists action decisions only; ``trace`` is the W3C
trace id of the request an action decision decided (``0016_decision_traces``), action decisions
only too.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal

from maitred._canonical import content_hash, text_hash
from maitred.context import trace_id_fault
from maitred.contract.policy import APPROVAL_REQUIRED
from maitred.errors import ConfigError, DecisionNotFoundError
from maitred.log.action_rows import ACTION_DECISION_COLUMNS
from maitred.log.base import DecisionLog
from maitred.log.rows import (
    DEPTH_COLUMNS,
    PAIR_COLUMNS,
    RUN_COLUMNS,
    SNAPSHOT_COLUMNS,
    TURN_COLUMNS,
    decode_run,
    decode_snapshot,
    decode_turn,
    row_hash_payload,
)
from maitred.records import RunInfo, TurnRecord

DecisionKind = Literal["turn", "action"]
#: the kinds a filter may name, for messages
KINDS: Final[tuple[DecisionKind, ...]] = ("turn", "action")
#: the most rows one listing returns
MAX_LIMIT: Final = 10_000


@dataclass(frozen=True)
class DecisionFilter:
    """Which decisions :func:`list_decisions` returns (every field ``None``: no condition).

    Attributes:
        tenant: exactly this tenant's (``""``: decisions made without tenants).
        session: this session's (a turn's conversation, an action decision's session).
        account: this account's (see the module docstring for action decisions).
        code: action decisions with this code (turns have none).
        trace: action decisions made in the request of this W3C trace id (turns have none).
        kind: only turns, or only action decisions.
        since: at or after this time (unix seconds).
        until: before this time (unix seconds).
        limit: at most this many, newest first (1 to :data:`MAX_LIMIT`).
    """

    tenant: str | None = None
    session: str | None = None
    account: str | None = None
    code: str | None = None
    kind: DecisionKind | None = None
    since: float | None = None
    until: float | None = None
    limit: int = 50
    trace: str | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_LIMIT:
            raise ConfigError(f"limit must be from 1 to {MAX_LIMIT:,}, got {self.limit}")
        if self.kind is not None and self.kind not in KINDS:
            raise ConfigError(f"kind {self.kind!r} is not one of {list(KINDS)}")
        if self.trace is not None:
            fault = trace_id_fault(self.trace) if self.trace else "is empty"
            if fault:
                raise ConfigError(f"trace {self.trace[:80]!r} {fault}")
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ConfigError(
                f"the time range is empty: since ({iso_time(self.since)}) is not before until "
                f"({iso_time(self.until)})"
            )

    def to_json(self) -> dict[str, Any]:
        """The conditions that are set (times as unix seconds)."""
        names = ("tenant", "session", "account", "code", "trace", "kind", "since", "until")
        out: dict[str, Any] = {n: getattr(self, n) for n in names if getattr(self, n) is not None}
        out["limit"] = self.limit
        return out


@dataclass(frozen=True)
class DecisionSummary:
    """One decision in a listing.

    Attributes:
        kind: ``"turn"`` or ``"action"``.
        decision_id: the turn id or the action decision id.
        at: the decision's own clock (unix seconds).
        tenant: whose it is (``""``: made without tenants).
        session: the turn's conversation, or the action decision's session.
        account: the turn's account, or that of the action decision's turn (``""``: none).
        about: what it is about: the message text of a turn, the tool of an action decision.
        verdict: ``allow`` / ``reject`` for an action decision; ``""`` for a turn.
        code: the action decision's code; ``""`` for a turn.
        offered: a turn's exposed, visible and recalled counts; ``()`` for an action decision.
        turn_id: the turn an action decision's call came from (``""``: none; a turn: itself).
        trace_id: the W3C trace id of the request an action decision decided (``""``: none,
            or a row from before ``0016_decision_traces``; a turn: ``""``).
    """

    kind: DecisionKind
    decision_id: str
    at: float
    tenant: str
    session: str
    account: str
    about: str
    verdict: str = ""
    code: str = ""
    offered: tuple[int, int, int] | tuple[()] = ()
    turn_id: str = ""
    trace_id: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "decision_id": self.decision_id,
            "at": self.at,
            "at_iso": iso_time(self.at),
            "tenant": self.tenant,
            "session": self.session,
            "account": self.account,
        }
        if self.kind == "turn":
            exposed, visible, candidates = self.offered or (0, 0, 0)
            out.update(message=self.about, exposed=exposed, visible=visible)
            out["candidates"] = candidates
        else:
            out.update(tool=self.about, verdict=self.verdict, code=self.code)
            out["turn_id"] = self.turn_id
            out["trace_id"] = self.trace_id or None
        return out


@dataclass(frozen=True)
class LoggedTurn:
    """Everything the log holds about one turn (see the module docstring).

    Attributes:
        record: the turn as the pipeline decided it (``depth_probs`` from its depth row).
        tenant: whose run it is (``""``: none).
        run: the run's header (``None``: the log lost it -- ``verify`` reports that).
        chain: its hash-chain columns: ``chain_seq``, ``prev_hash``, ``row_hash`` (``chain_seq``
            None for a turn outside the chain), and its ``status``: ``chained``, ``pre-chain``
            (written before the chain, as migration ``0012`` recorded) or ``unchained`` (no
            chain position and not recorded: inserted behind maitred's back, never an offer).
        hash_ok: whether ``row_hash`` is the hash of what is stored now.
        actions: the action decisions made on this turn's menu, oldest first.
    """

    record: TurnRecord
    tenant: str
    run: RunInfo | None
    chain: Mapping[str, Any]
    hash_ok: bool
    actions: tuple[DecisionSummary, ...] = ()

    kind: DecisionKind = field(default="turn", init=False)

    @property
    def decision_id(self) -> str:
        return self.record.turn_id

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "turn",
            **self.record.to_json(),
            "ts_iso": iso_time(self.record.ts),
            "tenant": self.tenant,
            "run": _run_json(self.run),
            "chain": dict(self.chain),
            "hash_ok": self.hash_ok,
            "actions": [a.to_json() for a in self.actions],
        }


@dataclass(frozen=True)
class LoggedAction:
    """Everything the log holds about one action decision (see the module docstring).

    Attributes:
        decision: the decision's JSON as stored (:meth:`maitred.actions.Decision.to_json`).
        logged_at: when the log buffered it (wall clock, unix seconds).
        decision_hash: its stored content hash.
        hash_ok: whether that hash is the hash of the JSON stored now.
        turn: the turn whose menu the call came from (``None``: not linked, or not in the log).
        answered_by: ids of the decisions made with a person's answer to this one.
    """

    decision: Mapping[str, Any]
    logged_at: float
    decision_hash: str
    hash_ok: bool
    turn: DecisionSummary | None = None
    answered_by: tuple[str, ...] = ()

    kind: DecisionKind = field(default="action", init=False)

    @property
    def decision_id(self) -> str:
        return str(self.decision["decision_id"])

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "action",
            **self.decision,
            "trace_id": self.decision.get("trace_id") or None,  # null: no trace context
            "now_iso": iso_time(float(self.decision.get("now", 0.0))),
            "logged_at": self.logged_at,
            "decision_hash": self.decision_hash,
            "hash_ok": self.hash_ok,
            "turn": self.turn.to_json() if self.turn is not None else None,
            "answered_by": list(self.answered_by),
        }


LoggedDecision = LoggedTurn | LoggedAction


@dataclass(frozen=True)
class DecisionListing:
    """What :func:`list_decisions` found.

    Attributes:
        where: the filter asked.
        decisions: the newest matching decisions, newest first, at most ``where.limit``.
        more: whether more decisions match than the limit let through.
    """

    where: DecisionFilter
    decisions: tuple[DecisionSummary, ...]
    more: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "filter": self.where.to_json(),
            "decisions": [s.to_json() for s in self.decisions],
            "more": self.more,
        }


def find_decision(
    log: DecisionLog, decision_id: str, *, tenant: str | None = None
) -> LoggedDecision:
    """Everything the log holds about the turn or action decision ``decision_id``.

    Args:
        log: the decision log (read-only is enough).
        decision_id: a turn id or an action decision id, whole.
        tenant: only this tenant's decision (another tenant's is not found).

    Raises:
        DecisionNotFoundError: no such decision (for ``tenant``); names the log and the id.
    """
    _before_read(log)
    turn = _turn_row(log, decision_id, tenant)
    if turn is not None:
        return _logged_turn(log, turn)
    action = _action_row(log, decision_id, tenant)
    if action is not None:
        return _logged_action(log, action)
    whose = f" of tenant {tenant!r}" if tenant is not None else ""
    raise DecisionNotFoundError(
        f"no turn or action decision {decision_id!r}{whose} in the decision log at "
        f"{log.location}; list recent ones with `maitred log list` (ids are matched whole)"
    )


def list_decisions(log: DecisionLog, where: DecisionFilter) -> DecisionListing:
    """The newest decisions matching ``where``, at most ``where.limit``, newest first."""
    _before_read(log)
    probe = replace(where, limit=where.limit + 1) if where.limit < MAX_LIMIT else where
    found: list[DecisionSummary] = []
    if where.kind in (None, "turn") and where.code is None and where.trace is None:
        found += _turn_summaries(log, probe)
    if where.kind in (None, "action"):
        found += _action_summaries(log, probe)
    found.sort(key=lambda s: (s.at, s.decision_id), reverse=True)
    return DecisionListing(where, tuple(found[: where.limit]), len(found) > where.limit)


# -- times ------------------------------------------------------------------------------------

_AGO: Final = re.compile(r"(\d+(?:\.\d+)?)\s*(s|m|h|d|w)")
_UNIT_S: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_time(text: str, *, now: float | None = None, what: str = "time") -> float:
    """Unix seconds from an operator's time: ISO 8601 (``2026-12-04``, ``2026-12-04T22:30``,
    with ``Z`` or an offset; without one, UTC), unix seconds (``1796420000``), or a span
    before ``now`` (``90s``, ``15m``, ``2h``, ``7d``, ``1w``).

    Raises:
        ConfigError: naming ``what`` and the accepted forms.
    """
    value = text.strip()
    ago = _AGO.fullmatch(value)
    if ago is not None:
        start = time.time() if now is None else now
        return start - float(ago.group(1)) * _UNIT_S[ago.group(2)]
    try:
        return float(value) if re.fullmatch(r"\d+(\.\d+)?", value) else _from_iso(value)
    except ValueError:
        raise ConfigError(
            f"{what} {text!r} is not a time: give ISO 8601 (2026-12-04 or 2026-12-04T22:30Z; "
            "UTC unless it names an offset), unix seconds, or a span before now (15m, 2h, 7d)"
        ) from None


def _from_iso(value: str) -> float:
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def iso_time(seconds: float) -> str:
    """A unix time as ISO 8601 UTC, to the millisecond (``2026-12-04T22:30:00.000Z``)."""
    try:
        moment = datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return str(seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- reading ----------------------------------------------------------------------------------


def _before_read(log: DecisionLog) -> None:
    """A writable log commits what was written before the call, so the read sees it."""
    if not log.read_only:
        log.flush()


def _cols(names: Sequence[str], alias: str) -> str:
    return ", ".join(f"{alias}.{n}" for n in names)


def _rows(
    log: DecisionLog, names: Sequence[str], sql: str, params: Sequence[Any]
) -> list[dict[str, Any]]:
    return [dict(zip(names, r, strict=True)) for r in log.query(sql, params)]


def _tenant_clause(alias: str, tenant: str | None) -> tuple[str, list[Any]]:
    return ("", []) if tenant is None else (f" AND {alias}.tenant = ?", [tenant])


def _turn_row(log: DecisionLog, turn_id: str, tenant: str | None) -> dict[str, Any] | None:
    cond, extra = _tenant_clause("t", tenant)
    sql = f"SELECT {_cols(TURN_COLUMNS, 't')} FROM turns t WHERE t.turn_id = ?{cond}"
    rows = _rows(log, TURN_COLUMNS, sql, [turn_id, *extra])
    return rows[0] if rows else None


def _action_row(log: DecisionLog, decision_id: str, tenant: str | None) -> dict[str, Any] | None:
    cond, extra = _tenant_clause("a", tenant)
    names = ACTION_DECISION_COLUMNS
    sql = f"SELECT {_cols(names, 'a')} FROM action_decisions a WHERE a.decision_id = ?{cond}"
    rows = _rows(log, names, sql, [decision_id, *extra])
    return rows[0] if rows else None


def _logged_turn(log: DecisionLog, row: dict[str, Any]) -> LoggedTurn:
    tid = str(row["turn_id"])
    pairs = _rows(
        log,
        PAIR_COLUMNS,
        f"SELECT {_cols(PAIR_COLUMNS, 'p')} FROM pairs p WHERE p.turn_id = ?",
        [tid],
    )
    for pair in pairs:
        pair["visible"], pair["exposed"] = bool(pair["visible"]), bool(pair["exposed"])
    depth = _rows(
        log,
        DEPTH_COLUMNS,
        f"SELECT {_cols(DEPTH_COLUMNS, 'd')} FROM depth_decisions d WHERE d.turn_id = ?",
        [tid],
    )
    snapshot = None
    if row["snapshot_hash"] is not None:
        found = _rows(
            log,
            SNAPSHOT_COLUMNS,
            f"SELECT {_cols(SNAPSHOT_COLUMNS, 's')} FROM snapshots s WHERE s.hash = ?",
            [row["snapshot_hash"]],
        )
        snapshot = decode_snapshot(found[0]) if found else None
    record = decode_turn({**row, "pairs": pairs}, snapshot)
    depth_hash = str(depth[0]["row_hash"]) if depth else None
    if depth:
        record = replace(record, depth_probs=tuple(json.loads(depth[0]["probs_json"])))
    stored = str(row["row_hash"])
    runs = _rows(
        log,
        RUN_COLUMNS,
        f"SELECT {_cols(RUN_COLUMNS, 'r')} FROM runs r WHERE r.run_id = ?",
        [row["run_id"]],
    )
    actions = _action_summaries(log, DecisionFilter(limit=MAX_LIMIT), turn_id=tid)
    status = chain_status(log, tid, row["chain_seq"])
    return LoggedTurn(
        record=record,
        tenant=str(row["tenant"]),
        run=decode_run(runs[0]) if runs else None,
        chain={**{k: row[k] for k in ("chain_seq", "prev_hash", "row_hash")}, "status": status},
        hash_ok=content_hash(row_hash_payload(row, pairs, depth_hash)) == stored,
        actions=tuple(sorted(actions, key=lambda a: (a.at, a.decision_id))),
    )


def _logged_action(log: DecisionLog, row: dict[str, Any]) -> LoggedAction:
    text = str(row["decision_json"])
    data = json.loads(text)
    turn = None
    if row["turn_id"]:
        linked = _turn_summaries(log, DecisionFilter(limit=1), turn_id=str(row["turn_id"]))
        turn = linked[0] if linked else None
    return LoggedAction(
        decision=data,
        logged_at=float(row["logged_at"]),
        decision_hash=str(row["decision_hash"]),
        hash_ok=text_hash(text) == row["decision_hash"],
        turn=turn,
        answered_by=_answers_to(log, str(row["decision_id"]), str(row["session_id"]))
        if row["code"] == APPROVAL_REQUIRED  # only a question is answered
        else (),
    )


def _answers_to(log: DecisionLog, decision_id: str, session: str) -> tuple[str, ...]:
    """The decisions of the same session made with a person's answer to ``decision_id``
    (an approval is asked and answered within one session: the session's rows, through its
    index, never the whole table)."""
    rows = log.query(
        "SELECT decision_id, decision_json FROM action_decisions WHERE session_id = ? "
        "AND decision_id <> ? ORDER BY decided_at, decision_id",
        (session, decision_id),
    )
    answered = []
    for other, text in rows:
        approval = json.loads(text).get("approval")
        if isinstance(approval, dict) and approval.get("of") == decision_id:
            answered.append(str(other))
    return tuple(answered)


#: a listing's turn columns
_TURN_LIST: Final = (
    "turn_id",
    "ts",
    "tenant",
    "conversation_id",
    "account_id",
    "message_text",
    "n_exposed",
    "n_visible",
    "n_candidates",
)
#: a listing's action-decision columns (``account_id``: its own, else the linked turn's)
_ACTION_LIST: Final = (
    "decision_id",
    "decided_at",
    "tenant",
    "session_id",
    "tool",
    "verdict",
    "code",
    "turn_id",
    "trace_id",
)


def _turn_summaries(
    log: DecisionLog, where: DecisionFilter, *, turn_id: str | None = None
) -> list[DecisionSummary]:
    conds, params = _common_conditions("t", "ts", "conversation_id", where)
    if where.account is not None:
        conds.append("t.account_id = ?")
        params.append(where.account)
    if turn_id is not None:
        conds.append("t.turn_id = ?")
        params.append(turn_id)
    sql = (
        f"SELECT {_cols(_TURN_LIST, 't')} FROM turns t{_where(conds)} "
        f"ORDER BY t.ts DESC, t.turn_id DESC LIMIT {where.limit}"
    )
    out = []
    for r in _rows(log, _TURN_LIST, sql, params):
        counts = (int(r["n_exposed"]), int(r["n_visible"]), int(r["n_candidates"]))
        out.append(
            DecisionSummary(
                "turn",
                str(r["turn_id"]),
                float(r["ts"]),
                str(r["tenant"]),
                str(r["conversation_id"]),
                str(r["account_id"]),
                str(r["message_text"]),
                offered=counts,
                turn_id=str(r["turn_id"]),
            )
        )
    return out


def _action_summaries(
    log: DecisionLog, where: DecisionFilter, *, turn_id: str | None = None
) -> list[DecisionSummary]:
    conds, params = _common_conditions("a", "decided_at", "session_id", where)
    if where.code is not None:
        conds.append("a.code = ?")
        params.append(where.code)
    if where.trace is not None:
        conds.append("a.trace_id = ?")
        params.append(where.trace)
    if where.account is not None:  # its own, or (a row before 0014) its turn's
        conds.append("(a.account_id = ? OR (a.account_id = '' AND t.account_id = ?))")
        params.extend((where.account, where.account))
    if turn_id is not None:
        conds.append("a.turn_id = ?")
        params.append(turn_id)
    sql = (
        f"SELECT {_cols(_ACTION_LIST, 'a')}, "
        "COALESCE(NULLIF(a.account_id, ''), t.account_id) AS account_id FROM action_decisions a "
        f"LEFT JOIN turns t ON t.turn_id = a.turn_id{_where(conds)} "
        f"ORDER BY a.decided_at DESC, a.decision_id DESC LIMIT {where.limit}"
    )
    out = []
    for r in _rows(log, (*_ACTION_LIST, "account_id"), sql, params):
        out.append(
            DecisionSummary(
                "action",
                str(r["decision_id"]),
                float(r["decided_at"]),
                str(r["tenant"]),
                str(r["session_id"]),
                str(r["account_id"] or ""),
                str(r["tool"]),
                verdict=str(r["verdict"]),
                code=str(r["code"]),
                turn_id=str(r["turn_id"]),
                trace_id=str(r["trace_id"]),
            )
        )
    return out


def _common_conditions(
    alias: str, clock: str, session: str, where: DecisionFilter
) -> tuple[list[str], list[Any]]:
    """The tenant, session and time conditions, on either table."""
    conds: list[str] = []
    params: list[Any] = []
    for column, value in (("tenant", where.tenant), (session, where.session)):
        if value is not None:
            conds.append(f"{alias}.{column} = ?")
            params.append(value)
    if where.since is not None:
        conds.append(f"{alias}.{clock} >= ?")
        params.append(where.since)
    if where.until is not None:
        conds.append(f"{alias}.{clock} < ?")
        params.append(where.until)
    return conds, params


def _where(conds: list[str]) -> str:
    return f" WHERE {' AND '.join(conds)}" if conds else ""


def _run_json(run: RunInfo | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {
        "run_id": run.run_id,
        "started_at": run.started_at,
        "catalog_version": run.catalog_version,
        "n_skills": run.n_skills,
        "tokens_all_skills": run.tokens_all_skills,
        "config": dict(run.config),
        "tenant": run.tenant,
    }


def chain_status(log: DecisionLog, turn_id: str, chain_seq: Any) -> str:
    """``chained``, ``pre-chain`` or ``unchained`` (see :class:`LoggedTurn`)."""
    if chain_seq is not None:
        return "chained"
    found = log.query("SELECT 1 FROM prechain WHERE kind = 'turn' AND key = ?", (turn_id,))
    return "pre-chain" if found else "unchained"
