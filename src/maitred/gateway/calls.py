"""The gate's ``tools/call`` path: a chain of small steps, traced once around the whole.

:meth:`CallPath.on_call_tool` opens the request's span (``maitred.call``), rewrites a
``call_tool`` call into the call it names before anything reads it (:meth:`CallPath._unwrapped`)
and counts the call under its code; inside it :meth:`CallPath._call` runs the steps, each of
which either answers the call (an :data:`Answer`: a refusal, or the result) or hands the next
one what it found: refuse early (no identity, arguments that are not I-JSON) -> admit (rate limits;
``find_tools`` answered here) -> hold (past a rate, or listed to the other era only) -> decide
(an approval answered, else the check, noted on the call's span) -> forward (straight to the
upstream's tool, ``maitred.upstream``) -> after (a task handed over, the decision id in the
result, the call recorded in the session, ``list_changed``). Every step runs on the request's
own task: none suspends but for the work it does (a state read, the log, the upstream).

:class:`CallPath` is the half of :class:`~maitred.gateway.server.GateMiddleware` that serves
calls; the other half (sessions, listings, the state watch) finds each request's gatekeeper.
The engine is synchronous: its calls run on worker threads (:meth:`CallPath._engine`), or on
the event loop for a check that cannot wait on anything (:meth:`CallPath._decide`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from time import perf_counter
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio
import mcp_types as mt  # the MCP wire types (`mcp.types` re-exports them)
from fastmcp.server.middleware import CallNext, MiddlewareContext
from fastmcp.tools import InputRequiredToolResult, ToolResult
from opentelemetry.trace import SpanKind

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
from maitred.gateway.upstreams import UpstreamTool, era_hold
from maitred.ratelimit import Limiter, Refusal
from maitred.tracing import Tracing

T = TypeVar("T")
#: a step of the call path answering the call: the code it is counted under, and its result
Answer = tuple[str, ToolResult]


def _refusal(refusal: Rejection) -> Answer:
    """The answer refusing a call: an ``isError`` result whose text is ``refusal`` as JSON, its
    decision id (if any) also in ``_meta`` (:data:`DECISION_ID_META`), counted under its code."""
    text = json.dumps(refusal.to_json(), ensure_ascii=False, sort_keys=True)
    meta = {DECISION_ID_META: refusal.decision_id} if refusal.decision_id else None
    content = [mt.TextContent(type="text", text=text)]
    return refusal.code, ToolResult(content=content, meta=meta, is_error=True)


def _with_decision_id(result: ToolResult, decision_id: str) -> ToolResult:
    """The upstream's ``result`` with the decision id added to its ``_meta`` (kept otherwise)."""
    result.meta = {**(result.meta or {}), DECISION_ID_META: decision_id}
    return result


def era_of(context: MiddlewareContext[Any]) -> str:
    """The protocol revision the request's client spoke (``""``: not known, a call made in
    the same process without a session)."""
    ctx = context.fastmcp_context
    request = ctx.request_context if ctx is not None else None
    return str(request.protocol_version or "") if request is not None else ""


async def _list_changed(context: MiddlewareContext[Any]) -> None:
    if context.fastmcp_context is not None:
        await context.fastmcp_context.send_notification(mt.ToolListChangedNotification())


class CallPath:
    """Puts each ``tools/call`` through the session's gatekeeper (see the module docstring).

    A base of :class:`~maitred.gateway.server.GateMiddleware`, which holds what it reads (the
    attributes below, set up there) and finds each request's gatekeeper.
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

    if TYPE_CHECKING:  # the gatekeepers are the sessions' (GateMiddleware)

        def _keeper(self, context: MiddlewareContext[Any]) -> Gatekeeper | None: ...

        def _known_keeper(self, context: MiddlewareContext[Any]) -> Gatekeeper | None: ...

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
    async def _decide(cls, fn: Callable[[], T], keeper: Gatekeeper, quick: bool) -> T:
        """Run one check of ``keeper``'s session: on the event loop when it is ``quick`` (no
        state read or listing afresh first: :meth:`Gatekeeper.lists_first`), touches only
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
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        with self.tracing.request("maitred.call", *traces.carriers(context)) as span:
            target = self._unwrapped(context)  # a call_tool call is the call it names
            if isinstance(target, Hold):
                code, result = await self._refuse_wrapper(context, target)
            else:
                context = target
                code, result = await self._call(context, call_next)
            if span.is_recording():
                traces.note_session(span, self.tracing, self._known_keeper(context))
                traces.note_call(span, context.message.name, code, result.meta, DECISION_ID_META)
        self.metrics.count_call(code)
        return result

    def _unwrapped(
        self, context: MiddlewareContext[mt.CallToolRequestParams]
    ) -> MiddlewareContext[mt.CallToolRequestParams] | Hold:
        """The request as the path decides it: a ``call_tool`` call rewritten into the call it
        names (its ``_meta``, request state and task kept), before anything else reads it, so
        that it is that call from here on; any other call as it came. The rule is the core's
        (:func:`~maitred.conversation.finding.unwrap`); a wrapper that names no call is the
        :class:`Hold` refusing it."""
        message = context.message
        found = unwrap(message.name, message.arguments or {}, self.engines.call_tool)
        if found is None:
            return context
        if isinstance(found, Hold):
            return found
        name, arguments = found
        return context.copy(
            message=message.model_copy(update={"name": name, "arguments": arguments})
        )

    async def _refuse_wrapper(
        self, context: MiddlewareContext[mt.CallToolRequestParams], hold: Hold
    ) -> Answer:
        """A ``call_tool`` call that names no call: refused with ``hold`` (past a rate, as
        such), logged on the ``call_tool`` call like ``find_tools``' bad needs."""
        name, args = context.message.name, dict(context.message.arguments or {})
        keeper = await self._refuse_early(context, name, args)
        if isinstance(keeper, tuple):
            return keeper
        limited = await self._admit(keeper, name)
        if limited is not None:
            self.metrics.count_limited(limited.scope)
            hold = limited.hold()
        return await self._refuse(context, keeper, ToolCall(name, args), hold)

    async def _call(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> Answer:
        """The call's result and the code it is counted under: the decision's own (``OK``
        once it reached the upstream, whatever the upstream answered).

        The call path, one step after another: each step either answers the call (an
        :data:`Answer`, returned as it is) or hands the next one what it found.

        1. :meth:`_refuse_early`: the session's gatekeeper (none: ``AUTH_REQUIRED``) and
           arguments that are I-JSON (else refused and logged, the arguments withheld,
           charged to the caller's rates like any call);
        2. :meth:`_admit`: the call charged to the caller's rate limits; a ``find_tools`` call
           is answered here (:meth:`_find_tools`);
        3. :meth:`_hold`: what refuses the call before the contracts are read (past a rate,
           or listed to the other era only), for the check to decide and log;
        4. :meth:`_decide_call`: an approval answered, else the check (noted on the span);
           a person asked when the decision awaits one; a refusal answered;
        5. :meth:`_forward_call`: the allowed call sent to its upstream (``maitred.upstream``;
           :meth:`_forward`), a failure answered ``UPSTREAM_FAILED``;
        6. :meth:`_after`: a task handed over, or the decision id put in the result, the call
           recorded in the session and ``list_changed`` sent when it changed the list.
        """
        name, args = context.message.name, dict(context.message.arguments or {})
        keeper = await self._refuse_early(context, name, args)
        if isinstance(keeper, tuple):
            return keeper
        limited = await self._admit(keeper, name)
        if name == FIND_TOOLS and keeper.finds:
            return await self._find_tools(context, keeper, args, limited)
        hold = await self._hold(keeper, name, limited)
        decision = await self._decide_call(context, keeper, name, args, hold, limited)
        if isinstance(decision, tuple):
            return decision
        upstream = keeper.upstream_of(name)
        result = await self._forward_call(context, call_next, name, upstream, decision)
        if isinstance(result, tuple):
            return result
        return await self._after(context, keeper, name, args, upstream, decision, result)

    async def _refuse_early(
        self, context: MiddlewareContext[Any], name: str, args: Mapping[str, Any]
    ) -> Gatekeeper | Answer:
        """The session's gatekeeper; or the answer to a call that reached the gate without
        an identity (not logged: there is no session to log it under), or whose name or
        arguments are not I-JSON (NaN, a lone surrogate...: logged, arguments withheld, and
        charged to the caller's rate limits like any call, since its refusal is a log write;
        past a rate it is refused as such)."""
        keeper = self._keeper(context)
        if keeper is None:
            return _refusal(auth_required())
        fault = argument_fault(name, args)
        if fault is None:
            return keeper
        call, hold = fault
        limited = await self._admit(keeper, call.name)
        if limited is not None:
            self.metrics.count_limited(limited.scope)
            hold = limited.hold()
        return await self._refuse(context, keeper, call, hold)

    async def _refuse(
        self, context: MiddlewareContext[Any], keeper: Gatekeeper, call: ToolCall, hold: Hold
    ) -> Answer:
        """The gateway's own refusal of ``call``, logged (:meth:`Gatekeeper.refuse`) and
        answered with its decision id; ``GATE_UNAVAILABLE`` when it could not be logged."""
        try:
            era = era_of(context)
            decision = await self._engine(lambda: keeper.refuse(call, hold, era=era), keeper)
        except MaitredError as exc:
            return _refusal(gate_unavailable(exc, undone="The call was not executed"))
        return _refusal(decided(decision))

    async def _admit(self, keeper: Gatekeeper, name: str) -> Refusal | None:
        """Charge the call to its caller's budgets (:mod:`.rates`): the rate it is past, if
        any."""
        admission = await admit(self.limiter, keeper, name, stdio=self.account is not None)
        if admission.store_error:
            self.metrics.rate_limit_store_errors.inc()
        return admission.refusal

    async def _find_tools(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        keeper: Gatekeeper,
        args: Mapping[str, Any],
        limited: Refusal | None,
    ) -> Answer:
        """A ``find_tools`` call: refused past a rate (a logged decision on the call, like
        every refusal), else answered (:meth:`_find`)."""
        if limited is not None:
            self.metrics.count_limited(limited.scope)
            return await self._refuse(context, keeper, ToolCall(FIND_TOOLS, args), limited.hold())
        return await self._find(context, keeper, args)

    async def _hold(self, keeper: Gatekeeper, name: str, limited: Refusal | None) -> Hold | None:
        """What refuses the call before its contracts are read: the rate it is past, or its
        tool listed to the other era only (:func:`~.upstreams.era_hold`)."""
        if limited is not None:
            return limited.hold()
        if self.upstreams is None:
            return None
        return await era_hold(self.upstreams.proxies.get(keeper.upstream_of(name)), name)

    async def _decide_call(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        keeper: Gatekeeper,
        name: str,
        args: Mapping[str, Any],
        hold: Hold | None,
        limited: Refusal | None,
    ) -> Decision | Answer:
        """The call's decision when it is allowed, else the answer refusing it: an approval
        the client answered, else the check; a decision that awaits a person asked
        (:mod:`.approval`); ``GATE_UNAVAILABLE`` when it could not be decided or logged."""
        hint = ""  # what the payload adds: the client cannot ask the user (.approval)

        async def answer_with(pending: Decision, answer: ApprovalAnswer) -> Decision:
            return await self._engine(
                lambda: keeper.approve(pending, answer, VIA, era=era_of(context)), keeper
            )

        try:
            decision = None  # a held call answers no question: it is refused first
            if hold is None:  # a round it continues: an answer, or a hold refusing the round
                found = await self.approvals.answered(
                    context, keeper, answer_with, lambda fn: self._engine(fn, keeper)
                )
                hold, decision = (found, None) if isinstance(found, Hold) else (None, found)
            if decision is None:
                started = perf_counter()
                decision = await self._decide(
                    lambda: keeper.check(name, args, hold=hold, era=era_of(context)),
                    keeper,
                    quick=not keeper.lists_first(name, hold),
                )
                if self.tracing.enabled:  # on the call's own span (see .traces)
                    traces.note_decision(decision, perf_counter() - started)
            if awaits_person(decision):  # asked outside the session's lock (see .approval)
                asked = await self.approvals.ask(context, keeper, decision, answer_with)
                if isinstance(asked, ToolResult):  # the client asks, then calls again
                    return "APPROVAL_ASKED", asked
                decision, hint = asked
        except MaitredError as exc:  # not decided, or not durable: the call must not run
            return _refusal(gate_unavailable(exc, undone="The call was not executed"))
        if decision.allow:
            return decision
        if limited is not None and decision.code == limited.code:  # not a prior refusal
            self.metrics.count_limited(limited.scope)
        if keeper.finds and decision.code == TOOL_NOT_OFFERED:
            hint = f"call {FIND_TOOLS} with what you need to do first"
        return _refusal(decided(decision, hint=hint))

    async def _forward_call(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
        name: str,
        upstream: str,
        decision: Decision,
    ) -> ToolResult | Answer:
        """The allowed call's result from ``upstream`` (:meth:`_forward`); its failure
        answered ``UPSTREAM_FAILED``, the upstream suspected and the gateway still up."""
        forwarding = self.tracing.span(  # current while forwarded: the proxy puts it in _meta
            "maitred.upstream",
            kind=SpanKind.CLIENT,
            attributes=traces.upstream_attributes(self.tracing, upstream, name),
        )
        try:
            with forwarding as calling:
                result = await self._forward(context, call_next, upstream)
                if isinstance(result, ToolResult):
                    traces.note_result(calling, result)
        except Exception as exc:  # the upstream failed; the gateway must answer and stay up
            if refuses_client(exc):  # the upstream's answer to this client: passed on as sent
                raise
            self.metrics.upstream_failures.labels(upstream).inc()
            if self.upstreams is not None:
                self.upstreams.suspect(upstream)  # listed again: does it answer at all?
            return _refusal(upstream_failed(upstream, name, exc, decision.decision_id))
        if self.upstreams is not None:
            self.upstreams.answered(upstream)
        return result

    async def _forward(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
        upstream: str,
    ) -> ToolResult:
        """An allowed call, sent to the upstream that lists its tool (in the client's era).

        Straight to that upstream's tool, as the tasks extension's interceptor sends a call
        that may become a task: FastMCP's own dispatch would look the tool up again across
        every provider (a task group per call), apply session transforms and visibility the
        gateway does not use, and run the inner middlewares, which pass a call on untouched
        -- about two fifths of the Python calls the gateway adds to a forwarded call
        (benchmarks/results/gateway.md). The upstream's errors reach the gate as they would
        through that dispatch. With the tasks extension on, FastMCP dispatches (its
        interceptor is on that path), and so does a tool no upstream lists any more.
        """
        proxies = self.upstreams.proxies if self.upstreams is not None else {}
        proxy = proxies.get(upstream) if self.tasks is None else None
        tool = await proxy.get_tool(context.message.name) if proxy is not None else None
        if not isinstance(tool, UpstreamTool):
            return await call_next(context)
        result = await tool._run(dict(context.message.arguments or {}))
        if self.surface_guard is not None:
            return await self.surface_guard.after_call(context, result)
        return result

    async def _after(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        keeper: Gatekeeper,
        name: str,
        args: Mapping[str, Any],
        upstream: str,
        decision: Decision,
        result: ToolResult,
    ) -> Answer:
        """After the upstream answered: a task handed over (:meth:`_task`), or the result
        with its decision id; a successful call recorded in the session, and
        ``list_changed`` sent when that changed what it sees."""
        if isinstance(result, CreatedTask):  # the upstream made a task of the call (.tasks)
            return await self._task(keeper, decision, upstream, result)
        if isinstance(result, InputRequiredToolResult):  # its state in a round of ours
            result = self.approvals.pass_on(context, keeper, decision, result)
        result = _with_decision_id(result, decision.decision_id)
        if result.is_error:
            return decision.code, result
        output = result.structured_content  # an object, so `records: {creates: ...}` can read it
        if keeper.mutates(name) or not keeper.lock.acquire(blocking=False):
            changed = await self._engine(lambda: keeper.after_call(name, args, output), keeper)
        else:  # a read only updates the session in memory: no second hop to the worker thread
            try:
                changed = keeper.after_call(name, args, output)
            finally:
                keeper.lock.release()
        if changed:
            await _list_changed(context)
        return decision.code, result

    async def _task(
        self, keeper: Gatekeeper, decision: Decision, upstream: str, task: CreatedTask
    ) -> tuple[str, ToolResult]:
        """The task handle, recorded as the caller's before the caller sees it."""
        assert self.tasks is not None  # only the tasks extension, given this book, makes one
        handed = await hand_over(self.tasks, keeper, decision, upstream, task, self._engine)
        if isinstance(handed, Rejection):
            return _refusal(handed)
        return "ALLOWED", cast(ToolResult, handed)

    async def _find(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        keeper: Gatekeeper,
        args: Mapping[str, Any],
    ) -> Answer:
        needs = read_needs(args)
        if isinstance(needs, Hold):  # nothing routed; the refusal logged like any
            return await self._refuse(context, keeper, ToolCall(FIND_TOOLS, args), needs)
        try:
            with self.tracing.span("maitred.find_tools") as finding:
                answer = await self._engine(lambda: keeper.find(needs), keeper)
                traces.note_found(finding, keeper, answer)
        except MaitredError as exc:
            return _refusal(
                gate_unavailable(
                    exc,
                    what="the gateway could not route this need",
                    undone="No tool was disclosed",
                )
            )
        text = json.dumps(answer, ensure_ascii=False, sort_keys=True)
        content = [mt.TextContent(type="text", text=text)]
        return "FIND_TOOLS", ToolResult(content=content, structured_content=answer)
