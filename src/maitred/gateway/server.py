"""The MCP side of the gateway: a FastMCP server over the upstreams, gated by its middleware.

:func:`open_gateway` connects every upstream (a stdio subprocess or a streamable-HTTP URL),
reads each one's ``tools/list``, builds the :class:`~maitred.gateway.keeper.Gates` over those
that answered (a broken sidecar or a tool name two upstreams share fails here, before any
client is served; one that did not answer joins when it does, :mod:`maitred.gateway.lifecycle`),
and returns a FastMCP server that serves one proxy provider per serving upstream, with
:class:`GateMiddleware` standing between every client and every upstream:

* ``tools/list``: the upstreams' lists, filtered to what the session's gatekeeper finds
  visible for its account now (a logged turn).
* ``tools/call``: the gatekeeper checks the call first (logged and flushed); a rejected call
  never reaches the upstream and the client gets an ``isError`` result whose text is
  ``decision.tool_result()`` as JSON (the one model-facing
  :class:`~maitred.actions.model.Rejection`: code, message for the model, offending fields,
  decision id); a call the gatekeeper could not decide or log is refused too
  (``GATE_UNAVAILABLE``, the same payload with no decision id). Every decided call's result,
  rejected or forwarded from the upstream, carries its decision-log id in ``_meta`` under
  ``maitred/decision_id``, so an operator can match what the model saw to the log row. An allowed
  call goes to the upstream that lists the tool; if that fails (the server crashed, the URL
  does not answer), the client gets an ``isError`` result naming that upstream, the other
  upstreams keep serving, and the next call connects afresh (a stdio server is relaunched).
  After an allowed mutating call succeeded, a changed visible set is announced with
  ``notifications/tools/list_changed``.
* state changes from outside (``watch: {interval_s: N}``): :meth:`GateMiddleware.watch` runs
  beside the server (:func:`watching`) and every ``N`` seconds asks the gates which listed
  sessions would now see another list (:meth:`Gates.recheck
  <maitred.gateway.keeper.Gates.recheck>`); each such session is re-listed (a logged turn) and
  sent ``list_changed`` outside any request (:mod:`maitred.gateway.channels`): on its standing
  channel (a handshake-era connection: the stdio pipe, an HTTP session's GET stream), or on
  the ``subscriptions/listen`` streams it opened (a 2026-07-28 connection, which has no other
  way to be told; :meth:`GateMiddleware.listen` serves them, one subscription bus per
  session). A session with neither (``fastmcp.Client``'s default: 2026-07-28, and it never
  listens) is not re-checked: its next ``tools/list`` reads state afresh like every listing.
  A pass that fails (the log cannot be written) is reported on stderr and the watch goes on; a
  state store that is down is no failure of the watch: the tools that read it are hidden (fail
  closed), which is announced like any change, and so is their return.
* pinned definitions (``pins:``, :mod:`maitred.gateway.pins`): every time the gateway lists an
  upstream's tools (at start, on each ``tools/list``, when the proxy's cached list has
  expired) the proxy (:class:`ListingProxy`) hands the fresh listing to
  :meth:`GateMiddleware.observe`, which compares it with the pins: a tool that no longer
  matches is held back from every session at once (hidden, calls refused
  ``TOOL_DEFINITION_CHANGED``), named on stderr and counted in ``/metrics``.
* ``find_tools`` (``disclosure: find_tools``): answered by the gateway itself, never by an
  upstream (see :meth:`Gatekeeper.find <maitred.gateway.keeper.Gatekeeper.find>`); its
  arguments (``need`` and/or ``needs``) are read, and refused, by :mod:`maitred.gateway.finding`.
* resources, resource templates and prompts: listed per session and read or got only as the
  sidecars' ``resources`` / ``prompts`` contracts allow, by :class:`SurfaceGuard
  <maitred.gateway.surfaces.SurfaceGuard>`, the middleware after this one (the state watch
  and a mutating call announce their changes too).
* rate limits (``rate_limits:``, :mod:`maitred.gateway.rates`): a call is charged to its
  caller's budgets before anything else; one past a rate is decided ``RATE_LIMITED`` (a logged
  decision with ``retry_after_s``) and never reaches the upstream.

**Sessions and accounts.** Over stdio (and in memory) the gateway has one client, so it keeps
one gatekeeper, for the launch account. Over HTTP every request must carry a bearer token (a
static one, or a JWT access token with ``auth:``; :class:`~maitred.gateway.auth.GatewayAuth`
answers 401 in RFC 6750's form, saying why, before any MCP handling when it is missing or
unknown), and the gatekeeper is chosen by the authenticated identity: one per (tenant,
account, granted scopes, MCP session id) on a handshake-era connection, one per (tenant,
account, granted scopes) on a 2026-07-28 connection, which has no session (every request is
its own connection). The
middleware checks again itself: a request over an HTTP gateway that reaches it without a token
gets no tools and no call (``AUTH_REQUIRED``), so the gate never rests on the transport alone.
At most ``server.max_sessions`` gatekeepers are kept; the least recently used is dropped.

**Traces** (``tracing:`` in the config, off by default): a span per ``tools/list`` and
``tools/call`` continuing the client's W3C trace context, with the listing turn, the check,
the upstream call and ``find_tools`` as its children (:mod:`maitred.gateway.traces`).

Upstreams never see the client's headers (the proxies do not forward them), so a tenant's
token is never passed on to an upstream; an HTTP upstream gets the ``headers`` its config
names.

The engine is synchronous (SQLite, file and SQL state); its calls run on worker threads, so the
event loop never blocks on the log or the state store. Sessions run side by side on the one
shared engine (ARCHITECTURE.md, "Concurrency"); each session's requests take that session's own
lock (:attr:`Gatekeeper.lock`), since its listing and found set are its own.
"""

from __future__ import annotations

import json
import socket
import sys
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, TypeVar, cast

import anyio
import mcp_types as mt  # the MCP wire types (`mcp.types` re-exports them)
from fastmcp import FastMCP
from fastmcp.server.dependencies import get_access_token
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.server.providers.proxy import ProxyProvider
from fastmcp.tools import Tool, ToolResult
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from opentelemetry.trace import SpanKind
from starlette.middleware import Middleware as AsgiMiddleware  # FastMCP's HTTP app is Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from maitred._heap import freeze_start_heap
from maitred.actions.model import ApprovalAnswer, Decision, Rejection
from maitred.errors import ConfigError, MaitredError
from maitred.gateway import hosts, traces
from maitred.gateway.approval import VIA, Approvals, awaits_person
from maitred.gateway.auth import GatewayAuth, Identity
from maitred.gateway.channels import Channels, StreamingServer, sealing
from maitred.gateway.config import GatewayConfig, HttpServer, Upstream
from maitred.gateway.finding import FIND_TOOLS_SCHEMA, read_needs
from maitred.gateway.hosts import HostGuard
from maitred.gateway.jwt import JwtVerifier
from maitred.gateway.keeper import FIND_TOOLS, FIND_TOOLS_DESCRIPTION, Gatekeeper, Gates
from maitred.gateway.lifecycle import Listing, Upstreams
from maitred.gateway.limits import BodyLimit, argument_fault
from maitred.gateway.listings import CACHE_SCOPE, in_catalog_order, listing_ttl_s
from maitred.gateway.metrics import CONTENT_TYPE, GatewayMetrics
from maitred.gateway.passthrough import EraMethods, Passthrough, refuses_client
from maitred.gateway.rates import admit, open_limiter
from maitred.gateway.skillset import GatedSkills, load_skills
from maitred.gateway.surfaces import (
    DECISION_ID_META,  # the key of a result's _meta that carries the decision's log id
    SurfaceGate,
    SurfaceGuard,
    upstream_surfaces,
)
from maitred.gateway.tasks import (
    CreatedTask,
    TaskBook,
    TasksExtension,
    Who,
    hand_over,
    offers_tasks,
)
from maitred.gateway.upstreams import ListingProxy, UpstreamTool, era_hold, proxy_for
from maitred.ratelimit import Limiter
from maitred.tracing import OFF, Tracing

T = TypeVar("T")
#: who a request is from: gatekeeper key, tenant, account, granted scopes, and whether it is
#: recorded as its principal (a sessionless 2026-07-28 connection) rather than an MCP session
Identified = tuple[tuple[str, ...], str, str, frozenset[str] | None, bool]


def _text_result(payload: Mapping[str, Any], decision_id: str = "") -> ToolResult:
    """An ``isError`` result whose text is ``payload`` (a :class:`Rejection`'s JSON); with a
    ``decision_id``, also in ``_meta`` (:data:`DECISION_ID_META`)."""
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True)
    meta = {DECISION_ID_META: decision_id} if decision_id else None
    return ToolResult(content=[mt.TextContent(type="text", text=text)], meta=meta, is_error=True)


def _with_decision_id(result: ToolResult, decision_id: str) -> ToolResult:
    """The upstream's ``result`` with the decision id added to its ``_meta`` (kept otherwise)."""
    result.meta = {**(result.meta or {}), DECISION_ID_META: decision_id}
    return result


class GateMiddleware(Middleware):
    """Filters ``tools/list`` and gates ``tools/call`` through each session's gatekeeper.

    Args:
        gates: the gateway's engines.
        account: the launch account (stdio): every request is this one session. ``None`` for
            an HTTP gateway: the account comes from the authenticated token only.
        max_sessions: gatekeepers kept (HTTP); the least recently used is dropped beyond it.
        tracing: the gateway's traces (:mod:`maitred.gateway.traces`); off by default.
        surfaces: the resources' and prompts' contracts; their middleware
            (:attr:`surface_guard`) is to be added to the server after this one.
        limiter: the gateway's rate limits (:mod:`maitred.gateway.rates`); ``None``: none.
        upstreams: the upstreams' lives (:mod:`maitred.gateway.lifecycle`): a ``tools/list``
            tries a down one again, a failed call has its upstream listed again.
        tasks: who created which task (:mod:`maitred.gateway.tasks`); ``None``: no upstream
            can make one.
    """

    def __init__(
        self,
        gates: Gates,
        *,
        account: str | None,
        max_sessions: int = 1000,
        tracing: Tracing = OFF,
        surfaces: SurfaceGate | None = None,
        limiter: Limiter | None = None,
        upstreams: Upstreams | None = None,
        tasks: TaskBook | None = None,
    ) -> None:
        self.gates = gates
        self.tasks = tasks
        #: the upstreams' states, retries and late joins (:mod:`.lifecycle`)
        self.upstreams = upstreams
        self.account = account
        self.max_sessions = max_sessions
        self.keepers: OrderedDict[tuple[str, ...], Gatekeeper] = OrderedDict()
        #: how to reach each session outside a request (the state watch's way out)
        self.channels = Channels()
        #: what ``GET /metrics`` shows (over HTTP)
        self.metrics = GatewayMetrics(lambda: len(self.keepers))
        #: questions put to people about calls that need approval (:mod:`.approval`)
        self.approvals = Approvals(max_sessions)
        self.tracing = tracing
        self.surface_guard = SurfaceGuard(self, surfaces) if surfaces is not None else None
        self.limiter = limiter
        if limiter is not None:
            self.metrics.limits_on(limiter.options.scopes)

    def adopt(self, gates: Gates, surfaces: SurfaceGate) -> list[Gatekeeper]:
        """Decide with ``gates`` (and ``surfaces``) from now on: the catalog grew
        (:mod:`.lifecycle`). Returns the sessions kept now, for the caller to move onto them
        (:meth:`Gatekeeper.rebase`); a session opened from here on is on ``gates`` already."""
        self.gates = gates
        if self.surface_guard is not None:
            self.surface_guard.adopt(surfaces)
        return list(self.keepers.values())

    def watch_pins(self, proxies: Sequence[ListingProxy]) -> None:
        """Count what the start listing held back, and have every later listing of the
        ``proxies`` compared with the pins (:meth:`observe`); nothing without a pin file."""
        pins = self.gates.pins
        if pins is None:
            return
        self.metrics.calls.labels("TOOL_DEFINITION_CHANGED")  # present at zero
        for drift in pins.drifts():
            if not drift.unpinned:
                self.metrics.definition_changes.labels(drift.upstream, drift.tool).inc()
        for proxy in proxies:
            proxy.listeners.append(self.observe)

    def observe(self, upstream: str, tools: Sequence[Tool]) -> None:
        """Compare a fresh listing of ``upstream`` with the pins (:class:`ListingProxy` calls
        it): what no longer matches is held back from every session from now on."""
        pins = self.gates.pins
        if pins is None:
            return
        for drift in pins.observe(upstream, [tool_json(t) for t in tools]):
            if not drift.unpinned:
                self.metrics.definition_changes.labels(upstream, drift.tool).inc()

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

    def _identity(self, session_id: str) -> Identified | None:
        """(gatekeeper key, tenant, account, granted scopes, principal) of the request being
        served, from the launch (no scopes said) or the authenticated :class:`~.auth.Identity`
        (None: not authenticated). A token that grants other scopes is another gatekeeper, as
        another account would be: what a session was shown depends on both. ``principal``:
        what it is offered and disclosed is recorded for the principal (a sessionless
        2026-07-28 connection, ``session_id`` empty), else for this MCP session
        (:mod:`.listings`)."""
        if self.account is not None:
            granted = None
            key: tuple[str, ...] = ("launch",)
            tenant, account = "", self.account
        else:
            token = get_access_token()
            if not isinstance(token, Identity) or not token.tenant or not token.account:
                return None
            granted = frozenset(token.scopes)
            tenant, account = token.tenant, token.account
            key = (tenant, account, " ".join(sorted(granted)), session_id)
        return key, tenant, account, granted, not session_id

    def _keeper_for(
        self,
        key: tuple[str, ...],
        tenant: str,
        account: str,
        granted: frozenset[str] | None = None,
        principal: bool = False,
    ) -> Gatekeeper:
        keeper = self.keepers.get(key)
        if keeper is None:
            keeper = self.gates.keeper(account, tenant=tenant, granted=granted, principal=principal)
            self.keepers[key] = keeper
            while len(self.keepers) > self.max_sessions:
                dropped, _ = self.keepers.popitem(last=False)
                self.channels.forget(dropped)
        self.keepers.move_to_end(key)
        return keeper

    def _keeper(self, context: MiddlewareContext[Any]) -> Gatekeeper | None:
        """The session's gatekeeper, from the launch or the token (None: not authenticated)."""
        found = self._identity(_session_id(context))
        if found is None:
            return None
        keeper = self._keeper_for(*found)
        self.channels.remember(found[0], context)
        return keeper

    keeper_of = _keeper  # for the surfaces' middleware (:class:`SurfaceGuard`)

    def keeper_now(self) -> Gatekeeper | None:
        """The gatekeeper of the 2026-07-28 request being served outside the middleware (an
        extension's own method: ``skills/*``, ``tasks/*``); None: not authenticated."""
        found = self._identity("")
        return self._keeper_for(*found) if found is not None else None

    def reachable(self) -> list[tuple[tuple[str, ...], Gatekeeper]]:
        """The sessions a notification outside any request can reach (the watch's)."""
        return [(k, g) for k, g in self.keepers.items() if self.channels.reachable(k)]

    async def listen(
        self, ctx: ServerRequestContext[Any, Any], params: mt.SubscriptionsListenRequestParams
    ) -> mt.SubscriptionsListenResult:
        """Serve ``subscriptions/listen`` (2026-07-28 connections) for the caller's session: the
        state watch's ``list_changed`` for it arrives on this stream."""
        found = self._identity("")  # a listen stream is 2026-07-28: no session id
        if found is None:
            raise MCPError(mt.INVALID_REQUEST, str(_AUTH_REQUIRED["message"]))
        self._keeper_for(*found)
        return await self.channels.listen(found[0], ctx, params)

    async def recheck(self) -> int:
        """One pass of the state watch; returns how many sessions were sent ``list_changed``.

        Only sessions the gateway can reach outside a request are re-checked (see
        :mod:`maitred.gateway.channels`); one it cannot reach would not be told, and its next
        ``tools/list`` is a fresh listing anyway.
        """
        by_account: dict[str, list[tuple[tuple[str, ...], Gatekeeper]]] = {}
        for key, keeper in self.reachable():
            by_account.setdefault(keeper.account, []).append((key, keeper))
        told = 0
        for group in by_account.values():  # one hop per account
            changed = await self._engine(partial(self.gates.recheck, [k for _, k in group]))
            for key, keeper in group:
                if any(keeper is c for c in changed) and await self.channels.notify(key):
                    told += 1
        return told

    async def watch(self, interval_s: float) -> None:
        """Run :meth:`recheck` every ``interval_s`` seconds until cancelled; a failed pass is
        reported on stderr and the next one runs as usual (the watch never stops the
        gateway)."""
        while True:
            await anyio.sleep(interval_s)
            try:
                await self.recheck()
                if self.surface_guard is not None:
                    await self.surface_guard.recheck()
            except Exception as exc:
                print(
                    f"maitred mcp: state watch pass failed ({type(exc).__name__}: {exc}); "
                    f"trying again in {interval_s:g}s",
                    file=sys.stderr,
                    flush=True,
                )

    async def on_list_tools(
        self,
        context: MiddlewareContext[mt.ListToolsRequest],
        call_next: CallNext[mt.ListToolsRequest, Sequence[Tool]],
    ) -> Sequence[Tool]:
        keeper = self._keeper(context)
        if keeper is None:
            return []
        if self.upstreams is not None:  # a down upstream that answers now is in this listing
            await self.upstreams.on_demand()
        with self.tracing.request("maitred.list", *traces.carriers(context)) as span:
            traces.note_session(span, self.tracing, keeper)
            tools = await call_next(context)
            with self.tracing.span("maitred.turn") as turn:
                found = await self._engine(partial(traces.listing, keeper), keeper)
                traces.note_listing(turn, len(tools), found)
        self.metrics.listings.inc()
        return in_catalog_order(tools, found[0], lambda t: t.name)  # whatever joined first

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        with self.tracing.request("maitred.call", *traces.carriers(context)) as span:
            code, result = await self._call(context, call_next)
            if span.is_recording():
                traces.note_session(span, self.tracing, self._known_keeper(context))
                traces.note_call(span, context.message.name, code, result.meta, DECISION_ID_META)
        self.metrics.count_call(code)
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

    def _known_keeper(self, context: MiddlewareContext[Any]) -> Gatekeeper | None:
        """The request's gatekeeper if it has one, found without touching the LRU order."""
        found = self._identity(_session_id(context))
        return self.keepers.get(found[0]) if found is not None else None

    async def _call(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> tuple[str, ToolResult]:
        """The call's result and the code it is counted under: the decision's own (``OK``
        once it reached the upstream, whatever the upstream answered)."""
        name, args = context.message.name, dict(context.message.arguments or {})
        keeper = self._keeper(context)
        if keeper is None:
            return "AUTH_REQUIRED", _text_result(_AUTH_REQUIRED)
        refused = argument_fault(name, args)  # NaN, a lone surrogate...: never decided
        if refused is not None:
            return str(refused["code"]), _text_result(refused)
        admission = await admit(self.limiter, keeper, name, stdio=self.account is not None)
        limited = admission.refusal
        if admission.store_error:
            self.metrics.rate_limit_store_errors.inc()
        if name == FIND_TOOLS and keeper.finds:
            if limited is not None:  # no action decision: find_tools answers are turns
                self.metrics.count_limited(limited.scope)
                return limited.code, _text_result(limited.rejection().to_json())
            return "FIND_TOOLS", await self._find(context, keeper, args)
        hold = limited.hold() if limited is not None else None
        if hold is None and self.upstreams is not None:  # listed to the other era only?
            hold = await era_hold(self.upstreams.proxies.get(keeper.upstream_of(name)), name)
        extra: Mapping[str, Any] = {}

        async def answer_with(pending: Decision, answer: ApprovalAnswer) -> Decision:
            return await self._engine(lambda: keeper.approve(pending, answer, VIA), keeper)

        try:
            decision = None  # a limited call answers no question: it is refused first
            if hold is None:
                decision = await self.approvals.answered(context, keeper, answer_with)
            if decision is None:
                with self.tracing.span("maitred.check") as checking:
                    decision = await self._decide(
                        lambda: keeper.check(name, args, hold=hold),
                        keeper,
                        quick=not keeper.lists_first(name, hold),
                    )
                    traces.note_decision(checking, decision)
            if awaits_person(decision):  # asked outside the session's lock (see .approval)
                asked = await self.approvals.ask(context, keeper, decision, answer_with)
                if isinstance(asked, ToolResult):  # the client asks, then calls again
                    return "APPROVAL_ASKED", asked
                decision, extra = asked
        except MaitredError as exc:  # not decided, or not durable: the call must not run
            refusal = Rejection(
                "GATE_UNAVAILABLE",
                f"the gateway could not decide or record this call ({type(exc).__name__}: "
                f"{exc}); it was not executed. Try again later",
                error="gate_unavailable",
            )
            return refusal.code, _text_result(refusal.to_json())
        if not decision.allow:
            if limited is not None and decision.code == limited.code:  # not a prior refusal
                self.metrics.count_limited(limited.scope)
            payload = {**decision.tool_result(), **extra}
            if keeper.finds and decision.code == "TOOL_NOT_OFFERED":
                payload["hint"] = f"call {FIND_TOOLS} with what you need to do first"
            return decision.code, _text_result(payload, decision.decision_id)
        upstream = keeper.upstream_of(name)
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
            failed = Rejection(
                "UPSTREAM_FAILED",
                f"the upstream MCP server {upstream!r} failed on {name}: "
                f"{type(exc).__name__}: {exc}. The call may not have run; try again later "
                "(the other tools still work)",
                decision_id=decision.decision_id,
                error="upstream_failed",
                executed=None,
            )
            payload = {**failed.to_json(), "upstream": upstream}
            return failed.code, _text_result(payload, decision.decision_id)
        if self.upstreams is not None:
            self.upstreams.answered(upstream)
        if isinstance(result, CreatedTask):  # the upstream made a task of the call (.tasks)
            return await self._task(keeper, decision, upstream, result)
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
            return handed.code, _text_result(handed.to_json(), decision.decision_id)
        return "ALLOWED", cast(ToolResult, handed)

    async def _find(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        keeper: Gatekeeper,
        args: Mapping[str, Any],
    ) -> ToolResult:
        needs = read_needs(args)
        if isinstance(needs, Rejection):  # nothing routed, nothing logged
            return _text_result(needs.to_json())
        try:
            with self.tracing.span("maitred.find_tools") as finding:
                answer = await self._engine(lambda: keeper.find(needs), keeper)
                traces.note_found(finding, keeper, answer)
        except MaitredError as exc:
            return _text_result(
                {
                    "code": "GATE_UNAVAILABLE",
                    "message": f"the gateway could not route this need ({type(exc).__name__}: "
                    f"{exc}); no tool was disclosed. Try again later",
                }
            )
        text = json.dumps(answer, ensure_ascii=False, sort_keys=True)
        return ToolResult(
            content=[mt.TextContent(type="text", text=text)], structured_content=answer
        )


_AUTH_REQUIRED = Rejection(
    "AUTH_REQUIRED",
    "this gateway serves authenticated sessions only; connect with the bearer token you were "
    "given. The call was not executed",
    error="auth_required",
).to_json()


def _session_id(context: MiddlewareContext[Any]) -> str:
    """The MCP session id on a handshake-era connection; ``""`` on a sessionless one."""
    ctx = context.fastmcp_context
    request = ctx.request_context if ctx is not None else None
    if ctx is None or request is None or request.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return ""
    return ctx.session_id


def gate_of(server: FastMCP[Any]) -> GateMiddleware:
    """The :class:`GateMiddleware` of a server :func:`open_gateway` built."""
    return next(m for m in server.middleware if isinstance(m, GateMiddleware))


async def close_gateway(server: FastMCP[Any], gates: Gates) -> None:
    """Close what :func:`open_gateway` opened: the upstream sessions kept for resource
    subscriptions, the gates, and the traces (exported)."""
    for middleware in server.middleware:
        if isinstance(middleware, Passthrough):
            await middleware.close()
    gates.close()
    gate_of(server).tracing.close()


@asynccontextmanager
async def watching(server: FastMCP[Any], interval_s: float) -> AsyncIterator[None]:
    """The state watch of ``server``'s gate running for the block (nothing when ``interval_s``
    is 0); enter and leave it in the task that serves."""
    async with anyio.create_task_group() as tasks:
        gate = gate_of(server)
        if interval_s > 0:
            tasks.start_soon(gate.watch, interval_s)
        if gate.upstreams is not None:  # upstreams that are down are tried again
            tasks.start_soon(gate.upstreams.run)
        try:
            yield
        finally:
            tasks.cancel_scope.cancel()


async def _list_changed(context: MiddlewareContext[Any]) -> None:
    if context.fastmcp_context is not None:
        await context.fastmcp_context.send_notification(mt.ToolListChangedNotification())


def tool_json(tool: Tool) -> dict[str, Any]:
    """A listed tool as its MCP JSON object (what the catalog and the pins read)."""
    return tool.to_mcp_tool().model_dump(by_alias=True, exclude_none=True, mode="json")


async def list_upstreams(config: GatewayConfig) -> dict[str, list[dict[str, Any]]]:
    """Every upstream's ``tools/list`` now, as the gateway reads it at start (for
    ``maitred mcp pin``; see :func:`upstream_tools` for the errors)."""
    return {up.name: await upstream_tools(proxy_for(up), up) for up in config.upstreams}


async def upstream_tools(proxy: ProxyProvider, upstream: Upstream) -> list[dict[str, Any]]:
    """The upstream's ``tools/list`` through ``proxy`` (before any gate), as MCP JSON objects.

    Asking through the proxy starts a stdio upstream's process, which the proxy keeps using,
    so the gateway launches it once.

    Raises:
        ConfigError: the upstream could not be started or reached, or did not answer.
    """
    try:
        tools = await proxy.list_tools()
    except Exception as exc:
        how = f"reach {upstream.url}" if upstream.url else f"start `{upstream.command}`"
        raise ConfigError(
            f"upstream {upstream.name!r}: could not {how} and list its tools "
            f"({type(exc).__name__}: {exc}); check its "
            f"{'url' if upstream.url else 'command and args'} in the config"
        ) from None
    return [tool_json(t) for t in tools]


async def _listing(proxy: ProxyProvider, upstream: Upstream) -> Listing:
    """Everything ``upstream`` lists, through ``proxy`` (see :func:`upstream_tools`)."""
    tools = await upstream_tools(proxy, upstream)
    return Listing(tools, await upstream_surfaces(proxy, upstream))


async def open_gateway(
    config: GatewayConfig, *, http: bool = False, tracing: Tracing | None = None
) -> tuple[FastMCP[Any], Gates]:
    """The gateway server for ``config`` and the gates it starts with (close them when done:
    they own the decision log; those serving now are ``gate_of(server).gates``).

    An upstream that does not answer is left out and tried again (:mod:`.lifecycle`);
    :func:`watching` runs those retries beside the server.

    Args:
        config: the checked config.
        http: serve authenticated HTTP sessions (the account of each comes from its token);
            otherwise one session for the launch account (stdio, in memory).
        tracing: the gateway's traces; by default those ``config.tracing`` asks for, which
            :func:`gate_of` ``(server).tracing.close()`` exports at the end (the serve
            functions do).

    Raises:
        ConfigError: a ``required`` upstream cannot be reached, the sidecars or tool names of
            those that answered conflict, or the config lacks what the transport needs
            (tokens for HTTP, account for stdio).
    """
    if http and not config.tokens and config.auth is None:
        raise ConfigError(
            f"{config.source}: serving over HTTP needs 'tokens' (a list of {{token_sha256, "
            "tenant, account}}) or 'auth' (JWT access tokens): the account of an HTTP session "
            "comes from its token"
        )
    if not http and not config.account:
        raise ConfigError(
            f"{config.source}: field 'account' is required over stdio (or pass --account): "
            "whose state the gates read"
        )
    verifier = JwtVerifier.open(config.auth, config.source) if http and config.auth else None
    passthrough = Passthrough()
    proxies = {up.name: passthrough.proxy_for(up) for up in config.upstreams}
    upstreams = Upstreams(config, proxies, _listing)
    await upstreams.start()
    tools, listed = upstreams.tools, upstreams.listed
    limiter = open_limiter(config, tools)
    gates = await anyio.to_thread.run_sync(lambda: Gates.open(config, tools, listed))
    try:
        skills = load_skills(config)
        surfaces = SurfaceGate.open(config, gates, listed, skills=skills.surfaces if skills else ())
    except BaseException:
        gates.close()
        raise
    limit = (config.server or HttpServer()).max_sessions
    tasks = TaskBook(gates.engine.log, gates.engine.now) if offers_tasks(config.upstreams) else None
    gate = GateMiddleware(
        gates,
        account=None if http else config.account,
        max_sessions=limit,
        tracing=Tracing.start(config.tracing) if tracing is None else tracing,
        surfaces=surfaces,
        limiter=limiter,
        upstreams=upstreams,
        tasks=tasks,
    )
    passthrough.serve_listen(gate.listen)
    where = config.server or HttpServer()
    auth = (
        GatewayAuth(
            config.tokens,
            verifier,
            path=where.path,
            scopes_supported=sorted({s for t in gates.engine.catalog for s in t.contract.scopes}),
            outer=[  # DNS rebinding is answered before anything about the token
                AsgiMiddleware(
                    HostGuard,
                    rules=hosts.rules(where.host, where.allowed_hosts, where.allowed_origins),
                )
            ],
        )
        if http
        else None
    )
    ttl = listing_ttl_s(config.watch.interval_s)  # 0: the SDK's own 0 ms, private
    server: FastMCP[Any] = StreamingServer(  # resumable HTTP streams, like an upstream's
        name="maitred-gateway",
        auth=auth,
        dereference_schemas=False,  # schemas as the upstreams sent them ($defs, $ref)
        cache_ttl=ttl or None,
        cache_scope=CACHE_SCOPE if ttl else None,
        request_state_security=sealing(where, config.source),  # shared by replicas, or None
    )
    gate.watch_pins(list(proxies.values()))
    for proxy in proxies.values():
        proxy.listeners.append(upstreams.observed)  # a tool it adds joins the catalog

    def serving(name: str) -> None:  # an upstream's proxy is served from now on
        passthrough.serve(proxies[name])
        if passthrough.completions:  # (again, when another one joins: it replaces the one)
            server.add_completion_handler(passthrough.complete)

    upstreams.attach(server, gate, auth, serving)  # those that answered, in the config's order
    if gates.finder is not None:

        def find_tools(need: str = "", needs: Sequence[str] = ()) -> dict[str, Any]:
            # answered by GateMiddleware, which knows the session; never reached
            raise RuntimeError("find_tools is answered by the gateway's middleware")

        found = Tool.from_function(find_tools, name=FIND_TOOLS, description=FIND_TOOLS_DESCRIPTION)
        server.add_tool(found.model_copy(update={"parameters": FIND_TOOLS_SCHEMA}))
    server.add_middleware(EraMethods())  # outermost: a method the request's era lacks is none
    server.add_middleware(gate)
    if gate.surface_guard is not None:
        server.add_middleware(gate.surface_guard)  # inner: sees only calls the gate let through
    server.add_middleware(passthrough)
    if tasks is not None:
        who = Who(gate.keeper_now, lambda tool: gate.gates.owners.get(tool))
        server.add_extension(TasksExtension(tasks, passthrough.proxies, who, gate._engine))
    if skills is not None:  # the gateway's own skills, gated like its tools (.skillset)
        server.add_provider(skills.provider)
    if skills is not None or surfaces.skill_roots:  # and the upstreams' its sidecars name
        server.add_extension(GatedSkills(skills, gate, passthrough.proxies))
    if http:
        _add_routes(server, gate)
    return server, gates


def _add_routes(server: FastMCP[Any], gate: GateMiddleware) -> None:
    """The HTTP gateway's operator routes, beside the MCP endpoint and without its token:
    ``GET /metrics`` (Prometheus text, :mod:`maitred.gateway.metrics`), ``GET /healthz``
    (the process serves) and ``GET /readyz`` (200 when every upstream is serving, else 503;
    each upstream's state, :mod:`maitred.gateway.lifecycle`). All are for the operator's
    network, like the service's."""

    @server.custom_route("/metrics", methods=["GET"], include_in_schema=False)
    async def metrics(request: Request) -> Response:
        return Response(gate.metrics.render(), media_type=CONTENT_TYPE)

    @server.custom_route("/healthz", methods=["GET"], include_in_schema=False)
    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    @server.custom_route("/readyz", methods=["GET"], include_in_schema=False)
    async def readyz(request: Request) -> Response:
        ready, body = gate.upstreams.readiness() if gate.upstreams else (True, {})
        return JSONResponse(body, status_code=200 if ready else 503)


async def serve_stdio(config: GatewayConfig) -> None:
    """Serve the gateway over stdio until the client disconnects."""
    server, gates = await open_gateway(config)
    freeze_start_heap()  # what start-up built lives as long as the process (maitred._heap)
    traces.without_idle_library_spans()  # FastMCP's no-op spans: not built at all
    try:
        async with watching(server, config.watch.interval_s):
            await server.run_async(transport="stdio", show_banner=False)
    finally:
        await close_gateway(server, gates)


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``(host, port)`` and listening (``port`` 0: a free one).

    It is made with ``IPPROTO_TCP`` named rather than the default protocol 0: asyncio (and
    uvloop) turn on ``TCP_NODELAY`` for the connections a server accepts only when the
    listening socket says it is TCP, and uvicorn serves the sockets it is given as they are.
    Without it Nagle's algorithm held back every response whose headers and body are written
    apart until the client's delayed ACK came: about 40 ms per request on loopback.

    Raises:
        OSError: the address cannot be bound.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def _closer(server: FastMCP[Any], gates: Gates) -> Callable[[], Awaitable[None]]:
    """:func:`close_gateway` (the upstream sessions, the decision log, the traces exported),
    once, whichever of its callers comes first (both run on the server's event loop)."""
    done: list[bool] = []

    async def close() -> None:
        if not done:
            done.append(True)
            await close_gateway(server, gates)

    return close


class CloseAtShutdown:
    """ASGI middleware: ``close`` runs when the server's lifespan shuts down, before the
    shutdown is reported to the server.

    uvicorn, stopped by SIGTERM, shuts down gracefully and then raises the signal again, which
    ends the process before any ``finally`` of the code that started the server: this is where
    the log is closed and the spans still buffered are exported, in time.
    """

    def __init__(self, app: Any, close: Callable[[], Awaitable[None]]) -> None:
        self.app = app
        self.close = close

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def sending(message: Any) -> None:
            if message["type"] in ("lifespan.shutdown.complete", "lifespan.shutdown.failed"):
                await self.close()
            await send(message)

        await self.app(scope, receive, sending)


async def serve_http(config: GatewayConfig, *, port: int | None = None) -> None:
    """Serve the gateway over streamable HTTP until stopped (``port`` overrides the config's;
    0 picks a free one). The address is printed on stderr once the socket is bound. Stopped by
    SIGTERM or SIGINT, it shuts down gracefully, closing the log and exporting the buffered
    spans before the process ends."""
    where = config.server or HttpServer()
    try:
        sock = listening_socket(where.host, where.port if port is None else port)
    except OSError as exc:
        raise ConfigError(
            f"{config.source}: cannot listen on {where.host}:{port or where.port} ({exc}); "
            "choose another server.port (0: any free one)"
        ) from None
    bound = sock.getsockname()[1]
    server, gates = await open_gateway(config, http=True)
    close = _closer(server, gates)
    freeze_start_heap()  # what start-up built lives as long as the process (maitred._heap)
    traces.without_idle_library_spans()  # FastMCP's no-op spans: not built at all
    print(
        f"maitred mcp: serving http://{where.host}:{bound}{where.path} "
        f"({len(config.upstreams)} upstream(s), {len(config.tokens)} token(s)"
        + (f", JWTs from {config.auth.issuer}" if config.auth else "")
        + ")",
        file=sys.stderr,
        flush=True,
    )
    try:
        async with watching(server, config.watch.interval_s):
            await server.run_http_async(
                show_banner=False,
                host=where.host,
                port=bound,
                path=where.path,
                log_level="warning",
                sockets=[sock],
                middleware=[
                    AsgiMiddleware(CloseAtShutdown, close=close),
                    AsgiMiddleware(BodyLimit, max_bytes=where.max_body_bytes),
                ],
            )
    finally:
        await close()
        sock.close()
