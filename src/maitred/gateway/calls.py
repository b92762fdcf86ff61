"""The gate's ``tools/call`` path, one line: edge -> decide -> forward -> answer.

:meth:`CallPath.on_call_tool` reads the call -- its tool name and arguments, here and nowhere
else, so a call that arrives wrapped (a meta-tool carrying a call in its own arguments) is
unwrapped in this one place and takes the very same path -- and serves it, traced and counted
once around the whole: the request's span (``maitred.call``) and
``maitred_gateway_calls_total`` are written from what the call came to (a :class:`Served`),
never from inside a step. The line (:meth:`CallPath.serve_call`):

1. **edge** (:meth:`CallPath._edge`): who asks -- the session's conversation (none:
   ``AUTH_REQUIRED``, not logged: there is no conversation to log it under) -- its name and
   arguments I-JSON (else refused, logged with the arguments withheld), and the call charged
   to the caller's rate limits; what holds the call before its contracts are read (past a
   rate, or its tool listed to the other era only) goes to the decision;
2. **decide** (:meth:`CallPath._decide`): the conversation decides once -- the check with
   what the edge holds, or the person's answer a 2026-07-28 round brings back
   (:mod:`.approval`); a decision that awaits a person is asked; a refusal is answered with
   its decision id. ``find_tools`` is answered here (:meth:`CallPath._find_tools`);
3. **forward** (:meth:`CallPath._forward`): the allowed call sent to the upstream that lists
   its tool, over the session kept for it (:class:`~.upstreams.KeptSession`; the span
   ``maitred.upstream`` is current meanwhile, so the upstream continues the trace); a failure
   is ``UPSTREAM_FAILED``, the upstream suspected and the gateway still up;
4. **answer** (:meth:`CallPath._answer`): a task handed over (:mod:`.tasks`), or the result
   with the decision id in its ``_meta``; a successful call recorded in the conversation and
   ``list_changed`` sent when that changed what it sees.

Every step runs on the request's own task and suspends only for the work it does (a state
read, the log, the upstream). The engine is synchronous: its calls run on worker threads
(:meth:`CallPath._engine`), or on the event loop for a check that cannot wait on anything
(:meth:`CallPath._quick`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio
import mcp_types as mt  # the MCP wire types (`mcp.types` re-exports them)
from fastmcp.server.middleware import CallNext, MiddlewareContext
from fastmcp.tools import InputRequiredToolResult, ToolResult

from maitred.actions.model import TOOL_NOT_OFFERED, ApprovalAnswer, Decision, Hold, ToolCall
from maitred.actions.refusals import (
    Rejection,
    auth_required,
    decided,
    gate_unavailable,
    upstream_failed,
)
from maitred.conversation.finding import read_needs, unwrap
from maitred.errors import MaitredError
from maitred.gateway import traces
from maitred.gateway.approval import VIA, Approvals, awaits_person
from maitred.gateway.keeper import FIND_TOOLS, Gatekeeper, GatewayEngines
from maitred.gateway.lifecycle import Upstreams
from maitred.gateway.limits import argument_fault
from maitred.gateway.metrics import GatewayMetrics
from maitred.gateway.passthrough import refuses_client
from maitred.gateway.rates import admit
from maitred.gateway.surfaces import (
    DECISION_ID_META,  # the key of a result's _meta that carries the decision's log id
    SurfaceGuard,
)
from maitred.gateway.tasks import CreatedTask, TaskBook, hand_over
from maitred.gateway.upstreams import ListingProxy, era_hold
from maitred.ratelimit import Limiter, Refusal
from maitred.tracing import Tracing

T = TypeVar("T")
#: the context of a ``tools/call`` request
CallContext = MiddlewareContext[mt.CallToolRequestParams]


@dataclass
class Served:
    """What one ``tools/call`` came to: the code it is counted under (the decision's own;
    ``OK`` once it reached the upstream, whatever the upstream answered) and the result the
    client gets, with what its span and the metrics note of it, once, around the whole path.
    """

    code: str
    result: ToolResult
    #: the conversation that asked (``None``: none, ``AUTH_REQUIRED``)
    keeper: Gatekeeper | None = None
    #: the check's decision and the seconds deciding and logging it took (``None``: no check)
    checked: tuple[Decision, float] | None = None
    #: the call was refused past a rate: the limit's scope (``""``: the store did not answer)
    limited: str | None = None
    #: the upstream that failed the allowed call (``""``: none did)
    failed: str = ""


@dataclass
class Allowed:
    """The decision that lets a call run, and the check's (``None``: no check ran, a person's
    answer decided it)."""

    decision: Decision
    checked: tuple[Decision, float] | None


@dataclass
class Edge:
    """What the edge found: who asks, and what holds the call before its contracts are read
    (past a rate, or its tool listed to the other era only; ``None``: nothing)."""

    keeper: Gatekeeper
    limited: Refusal | None
    hold: Hold | None


def _refused(refusal: Rejection, keeper: Gatekeeper | None = None, **noted: Any) -> Served:
    """A call refused: an ``isError`` result whose text is ``refusal`` as JSON, its decision
    id (if any) also in ``_meta`` (:data:`DECISION_ID_META`), counted under its code."""
    text = json.dumps(refusal.to_json(), ensure_ascii=False, sort_keys=True)
    meta = {DECISION_ID_META: refusal.decision_id} if refusal.decision_id else None
    content = [mt.TextContent(type="text", text=text)]
    result = ToolResult(content=content, meta=meta, is_error=True)
    return Served(refusal.code, result, keeper, **noted)


def era_of(context: MiddlewareContext[Any]) -> str:
    """The protocol revision the request's client spoke (``""``: not known, a call made in
    the same process without a session)."""
    ctx = context.fastmcp_context
    request = ctx.request_context if ctx is not None else None
    return str(request.protocol_version or "") if request is not None else ""


class CallPath:
    """Serves each ``tools/call`` through the session's conversation (see the module
    docstring).

    A base of :class:`~maitred.gateway.server.GateMiddleware`, which holds what it reads (the
    attributes below, set up there) and finds each request's conversation.
    """

    engines: GatewayEngines
    account: str | None
    tracing: Tracing
    metrics: GatewayMetrics
    limiter: Limiter | None
    approvals: Approvals
    upstreams: Upstreams | None
    tasks: TaskBook | None
    surface_guard: SurfaceGuard | None

    if TYPE_CHECKING:  # the conversations are the sessions' (GateMiddleware)

        def _keeper(self, context: MiddlewareContext[Any]) -> Gatekeeper | None: ...

    @staticmethod
    async def _engine(fn: Callable[[], T], keeper: Gatekeeper | None = None) -> T:
        """Run ``fn`` on a worker thread: under ``keeper``'s own lock when it is one session's
        request (the engine itself is shared by every session without a lock of ours)."""
        if keeper is None:
            return await anyio.to_thread.run_sync(fn)

        def locked() -> T:
            with keeper.lock:
                return fn()

        return await anyio.to_thread.run_sync(locked)

    @classmethod
    async def _quick(cls, fn: Callable[[], T], keeper: Gatekeeper, quick: bool) -> T:
        """Run one check of ``keeper``'s session: on the event loop when it is ``quick`` (no
        state read or listing afresh first: :meth:`Conversation.lists_first`), touches only
        memory and local files, and the session is not busy on a worker thread; else as
        :meth:`_engine` does.

        Such a check is a fraction of a millisecond of CPU (schema, predicates, policy, one
        SQLite commit without a sync), about what the hop to a worker thread and back costs
        in wake-ups; and under the GIL a worker's CPU holds the loop up anyway. A check that
        may wait on a network (PostgreSQL state or log, a callable provider) always goes to a
        worker thread, so one slow database never stalls the other sessions' requests.
        """
        if quick and keeper.in_process and keeper.lock.acquire(blocking=False):
            try:
                return fn()
            finally:
                keeper.lock.release()
        return await cls._engine(fn, keeper)

    async def on_call_tool(
        self,
        context: CallContext,
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        """Read the call (the one place its name and arguments are read) and serve it, in the
        request's span, counted under its code."""
        message = context.message
        name, args = message.name, dict(message.arguments or {})
        with self.tracing.request("maitred.call", *traces.carriers(context)) as span:
            # a call_tool call is the call it names, from here on (the core's rule)
            found = unwrap(name, args, self.engines.call_tool)
            if isinstance(found, Hold):
                served = await self._refuse_wrapper(context, name, args, found)
            else:
                if found is not None:
                    name, args = found
                    update = {"name": name, "arguments": args}
                    context = context.copy(message=message.model_copy(update=update))
                served = await self.serve_call(context, call_next, name, args)
            if span.is_recording():
                traces.note_served(span, self.tracing, name, served, DECISION_ID_META)
        self.metrics.count_served(served.code, served.limited, served.failed)
        return served.result

    async def serve_call(
        self,
        context: CallContext,
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
        name: str,
        args: dict[str, Any],
    ) -> Served:
        """The call path: edge -> decide -> forward -> answer (see the module docstring)."""
        edge = await self._edge(context, name, args)
        if isinstance(edge, Served):
            return edge
        if name == FIND_TOOLS and edge.keeper.finds:
            return await self._find_tools(context, edge, args)
        allowed = await self._decide(context, edge, name, args)
        if isinstance(allowed, Served):
            return allowed
        keeper, upstream = edge.keeper, edge.keeper.upstream_of(name)
        try:
            with traces.upstream(self.tracing, upstream, name) as calling:
                mutates = keeper.mutates(name)
                result = await self._forward(context, call_next, upstream, name, args, mutates)
                if isinstance(result, ToolResult):  # not a task handle (.tasks)
                    traces.note_result(calling, result)
        except Exception as exc:  # the upstream failed; the gateway must answer and stay up
            if refuses_client(exc):  # the upstream's answer to this client: passed on as sent
                raise
            return await self._failed(keeper, upstream, name, allowed, exc)
        if self.upstreams is not None:
            self.upstreams.answered(upstream)
        return await self._answer(context, keeper, name, args, allowed, result)

    async def _edge(
        self, context: CallContext, name: str, args: Mapping[str, Any]
    ) -> Edge | Served:
        """Who asks, and what holds the call; or the answer to a call that reached the gate
        without an identity, or whose name or arguments are not I-JSON (NaN, a lone
        surrogate...: logged, arguments withheld, and charged to the caller's rate limits
        like any call, since its refusal is a log write; past a rate it is refused as such).
        """
        keeper = self._keeper(context)
        if keeper is None:
            return _refused(auth_required())
        fault = argument_fault(name, args)
        limited = await self._admit(keeper, fault[0].name if fault is not None else name)
        if fault is not None:
            call, hold = fault
            scope = None if limited is None else (limited.scope or "")
            hold = hold if limited is None else limited.hold()
            return await self._refuse(context, keeper, call, hold, limited=scope)
        if limited is not None:
            return Edge(keeper, limited, limited.hold())
        if self.upstreams is None:
            return Edge(keeper, None, None)
        proxy = self.upstreams.proxies.get(keeper.upstream_of(name))
        return Edge(keeper, None, await era_hold(proxy, name))

    async def _admit(self, keeper: Gatekeeper, name: str) -> Refusal | None:
        """Charge the call to its caller's budgets (:mod:`.rates`): the rate it is past, if
        any."""
        admission = await admit(self.limiter, keeper, name, stdio=self.account is not None)
        if admission.store_error:
            self.metrics.rate_limit_store_errors.inc()
        return admission.refusal

    async def _refuse_wrapper(
        self, context: CallContext, name: str, args: dict[str, Any], hold: Hold
    ) -> Served:
        """A ``call_tool`` call that names no call, refused with ``hold`` and logged on the
        ``call_tool`` call (like ``find_tools``' bad needs), charged to the caller's rates like
        any call (past a rate, refused as such)."""
        keeper = self._keeper(context)
        if keeper is None:
            return _refused(auth_required())
        fault = argument_fault(name, args)
        call, hold = fault if fault is not None else (ToolCall(name, args), hold)
        limited = await self._admit(keeper, call.name)
        scope = None if limited is None else (limited.scope or "")
        hold = hold if limited is None else limited.hold()
        return await self._refuse(context, keeper, call, hold, limited=scope)

    async def _refuse(
        self,
        context: CallContext,
        keeper: Gatekeeper,
        call: ToolCall,
        hold: Hold,
        limited: str | None = None,
    ) -> Served:
        """The gateway's own refusal of ``call``, logged (:meth:`Conversation.refuse`) and
        answered with its decision id; ``GATE_UNAVAILABLE`` when it could not be logged."""
        era, trace_id = era_of(context), traces.trace_id(context, self.tracing)
        try:
            decision = await self._engine(
                lambda: keeper.refuse(call, hold, era=era, trace_id=trace_id), keeper
            )
        except MaitredError as exc:
            unavailable = gate_unavailable(exc, undone="The call was not executed")
            return _refused(unavailable, keeper, limited=limited)
        return _refused(decided(decision), keeper, limited=limited)

    async def _decide(
        self, context: CallContext, edge: Edge, name: str, args: Mapping[str, Any]
    ) -> Allowed | Served:
        """The call's decision when it is allowed, else the answer refusing it: an approval
        the client answered, else the check; a decision that awaits a person asked
        (:mod:`.approval`); ``GATE_UNAVAILABLE`` when it could not be decided or logged."""
        keeper, hold, era = edge.keeper, edge.hold, era_of(context)
        trace_id = traces.trace_id(context, self.tracing)
        hint = ""  # what the payload adds: the client cannot ask the user (.approval)
        checked: tuple[Decision, float] | None = None

        async def answer_with(pending: Decision, answer: ApprovalAnswer) -> Decision:
            return await self._engine(
                lambda: keeper.approve(pending, answer, VIA, era=era, trace_id=trace_id), keeper
            )

        try:
            decision = None  # a held call answers no question: it is refused first
            if hold is None:  # a round it continues: an answer, or a hold refusing the round
                found = await self.approvals.answered(
                    context, keeper, (name, args), answer_with, lambda fn: self._engine(fn, keeper)
                )
                hold, decision = (found, None) if isinstance(found, Hold) else (None, found)
            if decision is None:
                started = perf_counter()
                decision = await self._quick(
                    lambda: keeper.check(name, args, hold=hold, era=era, trace_id=trace_id),
                    keeper,
                    quick=not keeper.lists_first(name, hold),
                )
                checked = (decision, perf_counter() - started)
            if awaits_person(decision):  # asked outside the session's lock (see .approval)
                asked = await self.approvals.ask(context, keeper, decision, answer_with)
                if isinstance(asked, ToolResult):  # the client asks, then calls again
                    return Served("APPROVAL_ASKED", asked, keeper, checked)
                decision, hint = asked
        except MaitredError as exc:  # not decided, or not durable: the call must not run
            unavailable = gate_unavailable(exc, undone="The call was not executed")
            return _refused(unavailable, keeper, checked=checked)
        if decision.allow:
            return Allowed(decision, checked)
        limited = edge.limited
        scope = None  # counted as refused past a rate: the limit's code, not a prior refusal
        if limited is not None and decision.code == limited.code:
            scope = limited.scope or ""
        if keeper.finds and decision.code == TOOL_NOT_OFFERED:
            hint = f"call {FIND_TOOLS} with what you need to do first"
        return _refused(decided(decision, hint=hint), keeper, checked=checked, limited=scope)

    async def _forward(
        self,
        context: CallContext,
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
        upstream: str,
        name: str,
        args: dict[str, Any],
        mutates: bool,
    ) -> ToolResult:
        """An allowed call's result from ``upstream``, which lists its tool (in the client's
        era), over the session kept for it (:class:`~.upstreams.KeptSession`; an HTTP
        upstream's: a session of the request's own, in its client's era).

        Straight to that upstream's tool (:meth:`ListingProxy.tool`, its cached listing):
        FastMCP's own dispatch would look the tool up again across every provider, apply
        session transforms and visibility the gateway does not use, and run the inner
        middlewares, which pass a call on untouched. The upstream's errors reach the gate as
        they would through that dispatch. With the tasks extension on, FastMCP dispatches (its
        interceptor is on that path), and so does a tool no upstream lists any more.
        """
        proxy = self._proxy(upstream) if self.tasks is None else None
        tool = await proxy.tool(name) if proxy is not None else None
        if tool is None:
            return await call_next(context)
        result: ToolResult = await tool.run(args)
        if self.surface_guard is not None and mutates:  # only a write changes their lists
            return await self.surface_guard.after_call(context, result)
        return result

    def _proxy(self, upstream: str) -> ListingProxy | None:
        """The provider of ``upstream`` being served (``None``: none, or not the gateway's)."""
        proxy = self.upstreams.proxies.get(upstream) if self.upstreams is not None else None
        return proxy if isinstance(proxy, ListingProxy) else None

    async def _failed(
        self, keeper: Gatekeeper, upstream: str, name: str, allowed: Allowed, exc: Exception
    ) -> Served:
        """An allowed call its upstream failed: ``UPSTREAM_FAILED``, naming the allowing
        decision; the upstream listed again (does it answer at all?), and the next call over
        it connects afresh."""
        proxy = self._proxy(upstream)
        if proxy is not None:
            await proxy.close()
        if self.upstreams is not None:
            self.upstreams.suspect(upstream)
        refusal = upstream_failed(upstream, name, exc, allowed.decision.decision_id)
        return _refused(refusal, keeper, checked=allowed.checked, failed=upstream)

    async def _answer(
        self,
        context: CallContext,
        keeper: Gatekeeper,
        name: str,
        args: Mapping[str, Any],
        allowed: Allowed,
        result: ToolResult,
    ) -> Served:
        """After the upstream answered: a task handed over (:meth:`_task`), or the result
        with its decision id; a successful call recorded in the session, and
        ``list_changed`` sent when that changed what it sees."""
        decision, checked = allowed.decision, allowed.checked
        if isinstance(result, CreatedTask):  # the upstream made a task of the call (.tasks)
            upstream = keeper.upstream_of(name)
            return await self._task(keeper, decision, upstream, result, checked)
        if isinstance(result, InputRequiredToolResult):  # its state in a round of ours
            result = self.approvals.pass_on(context, keeper, decision, result)
        result.meta = {**(result.meta or {}), DECISION_ID_META: decision.decision_id}
        if result.is_error:
            return Served(decision.code, result, keeper, checked)
        output = result.structured_content  # an object, so `records: {creates: ...}` can read it
        if keeper.mutates(name) or not keeper.lock.acquire(blocking=False):
            changed = await self._engine(lambda: keeper.after_call(name, args, output), keeper)
        else:  # a read only updates the session in memory: no second hop to the worker thread
            try:
                changed = keeper.after_call(name, args, output)
            finally:
                keeper.lock.release()
        if changed and context.fastmcp_context is not None:
            await context.fastmcp_context.send_notification(mt.ToolListChangedNotification())
        return Served(decision.code, result, keeper, checked)

    async def _task(
        self,
        keeper: Gatekeeper,
        decision: Decision,
        upstream: str,
        task: CreatedTask,
        checked: tuple[Decision, float] | None,
    ) -> Served:
        """The task handle, recorded as the caller's before the caller sees it."""
        assert self.tasks is not None  # only the tasks extension, given this book, makes one
        handed = await hand_over(self.tasks, keeper, decision, upstream, task, self._engine)
        if isinstance(handed, Rejection):
            return _refused(handed, keeper, checked=checked)
        return Served("ALLOWED", cast(ToolResult, handed), keeper, checked)

    async def _find_tools(
        self, context: CallContext, edge: Edge, args: Mapping[str, Any]
    ) -> Served:
        """A ``find_tools`` call: refused past a rate or for its needs (a logged decision on
        the call, like every refusal), else answered by the conversation's discovery."""
        keeper, limited = edge.keeper, edge.limited
        if limited is not None:
            call = ToolCall(FIND_TOOLS, dict(args))
            return await self._refuse(context, keeper, call, limited.hold(), limited.scope or "")
        needs = read_needs(args)
        if isinstance(needs, Hold):  # nothing routed; the refusal logged like any
            return await self._refuse(context, keeper, ToolCall(FIND_TOOLS, dict(args)), needs)
        try:
            with self.tracing.span("maitred.find_tools") as finding:
                answer = await self._engine(lambda: keeper.find(needs), keeper)
                traces.note_found(finding, keeper, answer)
        except MaitredError as exc:
            unavailable = gate_unavailable(
                exc, what="the gateway could not route this need", undone="No tool was disclosed"
            )
            return _refused(unavailable, keeper)
        text = json.dumps(answer, ensure_ascii=False, sort_keys=True)
        content = [mt.TextContent(type="text", text=text)]
        found = ToolResult(content=content, structured_content=answer)
        return Served("FIND_TOOLS", found, keeper)
