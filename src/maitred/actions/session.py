"""What one agent session has done, as the action gate needs to know it.

A :class:`Session` records **successful** reads: which record ids each read tool returned and
in which order (``seq``, a counter of recorded calls) and when (``ts``, the session's clock).
A record created by a write in this session (a new reservation) counts as read by the read tool
the policy names, so a booking can be followed by a change without a re-read. Context values
the application knows but the tool arguments do not carry (a stated cancellation reason) live in
``context``.

**The offer is what was committed.** ``offered`` / ``turn_id`` are set by :meth:`Session.offer`
only once the turn that made the offer is durable (:meth:`maitred.Maitred.turn` calls it after
the log's commit, or at once without a log): a turn that raised, or whose commit failed, never
becomes the offer. With a decision log, the offer a check is decided against is the session's
latest committed turn *in the log* (:mod:`maitred.log.offers`); ``offered`` is then a cache of
it, used only while ``turn_id`` is still the latest committed turn of ``(tenant, id)``. What the
log holds of a session is its tenant, id, account and offers; its reads, writes and ``context``
are this process's memory (they are not logged), so a must-read-before-write rule after a
restart asks for the read again -- it fails closed, never open.

**A session whose turns disclose** (``accumulates=True``; the MCP gateway's ``find_tools``
sessions) keeps everything its turns exposed: each turn is a result the model reads and keeps
(a tool's name, description and schema), not a menu the next turn replaces, so its offer is
the union of its committed turns' exposed tools (with a log, read from the log:
:func:`~maitred.log.offers.disclosed_sql`).

The gate only *reads* a session (through ``session.*`` paths); wrappers record into it after a
call succeeds. The generic :func:`must_read_before_write` rule is declared per tool by naming
the argument that identifies the record and the read tool that reads it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from maitred.actions.model import ToolCall
from maitred.actions.rules import Tracking
from maitred.contract.policy import PolicyPredicate, Violation, policy_rule
from maitred.contract.predicate import StateView


@dataclass(frozen=True)
class ReadMark:
    """One successful read: the session's call counter and clock when it happened."""

    seq: int
    ts: float


@dataclass
class Session:
    """One conversation as the gates know it (mutable: it is the record of what happened).

    Attributes:
        id: the session id (for logs).
        context: application-supplied values, e.g. ``{"cancel_reason": "health"}``.
        read: read tool -> record id -> :class:`ReadMark` of its latest successful read.
        last_read: read tool -> the record id it read last.
        calls: how many successful calls were recorded.
        account: whose state the gates read for this conversation.
        offered: what the latest turn put in front of the model (``None``: no turn yet); a call
            to anything else is ``TOOL_NOT_OFFERED`` when checked through
            :class:`maitred.Maitred`.
        turn_id: the decision-log id of that turn (decisions on calls link to it).
        writes: the mutating tools that ran successfully, in order.
        tenant: whose session it is (the service's tenant; ``""``: none). Matched exactly when
            the session's offer is read from the log.
        accumulates: its turns disclose (see the module docstring): the offer is everything
            they exposed, not the latest turn's menu.
        offered_by: for a session that accumulates, the latest turn that disclosed each tool
            it was offered (a decision on a call to that tool links to that turn).
    """

    id: str = ""
    context: dict[str, Any] = field(default_factory=dict)
    read: dict[str, dict[str, ReadMark]] = field(default_factory=dict)
    last_read: dict[str, str] = field(default_factory=dict)
    calls: int = 0
    clock: Callable[[], float] = field(default=time.time, repr=False, compare=False)
    account: str = ""
    offered: frozenset[str] | None = None
    turn_id: str = ""
    writes: list[str] = field(default_factory=list)
    tenant: str = ""
    accumulates: bool = False
    offered_by: dict[str, str] = field(default_factory=dict)

    def offer(self, names: Iterable[str], turn_id: str = "") -> None:
        """Record what is now in front of the model (a routed turn's menu, or a tool list;
        for a session that :attr:`accumulates`, added to what it was offered before).

        Call it for a turn only once that turn is committed (see the module docstring).
        """
        names = frozenset(names)
        if self.accumulates:
            self.offered_by.update(dict.fromkeys(names, turn_id))
            names |= self.offered or frozenset()
        self.offered = names
        self.turn_id = turn_id

    def mark_read(self, read_tool: str, record_id: str) -> None:
        """Record that ``read_tool`` returned the record ``record_id``."""
        self.calls += 1
        self.read.setdefault(read_tool, {})[str(record_id)] = ReadMark(self.calls, self.clock())
        self.last_read[read_tool] = str(record_id)

    def has_read(self, read_tool: str, record_id: str) -> bool:
        return str(record_id) in self.read.get(read_tool, {})

    def record(
        self, call: ToolCall, result: Any, tracking: Tracking, *, mutates: bool = False
    ) -> None:
        """Record a call that **succeeded** (never call this for a rejected or failed call)."""
        if mutates:
            self.writes.append(call.name)
        id_arg = tracking.reads.get(call.name)
        if id_arg is not None and id_arg in call.arguments:
            self.mark_read(call.name, str(call.arguments[id_arg]))
            return
        created = tracking.creates.get(call.name)
        if created is not None and isinstance(result, Mapping) and created[1] in result:
            self.mark_read(created[0], str(result[created[1]]))
            return
        self.calls += 1

    def view(self) -> dict[str, Any]:
        """The ``session.*`` namespace predicates read (live references, not copies)."""
        return {"context": self.context, "read": self.read, "last_read": self.last_read}


def must_read_before_write(
    tools: tuple[str, ...],
    *,
    id_arg: str,
    read_tool: str,
    code: str = "MUST_READ_BEFORE_WRITE",
    name: str | None = None,
) -> PolicyPredicate:
    """The generic rule: a write naming record ``args.<id_arg>`` needs an earlier successful
    ``read_tool`` of that record in this session (or its creation in this session).

    Example: ``must_read_before_write(("cancel_reservation",), id_arg="reservation_id",
    read_tool="get_reservation_details")``.
    """
    mark = f"session.read.{read_tool}[args.{id_arg}]"

    @policy_rule(
        code=code,
        tools=tools,
        reads=[f"args.{id_arg}", mark],
        optional=[mark],
        name=name or f"read_{read_tool}_before_write",
        message=f"the record must be read with {read_tool} before it is changed",
        fields=(id_arg,),
    )
    def rule(view: StateView) -> Violation | None:
        if view[mark] is not None:
            return None
        return Violation(
            f"{id_arg} {view[f'args.{id_arg}']!r} has not been read in this session: call "
            f"{read_tool} for it first and check the record before changing it",
            (id_arg,),
        )

    return rule
