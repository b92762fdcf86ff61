"""Pages of decisions: the log read a page at a time, newest first, on its indexes.

:func:`maitred.log.lookup.list_decisions` answers "the newest N that match"; an operator
paging through a million decisions needs the next N after the last one seen, without the
database counting past every row already shown. :func:`decision_page` does that with
**keyset pagination**: a page ends at a :class:`Cursor` (the last row's clock and id), and the
next page asks for rows strictly before it in the order ``(clock, id)`` descending -- the same
order on ``turns`` (``ts``, ``turn_id``) and ``action_decisions`` (``decided_at``,
``decision_id``), so one page merges both tables and the cursor means the same in each.

**Kinds.** A turn is a ``turn``. An action decision is one of four kinds, told by the tool it
decided on (:func:`action_kind`): a surface ``read`` (``resources/read``,
``resources/subscribe``, ``prompts/get``, ``skills/get``), a ``find`` (the gateway's
``find_tools``), a ``task`` (``tasks/create``, ``tasks/get``, ``tasks/update``,
``tasks/cancel``), and every other tool a ``call``.

**Filters** mean what they mean in :mod:`maitred.log.lookup`; ``tool``, ``code`` and ``trace``
(the W3C trace id of the request decided) are an action decision's, so any of them lists action
decisions only. Every filter is answered on an index: ``account`` on ``turns_account`` /
``action_decisions_account`` (``0014``), ``session`` on ``turns_session`` /
``action_decisions_session``, ``tool``, ``code`` and ``tenant`` on the console's indexes
(``0015_console_indexes``), ``trace`` on ``action_decisions_trace`` (``0016``), and no filter
at all on the clocks' own indexes (``turns_time``, ``action_decisions_time``). An action
decision stored before ``0014`` has no account of its own; with ``account`` it is found through
its turn, as ``log list`` does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, Literal

from maitred.context import trace_id_fault
from maitred.errors import ConfigError
from maitred.log.base import DecisionLog
from maitred.log.lookup import DecisionSummary, iso_time

Kind = Literal["turn", "call", "read", "find", "task"]
#: every kind, in the order a page's filter offers them
KINDS: Final[tuple[Kind, ...]] = ("turn", "call", "read", "find", "task")
#: the tools whose decisions are surface reads (the MCP gateway's resources, prompts, skills)
READ_TOOLS: Final = ("resources/read", "resources/subscribe", "prompts/get", "skills/get")
#: the gateway's discovery tool
FIND_TOOL: Final = "find_tools"
#: the tasks extension's methods the gateway decides
TASK_TOOLS: Final = ("tasks/create", "tasks/get", "tasks/update", "tasks/cancel")
#: the most rows one page holds
MAX_PAGE: Final = 500


def action_kind(tool: str) -> Kind:
    """The kind of an action decision on ``tool`` (see the module docstring)."""
    if tool in READ_TOOLS:
        return "read"
    if tool == FIND_TOOL:
        return "find"
    if tool in TASK_TOOLS:
        return "task"
    return "call"


@dataclass(frozen=True, order=True)
class Cursor:
    """Where a page ended: its last row's clock and id (the next page starts strictly after)."""

    at: float
    decision_id: str

    def token(self) -> str:
        """The cursor as text for a URL (``<clock>~<id>``; the clock in ``repr`` form, exact)."""
        return f"{self.at!r}~{self.decision_id}"

    @classmethod
    def parse(cls, text: str) -> Cursor:
        """The cursor :meth:`token` wrote.

        Raises:
            ConfigError: ``text`` is not one.
        """
        at, sep, did = text.partition("~")
        if not sep or not did or not re.fullmatch(r"-?\d+(\.\d+)?(e[-+]?\d+)?", at):
            raise ConfigError(
                f"after {text!r} is not a page cursor; follow the page's own 'next' link "
                "(it is <unix seconds>~<decision id>)"
            )
        return cls(float(at), did)


@dataclass(frozen=True)
class PageFilter:
    """Which decisions a page holds (every condition ``None``: none).

    Attributes:
        tenant: exactly this tenant's (``""``: decisions made without tenants).
        account: this account's.
        session: this session's (a turn's conversation, an action decision's session).
        tool: action decisions on this tool.
        code: action decisions with this code (``OK`` for an allowed call).
        trace: action decisions made in the request of this W3C trace id.
        kind: only this kind (:data:`KINDS`).
        since: at or after this time (unix seconds).
        until: before this time (unix seconds).
        after: the cursor the previous page ended at (``None``: the first page).
        limit: at most this many rows (1 to :data:`MAX_PAGE`).
    """

    tenant: str | None = None
    account: str | None = None
    session: str | None = None
    tool: str | None = None
    code: str | None = None
    trace: str | None = None
    kind: Kind | None = None
    since: float | None = None
    until: float | None = None
    after: Cursor | None = None
    limit: int = 50

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_PAGE:
            raise ConfigError(f"limit must be from 1 to {MAX_PAGE}, got {self.limit}")
        if self.kind is not None and self.kind not in KINDS:
            raise ConfigError(f"kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if self.trace is not None:
            fault = trace_id_fault(self.trace) if self.trace else "is empty"
            if fault:
                raise ConfigError(f"trace {self.trace[:80]!r} {fault}")
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ConfigError(
                f"the time range is empty: since ({iso_time(self.since)}) is not before until "
                f"({iso_time(self.until)})"
            )

    @property
    def turns(self) -> bool:
        """Whether turns can match (a tool or a code names action decisions only)."""
        names_actions = (self.tool, self.code, self.trace) != (None, None, None)
        return self.kind in (None, "turn") and not names_actions

    @property
    def actions(self) -> bool:
        """Whether action decisions can match."""
        return self.kind != "turn"

    def to_json(self) -> dict[str, Any]:
        """The conditions that are set (times as unix seconds, the cursor as its token)."""
        names = ("tenant", "account", "session", "tool", "code", "trace", "kind", "since", "until")
        out: dict[str, Any] = {n: getattr(self, n) for n in names if getattr(self, n) is not None}
        if self.after is not None:
            out["after"] = self.after.token()
        out["limit"] = self.limit
        return out


@dataclass(frozen=True)
class DecisionPage:
    """One page: its rows, newest first, and where the next page starts.

    Attributes:
        where: the filter asked.
        decisions: at most ``where.limit`` rows.
        next: the cursor of the next page (``None``: this is the last page).
    """

    where: PageFilter
    decisions: tuple[DecisionSummary, ...]
    next: Cursor | None

    def to_json(self) -> dict[str, Any]:
        rows = []
        for summary in self.decisions:
            row = summary.to_json()
            row["kind"] = "turn" if summary.kind == "turn" else action_kind(summary.about)
            rows.append(row)
        return {
            "filter": self.where.to_json(),
            "decisions": rows,
            "next": self.next.token() if self.next is not None else None,
        }


def decision_page(log: DecisionLog, where: PageFilter) -> DecisionPage:
    """The page of decisions matching ``where`` after ``where.after``, newest first.

    Each table is asked for one row more than the page holds, on its index, and the two are
    merged: a next page exists exactly when more than ``limit`` rows were found.
    """
    if not log.read_only:
        log.flush()
    found: list[DecisionSummary] = []
    if where.turns:
        found += _turns(log, where)
    if where.actions:
        found += _actions(log, where)
    found.sort(key=lambda s: (s.at, s.decision_id), reverse=True)
    page = tuple(found[: where.limit])
    more = len(found) > where.limit
    last = page[-1] if page else None
    return DecisionPage(where, page, Cursor(last.at, last.decision_id) if more and last else None)


def _conditions(
    alias: str, clock: str, key: str, session: str, where: PageFilter
) -> tuple[list[str], list[Any]]:
    """The conditions both tables share: tenant, session, time range, cursor."""
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
    if where.after is not None:
        # the row-value form lets both databases seek the (clock, ...) index to the cursor
        conds.append(f"{alias}.{clock} <= ? AND ({alias}.{clock} < ? OR {alias}.{key} < ?)")
        params.extend((where.after.at, where.after.at, where.after.decision_id))
    return conds, params


def _where(conds: list[str]) -> str:
    return f" WHERE {' AND '.join(conds)}" if conds else ""


_TURN_COLS: Final = (
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
_ACTION_COLS: Final = (
    "decision_id",
    "decided_at",
    "tenant",
    "session_id",
    "account_id",
    "tool",
    "verdict",
    "code",
    "turn_id",
    "trace_id",
)


def _turns(log: DecisionLog, where: PageFilter) -> list[DecisionSummary]:
    conds, params = _conditions("t", "ts", "turn_id", "conversation_id", where)
    if where.account is not None:
        conds.insert(0, "t.account_id = ?")
        params.insert(0, where.account)
    cols = ", ".join(f"t.{c}" for c in _TURN_COLS)
    sql = (
        f"SELECT {cols} FROM turns t{_where(conds)} "
        f"ORDER BY t.ts DESC, t.turn_id DESC LIMIT {where.limit + 1}"
    )
    out = []
    for r in log.query(sql, params):
        row = dict(zip(_TURN_COLS, r, strict=True))
        out.append(
            DecisionSummary(
                "turn",
                str(row["turn_id"]),
                float(row["ts"]),
                str(row["tenant"]),
                str(row["conversation_id"]),
                str(row["account_id"]),
                str(row["message_text"]),
                offered=(int(row["n_exposed"]), int(row["n_visible"]), int(row["n_candidates"])),
                turn_id=str(row["turn_id"]),
            )
        )
    return out


def _kind_tools(kind: Kind | None) -> tuple[str, ...] | None:
    """The tools a ``read``, ``find`` or ``task`` page asks for one by name, each on its
    ``(tool, decided_at)`` index (``None``: any tool, or ``call``: every other)."""
    return {"read": READ_TOOLS, "find": (FIND_TOOL,), "task": TASK_TOOLS}.get(kind or "")


def _not_other_kinds() -> tuple[str, list[Any]]:
    """A ``call``: none of the other kinds' tools (read from the clock's index, newest first:
    calls are most of a log's action decisions)."""
    others = [*READ_TOOLS, FIND_TOOL, *TASK_TOOLS]
    return f"a.tool NOT IN ({', '.join('?' for _ in others)})", others


def _actions(log: DecisionLog, where: PageFilter) -> list[DecisionSummary]:
    conds, params = _conditions("a", "decided_at", "decision_id", "session_id", where)
    if where.code is not None:
        conds.insert(0, "a.code = ?")
        params.insert(0, where.code)
    if where.trace is not None:  # first: its index is the narrowest
        conds.insert(0, "a.trace_id = ?")
        params.insert(0, where.trace)
    if where.kind == "call":
        cond, extra = _not_other_kinds()
        conds.append(cond)
        params += extra
    tools: tuple[str | None, ...] = (where.tool,)
    named = _kind_tools(where.kind)
    if named is not None:  # one index range per tool, merged
        tools = tuple(t for t in named if where.tool in (None, t))
    elif where.kind == "call" and where.tool is not None and action_kind(where.tool) != "call":
        tools = ()
    rows: list[tuple[Any, ...]] = []
    for tool in tools:
        by_tool = (["a.tool = ?"], [tool]) if tool is not None else ([], [])
        rows += _account_rows(log, where, by_tool[0] + conds, by_tool[1] + params)
    out = []
    for r in rows:
        row = dict(zip(_ACTION_COLS, r, strict=True))
        out.append(
            DecisionSummary(
                "action",
                str(row["decision_id"]),
                float(row["decided_at"]),
                str(row["tenant"]),
                str(row["session_id"]),
                str(row["account_id"] or ""),
                str(row["tool"]),
                verdict=str(row["verdict"]),
                code=str(row["code"]),
                turn_id=str(row["turn_id"]),
                trace_id=str(row["trace_id"]),
            )
        )
    return out


def _account_rows(
    log: DecisionLog, where: PageFilter, conds: list[str], params: list[Any]
) -> list[tuple[Any, ...]]:
    """The rows matching ``conds``, of ``where.account`` when it is set: its own rows, and a
    row stored before 0014 (no account of its own) whose turn is the account's."""
    limit = where.limit + 1
    if where.account is None:
        return _action_rows(log, conds, params, limit)
    own = _action_rows(log, ["a.account_id = ?", *conds], [where.account, *params], limit)
    linked = [
        "a.account_id = ''",
        "a.turn_id IN (SELECT u.turn_id FROM turns u WHERE u.account_id = ?)",
        *conds,
    ]
    older = _action_rows(log, linked, [where.account, *params], limit)
    return own + [(*r[:4], where.account, *r[5:]) for r in older]


def _action_rows(
    log: DecisionLog, conds: list[str], params: list[Any], limit: int
) -> list[tuple[Any, ...]]:
    cols = ", ".join(f"a.{c}" for c in _ACTION_COLS)
    sql = (
        f"SELECT {cols} FROM action_decisions a{_where(conds)} "
        f"ORDER BY a.decided_at DESC, a.decision_id DESC LIMIT {limit}"
    )
    return log.query(sql, params)
