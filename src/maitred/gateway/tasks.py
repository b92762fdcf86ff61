"""The tasks extension through the gateway: a call decided before its task exists, and each
task answered only for the principal that created it.

The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663, 2026-07-28 connections
only) lets a server answer a ``tools/call`` with a *task handle* (``resultType: "task"``, a
``taskId`` and a status) instead of a result, which the client then polls with ``tasks/get``
(whose answer carries the result once the task is ``completed``), feeds with ``tasks/update``
(``inputResponses``) and stops with ``tasks/cancel``. A server may create a task only for a
request whose client declared the extension in that request's ``_meta`` capabilities.

**A task is a call, decided first.** The ``tools/call`` that may create a task goes through the
gateway's gate like any call (:class:`~maitred.gateway.server.GateMiddleware`): refused, it
never reaches the upstream, so no task exists. Allowed, and the client declared the extension,
:meth:`TasksExtension.intercept_tool_call` forwards it on a connection of its own that declares
the extension too (so the upstream may decide to make a task of it); otherwise the call is
forwarded as any call is and the upstream, asked by a client that did not declare it, answers
with a result.

**Who created which task is in the decision log.** A task handle the upstream returns is
recorded (:meth:`TaskBook.created`) before the client sees it: an action decision
``tasks/create`` whose decision id is the task's id *at the gateway* -- a fresh, unguessable
id, since several upstreams may use the same ids, and one may use guessable ones -- and whose
arguments name the upstream, the upstream's own task id, the tool and the call's arguments,
the account, the credential's subject (a JWT's ``sub``) and the decision that allowed the
call; its session and tenant are the creator's. The client gets the handle under the
gateway's id. So any replica on the same log, or this process restarted, finds the task's
owner with one primary-key probe, and routes a ``tasks/*`` request to the upstream that holds
it.

**A task belongs to the principal that created it, decided again on every access.**
``tasks/get`` (which carries the result), ``tasks/update`` and ``tasks/cancel`` are each
decided and logged like a resource read -- by the caller's session, not here
(:meth:`Conversation.task_access <maitred.conversation.Conversation.task_access>`, which asks
the engine): allowed only for the task's creator (the same tenant, account and credential's
subject) who could make the task's call *now* -- the tool's decision for this caller on fresh
state: its scopes, exit predicates and call policies. Anything else -- another principal's
task, another token of the same account that lacks the tool's scope, the creator once the
state hides the tool -- is answered exactly as an id that does not exist (``-32602``,
``TASK_NOT_FOUND``, the same message, both logged), so a task's existence never leaks; only an
allowed request is forwarded, with the upstream's id, and the answer comes back under the
gateway's id.

**Where it applies.** Streamable-HTTP upstreams: each request to one is a connection of its
own, so one can declare the extension and the next not. A stdio upstream is one session the
gateway shares, opened once with the capabilities it declared then; its calls are forwarded
without the extension, so it never makes a task. Not passed through (yet): ``notifications/tasks``
on a ``subscriptions/listen`` stream (``taskIds``), and the 2025-11-25 experimental tasks
(which the extension replaces; a handshake-era client is never offered tasks).
"""

from __future__ import annotations

import json
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, cast

import mcp_types as mt  # the MCP wire types (`mcp.types` re-exports them)
from fastmcp.client import Client
from fastmcp.server.context import Context
from fastmcp.server.extensions import (
    MethodBinding,
    ServerExtension,
    ToolCallContinuation,
    ToolCallOutcome,
)
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.extension import UnexpectedClaimedResult as ClaimedResult
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict, Field

from maitred.actions.model import OK, Decision, Rejection, ToolCall
from maitred.actions.refusals import gate_unavailable
from maitred.conversation import Conversation as Gatekeeper
from maitred.conversation.tasks import TASK_NOT_FOUND, TASKS_POLICY, TaskOrigin
from maitred.errors import MaitredError
from maitred.gateway.config import Upstream
from maitred.gateway.traces import client_trace_id
from maitred.gateway.upstreams import ListingProxy, UpstreamTool, declaring, sdk_request
from maitred.log.base import DecisionLog
from maitred.log.offers import LINKED_DECISION_SQL
from maitred.log.storable import identity_fault

#: the tasks extension's identifier (SEP-2663)
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
#: the call name of the decision that records a task (its decision id is the task's id)
CREATE = "tasks/create"
_KEPT = 10_000  # task records kept in memory (the log has them all)


class CreatedTask(mt.Result):
    """A ``CreateTaskResult``: a task handle in place of a call's result (fields as sent)."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str = Field(alias="taskId")


class TaskAnswer(mt.Result):
    """An upstream's answer to ``tasks/get`` / ``tasks/update`` / ``tasks/cancel`` (as sent)."""

    model_config = ConfigDict(extra="allow")
    result_type: str | None = "complete"


class TaskParams(mt.RequestParams):
    """``tasks/get`` and ``tasks/cancel``: which task; ``tasks/update`` adds its answers."""

    model_config = ConfigDict(extra="allow")
    task_id: str = Field(alias="taskId")


class _TaskRequest(mt.Request[TaskParams, str]):
    """A ``tasks/*`` request to an upstream (its ``Mcp-Name`` header is the task id)."""

    name_param: ClassVar[str | None] = "taskId"
    method: str
    params: TaskParams


async def _unresolved(result: CreatedTask, context: ClaimContext) -> mt.CallToolResult:
    raise RuntimeError("the gateway hands a task to its client; it never polls one itself")


class TaskResults(ClientExtension):
    """What the gateway's connection to an upstream declares when its client declared the
    extension: task handles are accepted (and handed on, never resolved here)."""

    identifier = TASKS_EXTENSION

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return (ResultClaim(result_type="task", model=CreatedTask, resolve=_unresolved),)


def tasking(proxy: ListingProxy) -> Callable[[], Client[Any]]:
    """A client factory for ``proxy``'s upstream whose connections declare the tasks extension
    (HTTP upstreams: each request is a connection of its own)."""
    return declaring(proxy, TaskResults())


@dataclass(frozen=True)
class TaskRecord:
    """Who created one task, and where it lives.

    Attributes:
        task_id: its id at the gateway (the recording decision's id).
        upstream: the upstream that holds it, and ``upstream_task_id`` its id there.
        tenant, account: its creator; ``subject``: the creator's credential's subject.
        tool: the tool whose call created it; ``decision_id``: the decision that allowed it;
            ``arguments``: the call's arguments.
    """

    task_id: str
    upstream: str
    upstream_task_id: str
    tenant: str
    account: str
    tool: str
    decision_id: str
    subject: str = ""
    arguments: Mapping[str, Any] | None = None

    @property
    def origin(self) -> TaskOrigin:
        """Who made it, and with what call (what each access is decided on)."""
        call = ToolCall(self.tool, dict(self.arguments or {}))
        return TaskOrigin(self.tenant, self.account, self.subject, call)

    @classmethod
    def of(cls, decision: Mapping[str, Any]) -> TaskRecord | None:
        """The record a logged ``tasks/create`` decision holds (None: not such a decision)."""
        call = decision.get("call") or {}
        args = call.get("arguments") or {}
        if call.get("name") != CREATE or not isinstance(args, Mapping):
            return None
        return cls(
            str(decision.get("decision_id", "")),
            str(args.get("upstream", "")),
            str(args.get("upstreamTaskId", "")),
            str(decision.get("tenant", "")),
            str(args.get("account", "")),
            str(args.get("tool", "")),
            str(args.get("decision", "")),
            str(args.get("subject", "")),
            dict(args.get("arguments") or {}),
        )


class TaskBook:
    """The tasks created through the gateway, read from and written to the decision log (see
    the module docstring); the newest records are also kept in memory.

    Args:
        log: the gateway's decision log (``None``: none configured; records live in this
            process only, and a restart forgets them).
        clock: the engines' clock.
    """

    def __init__(self, log: DecisionLog | None, clock: Callable[[], float]) -> None:
        self.log = log
        self.clock = clock
        self.kept: OrderedDict[str, TaskRecord] = OrderedDict()

    def _keep(self, record: TaskRecord) -> None:
        self.kept[record.task_id] = record
        self.kept.move_to_end(record.task_id)
        while len(self.kept) > _KEPT:
            self.kept.popitem(last=False)

    def created(
        self,
        keeper: Gatekeeper,
        allowed: Decision,
        upstream: str,
        task: CreatedTask,
    ) -> TaskRecord:
        """Record ``task``, made by ``upstream`` for the call ``allowed`` decided, for
        ``keeper``'s principal (its tenant, account and credential's subject); returns the record
        once it is in the log (flushed).

        Raises:
            MaitredError: the record could not be written (the task must not be handed out).
        """
        task_id = f"task-{uuid.uuid4().hex}"
        args = {
            "upstream": upstream,
            "upstreamTaskId": task.task_id,
            "tool": allowed.call.name,
            "arguments": dict(allowed.call.arguments),
            "account": keeper.account,
            "subject": keeper.principal.subject,
            "decision": allowed.decision_id,
        }
        now = self.clock()
        decision = Decision(
            ToolCall(CREATE, args, allowed.call.id),
            "allow",
            OK,
            f"task {task_id} of {allowed.call.name} (upstream {upstream!r}, its id "
            f"{task.task_id!r}) created by the call decision {allowed.decision_id} for "
            f"account {keeper.account!r}; only its creator, while it may make that call, may "
            "get, update or cancel it",
            mutates=False,
            now=now,
            policy=TASKS_POLICY,
            decision_id=task_id,
            session_id=keeper.session.id,
            tenant=keeper.tenant,
            account=keeper.account,
            subject=keeper.principal.subject,
            trace_id=allowed.trace_id,  # made in the request of the call it was made for
        )
        if self.log is not None:
            self.log.write_decisions([decision])
            self.log.flush()
        record = TaskRecord.of(_as_json(decision))
        assert record is not None
        self._keep(record)
        return record

    def find(self, task_id: str) -> TaskRecord | None:
        """The record of ``task_id`` (from memory, else one probe of the log)."""
        record = self.kept.get(task_id)
        if record is not None or self.log is None or not task_id.startswith("task-"):
            return record
        rows = self.log.query(LINKED_DECISION_SQL, (task_id,))  # a forged row is no task
        if not rows:
            return None
        record = TaskRecord.of(json.loads(str(rows[0][0])))
        if record is not None:
            self._keep(record)
        return record

    def decide(
        self, keeper: Gatekeeper, method: str, task_id: str, trace_id: str = ""
    ) -> tuple[Decision, TaskRecord | None]:
        """May ``keeper``'s principal send ``method``
        for ``task_id`` now? Asked of its conversation (:meth:`Conversation.task_access
        <maitred.conversation.Conversation.task_access>`: decided, logged and flushed); the
        task's record comes with an allowed decision only.

        Raises:
            MaitredError: the record could not be read, or the decision written.
        """
        record = self.find(task_id)
        origin = record.origin if record is not None else None
        decision = keeper.task_access(method, task_id, origin, trace_id=trace_id)
        return decision, record if decision.allow else None


def _as_json(decision: Decision) -> dict[str, Any]:
    return {
        "decision_id": decision.decision_id,
        "tenant": decision.tenant,
        "call": {"name": decision.call.name, "arguments": dict(decision.call.arguments)},
    }


class Who:
    """What :class:`TasksExtension` needs of the gateway: the caller's gatekeeper, and which
    upstream lists a tool."""

    def __init__(
        self,
        keeper_now: Callable[[], Gatekeeper | None],
        owner_of: Callable[[str], str | None],
    ) -> None:
        self.keeper_now = keeper_now
        self.owner_of = owner_of


class TasksExtension(ServerExtension):
    """The gateway's side of the tasks extension (see the module docstring).

    Args:
        book: who created which task.
        proxies: the upstreams served now, by name (the passthrough's live mapping).
        who: the caller's gatekeeper and the tools' upstreams.
        engine: runs a blocking function on a worker thread.
    """

    identifier = TASKS_EXTENSION

    def __init__(
        self,
        book: TaskBook,
        proxies: Mapping[str, ListingProxy],
        who: Who,
        engine: Callable[[Callable[[], Any]], Awaitable[Any]],
    ) -> None:
        self.book = book
        self.proxies = proxies
        self.who = who
        self.engine = engine

    def methods(self) -> Sequence[MethodBinding]:
        modern = frozenset(MODERN_PROTOCOL_VERSIONS)
        return tuple(
            MethodBinding(m, TaskParams, self._handler(m), modern)
            for m in ("tasks/get", "tasks/update", "tasks/cancel")
        )

    def _declared(self) -> bool:
        request = sdk_request()
        return request is not None and self.client_settings(request) is not None

    def _tasks_proxy(self, tool: str) -> ListingProxy | None:
        upstream = self.who.owner_of(tool)
        proxy = self.proxies.get(upstream) if upstream is not None else None
        return proxy if proxy is not None and proxy.config.url else None

    async def intercept_tool_call(
        self,
        params: mt.CallToolRequestParams,
        context: Context,
        call_next: ToolCallContinuation,
    ) -> ToolCallOutcome:
        """An allowed call (the gate ran first) whose client declared the extension goes to
        its HTTP upstream on a connection that declares it too: its answer may be a task."""
        proxy = self._tasks_proxy(params.name) if self._declared() else None
        if proxy is None:
            return await call_next()
        listed = await proxy.get_tool(params.name)
        if not isinstance(listed, UpstreamTool):
            return await call_next()
        wire = listed.to_mcp_tool()
        tool = cast(UpstreamTool, UpstreamTool.from_mcp_tool(tasking(proxy), wire))
        tool.adopt(wire, proxy.relay)
        try:
            return await tool.run(dict(params.arguments or {}), context)
        except ClaimedResult as claimed:  # a task handle: the gate records it (GateMiddleware)
            if isinstance(claimed.result, CreatedTask):
                return claimed.result
            raise

    def _handler(
        self, method: str
    ) -> Callable[[ServerRequestContext[Any, Any], TaskParams], Awaitable[TaskAnswer]]:
        async def handle(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> TaskAnswer:
            return await self.forward(method, params, client_trace_id(ctx))

        return handle

    async def forward(self, method: str, params: TaskParams, trace_id: str = "") -> TaskAnswer:
        """Decide ``method`` for the caller and, for the task's creator only, ask the upstream
        that holds it; its answer comes back under the gateway's task id. ``trace_id``: the
        W3C trace id of the client's request (``""``: none), stamped on the decision."""
        keeper = self.who.keeper_now()
        if keeper is None:
            raise MCPError(mt.INVALID_REQUEST, "this gateway serves authenticated sessions only")
        task_id = params.task_id
        if fault := identity_fault(task_id):  # no task has it: the log could not store one
            raise MCPError(mt.INVALID_PARAMS, f"params.taskId {fault}", {"field": "taskId"})
        try:
            decision, record = await self.engine(
                lambda: self.book.decide(keeper, method, task_id, trace_id)
            )
        except MaitredError as exc:
            raise MCPError(
                mt.INTERNAL_ERROR,
                f"the gateway could not decide or record this request ({type(exc).__name__}: "
                f"{exc}); nothing was sent. Try again later",
            ) from None
        proxy = self.proxies.get(record.upstream) if record is not None else None
        if record is None or proxy is None:
            rejection = decision.rejection()
            raise MCPError(mt.INVALID_PARAMS, rejection.message, rejection.to_json())
        sent = params.model_dump(by_alias=True, exclude_none=True)
        sent.pop("_meta", None)
        sent["taskId"] = record.upstream_task_id
        request = _TaskRequest(method=method, params=TaskParams.model_validate(sent))
        async with tasking(proxy)() as client:
            answer = await client.session.send_request(request, TaskAnswer)
        fields = answer.model_dump(by_alias=True, exclude_none=True)
        if "taskId" in fields:
            fields["taskId"] = task_id
        meta = {**_own_meta(fields), "maitred/decision_id": decision.decision_id}
        return TaskAnswer.model_validate({**fields, "_meta": meta})


async def hand_over(
    book: TaskBook,
    keeper: Gatekeeper,
    allowed: Decision,
    upstream: str,
    task: CreatedTask,
    engine: Callable[[Callable[[], TaskRecord]], Awaitable[TaskRecord]],
) -> CreatedTask | Rejection:
    """``task`` recorded for ``keeper``'s principal and handed to the client under the
    gateway's id, the allowing decision's id in its ``_meta``; or, when it could not be
    recorded, the refusal the client gets instead (a task nobody owns is never handed out)."""
    try:
        record = await engine(lambda: book.created(keeper, allowed, upstream, task))
    except MaitredError as exc:
        return gate_unavailable(
            exc,
            what=f"the upstream {upstream!r} made a task of this call, but the gateway could "
            "not record whose it is",
            undone="The task is not handed out, and whether it runs is not known",
            decision_id=allowed.decision_id,
            executed=None,
        )
    fields = task.model_dump(by_alias=True, exclude_none=True)
    meta = {**_own_meta(fields), "maitred/decision_id": allowed.decision_id}
    return CreatedTask.model_validate({**fields, "taskId": record.task_id, "_meta": meta})


def _own_meta(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A result's ``_meta`` without what describes the upstream's connection (its
    ``serverInfo`` and the like: the gateway stamps its own)."""
    meta = fields.get("_meta") or {}
    return {k: v for k, v in meta.items() if not k.startswith("io.modelcontextprotocol/")}


def offers_tasks(upstreams: Sequence[Upstream]) -> bool:
    """Whether some upstream may make tasks: one reached over streamable HTTP."""
    return any(up.url for up in upstreams)


__all__ = [
    "CREATE",
    "TASKS_EXTENSION",
    "TASK_NOT_FOUND",
    "CreatedTask",
    "TaskBook",
    "TaskRecord",
    "TasksExtension",
    "Who",
    "hand_over",
    "offers_tasks",
    "tasking",
]
