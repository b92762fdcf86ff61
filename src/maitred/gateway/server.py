"""The gate's middleware: what every MCP session sees and may call, through its gatekeeper.

:class:`GateMiddleware` stands between every client and every upstream of the server
:mod:`maitred.gateway.build` assembles:

* ``tools/list``: the upstreams' lists, filtered to what the session's gatekeeper finds
  visible for its account now (a logged turn).
* ``tools/call`` (the one line of :mod:`maitred.gateway.calls`): the conversation decides the
  call first (logged and flushed); a rejected call never reaches the upstream and the client gets
  an ``isError`` result whose text is ``decision.tool_result()`` as JSON (the one model-facing
  :class:`~maitred.actions.refusals.Rejection`: code, message for the model, offending fields,
  decision id); a call the gatekeeper could not decide or log is refused too
  (``GATE_UNAVAILABLE``, the same payload with no decision id), and so is one that reached
  the gate without a principal (``AUTH_REQUIRED``, likewise). Every decided call's result,
  rejected or forwarded from the upstream, carries its decision-log id in ``_meta`` under
  ``maitred/decision_id``, so an operator can match what the model saw to the log row. An allowed
  call goes to the upstream that lists the tool; if that fails (the server crashed, the URL
  does not answer), the client gets an ``isError`` result naming that upstream, the other
  upstreams keep serving, and the next call connects afresh (a stdio server is relaunched).
  After an allowed mutating call succeeded, a changed visible set is announced with
  ``notifications/tools/list_changed``.
* state changes from outside (``watch: {interval_s: N}``): :meth:`GateMiddleware.watch` runs beside
  the server (:func:`~maitred.gateway.build.watching`) and every ``N`` seconds asks the engines
  which listed sessions would now see another list (:meth:`GatewayEngines.recheck
  <maitred.gateway.keeper.GatewayEngines.recheck>`); each such session is re-listed (a logged turn)
  and sent ``list_changed`` outside any request (:mod:`maitred.gateway.channels`): on its standing
  channel (a handshake-era connection: the stdio pipe, an HTTP session's GET stream), or on the
  ``subscriptions/listen`` streams it opened (a 2026-07-28 connection, which has no other way to be
  told; :meth:`GateMiddleware.listen` serves them, one subscription bus per session). A session with
  neither (``fastmcp.Client``'s default: 2026-07-28, and it never listens) is not re-checked: its
  next ``tools/list`` reads state afresh like every listing. A pass that fails (the log cannot be
  written) is reported on stderr and the watch goes on; a state store that is down is no failure of
  the watch: the tools that read it are hidden (fail closed), which is announced like any change,
  and so is their return.
* pinned definitions (``pins:``, :mod:`maitred.gateway.pins`): every time the gateway lists an
  upstream's tools (at start, on each ``tools/list``, when the proxy's cached list has
  expired) the proxy (:class:`ListingProxy`) hands the fresh listing to
  :meth:`GateMiddleware.observe`, which compares it with the pins: a tool that no longer
  matches is held back from every session at once (hidden, calls refused
  ``TOOL_DEFINITION_CHANGED``), named on stderr and counted in ``/metrics``.
* ``find_tools`` (``disclosure: find_tools``): answered by the gateway itself, never by an
  upstream (see :meth:`Conversation.find <maitred.conversation.Conversation.find>`); its
  arguments (``need`` and/or ``needs``) are read, and refused, by
  :mod:`maitred.conversation.finding`. Beside it ``call_tool(name, arguments)`` is rewritten
  into the call it names before anything decides (:meth:`CallPath._unwrapped
  <maitred.gateway.calls.CallPath._unwrapped>`), and so is that call.
* resources, resource templates and prompts: listed per session and read or got only as the
  sidecars' ``resources`` / ``prompts`` contracts allow, asked of the session's conversation
  by :class:`SurfaceGuard <maitred.gateway.surfaces.SurfaceGuard>`, the middleware after this
  one (the state watch and a mutating call announce their changes too).
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
``tools/call`` continuing the client's W3C trace context, with the listing turn, the upstream
call and ``find_tools`` as its children and the check's decision as attributes of the call's
own span (:mod:`maitred.gateway.traces`).

The engine is synchronous (SQLite, file and SQL state); its calls run on worker threads, so the
event loop never blocks on the log or the state store. Sessions run side by side on the one
shared engine (ARCHITECTURE.md, "Concurrency"); each session's requests take that session's own
lock (:attr:`Conversation.lock`), since its listing and found set are its own.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Sequence
from functools import partial
from typing import Any

import anyio
import mcp_types as mt  # the MCP wire types (`mcp.types` re-exports them)
from fastmcp.server.dependencies import get_access_token
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools import Tool
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from maitred.actions.refusals import auth_required
from maitred.conversation import Conversation, Principal
from maitred.gateway import traces
from maitred.gateway.approval import Approvals
from maitred.gateway.auth import Identity
from maitred.gateway.calls import CallPath
from maitred.gateway.channels import Channels
from maitred.gateway.keeper import GatewayEngines
from maitred.gateway.lifecycle import Upstreams
from maitred.gateway.listings import in_catalog_order
from maitred.gateway.metrics import GatewayMetrics
from maitred.gateway.surfaces import SurfaceGuard
from maitred.gateway.tasks import TaskBook
from maitred.gateway.upstreams import ListingProxy
from maitred.ratelimit import Limiter, token_id
from maitred.tracing import OFF, Tracing

#: who a request is from: its conversation's key, the principal, and whether the conversation
#: is recorded as its principal (a sessionless 2026-07-28 connection) rather than an MCP session
Identified = tuple[tuple[str, ...], Principal, bool]


class GateMiddleware(CallPath, Middleware):
    """Filters ``tools/list`` and gates ``tools/call`` through each session's gatekeeper.

    It finds each request's gatekeeper (one per session, the least recently used dropped),
    lists, and runs the state watch; its calls take the path of :class:`~.calls.CallPath`.

    Args:
        engines: the gateway's engines.
        account: the launch account (stdio): every request is this one session. ``None`` for
            an HTTP gateway: the account comes from the authenticated token only.
        max_sessions: gatekeepers kept (HTTP); the least recently used is dropped beyond it.
        tracing: the gateway's traces (:mod:`maitred.gateway.traces`); off by default.
        surfaces: serve resources, prompts and skills, as ``engines`` govern them
            (:func:`~maitred.gateway.surfaces.open_surfaces`); their middleware
            (:attr:`surface_guard`) is to be added to the server after this one.
        limiter: the gateway's rate limits (:mod:`maitred.gateway.rates`); ``None``: none.
        upstreams: the upstreams' lives (:mod:`maitred.gateway.lifecycle`): a ``tools/list``
            tries a down one again, a failed call has its upstream listed again.
        tasks: who created which task (:mod:`maitred.gateway.tasks`); ``None``: no upstream
            can make one.
        approvals: how people are asked (:mod:`maitred.gateway.approval`; its yes lives as
            long as the server's sealed request state).
    """

    def __init__(
        self,
        engines: GatewayEngines,
        *,
        account: str | None,
        max_sessions: int = 1000,
        tracing: Tracing = OFF,
        surfaces: bool = False,
        limiter: Limiter | None = None,
        upstreams: Upstreams | None = None,
        tasks: TaskBook | None = None,
        approvals: Approvals | None = None,
    ) -> None:
        self.engines = engines
        self.tasks = tasks
        #: the upstreams' states, retries and late joins (:mod:`.lifecycle`)
        self.upstreams = upstreams
        self.account = account
        self.max_sessions = max_sessions
        self.keepers: OrderedDict[tuple[str, ...], Conversation] = OrderedDict()
        #: how to reach each session outside a request (the state watch's way out)
        self.channels = Channels()
        #: what ``GET /metrics`` shows (over HTTP)
        self.metrics = GatewayMetrics(lambda: len(self.keepers))
        #: questions put to people about calls that need approval (:mod:`.approval`)
        #: questions put to people (:mod:`.approval`); a yes lives as its sealed state
        self.approvals = approvals if approvals is not None else Approvals()
        self.tracing = tracing
        self.surface_guard = SurfaceGuard(self) if surfaces else None
        self.limiter = limiter
        if limiter is not None:
            self.metrics.limits_on(limiter.options.scopes)

    def adopt(self, engines: GatewayEngines) -> list[Conversation]:
        """Decide with ``engines`` (and the surfaces they govern) from now on: the catalog grew
        (:mod:`.lifecycle`). Returns the sessions kept now, for the caller to move onto them
        (:meth:`Conversation.rebase`); a session opened from here on is on ``engines`` already."""
        self.engines = engines
        return list(self.keepers.values())

    def watch_pins(self, proxies: Sequence[ListingProxy]) -> None:
        """Count what the start listing held back, and have every later listing of the
        ``proxies`` compared with the pins (:meth:`observe`); nothing without a pin file."""
        pins = self.engines.pins
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
        pins = self.engines.pins
        if pins is None:
            return
        for drift in pins.observe(upstream, [tool_json(t) for t in tools]):
            if not drift.unpinned:
                self.metrics.definition_changes.labels(upstream, drift.tool).inc()

    def _identity(self, session_id: str) -> Identified | None:
        """(conversation key, principal, recorded by principal) of the request being served,
        from the launch (no scopes said) or the authenticated :class:`~.auth.Identity` (None:
        not authenticated). A credential of another subject, or one that grants other scopes,
        is another conversation, as another account would be: what a conversation was shown,
        and what it owns, depend on all of them. Recorded by principal: what it is offered
        and disclosed is recorded for the principal (a sessionless 2026-07-28 connection,
        ``session_id`` empty), else for this MCP session (:mod:`.listings`)."""
        if self.account is not None:
            return ("launch",), Principal(self.account), not session_id
        token = get_access_token()
        if not isinstance(token, Identity) or not token.tenant or not token.account:
            return None
        who = Principal(
            token.account,
            tenant=token.tenant,
            granted=frozenset(token.scopes),
            subject=subject_of(token),
        )
        scopes = " ".join(sorted(token.scopes))
        return (who.tenant, who.account, scopes, who.subject, session_id), who, not session_id

    def _keeper_for(
        self, key: tuple[str, ...], principal: Principal, by_principal: bool = False
    ) -> Conversation:
        keeper = self.keepers.get(key)
        if keeper is None:
            keeper = self.engines.conversation(principal, by_principal=by_principal)
            self.keepers[key] = keeper
            while len(self.keepers) > self.max_sessions:
                dropped, _ = self.keepers.popitem(last=False)
                self.channels.forget(dropped)
        self.keepers.move_to_end(key)
        return keeper

    def _keeper(self, context: MiddlewareContext[Any]) -> Conversation | None:
        """The session's gatekeeper, from the launch or the token (None: not authenticated)."""
        found = self._identity(_session_id(context))
        if found is None:
            return None
        keeper = self._keeper_for(*found)
        self.channels.remember(found[0], context)
        return keeper

    keeper_of = _keeper  # for the surfaces' middleware (:class:`SurfaceGuard`)

    def keeper_now(self) -> Conversation | None:
        """The gatekeeper of the 2026-07-28 request being served outside the middleware (an
        extension's own method: ``skills/*``, ``tasks/*``); None: not authenticated."""
        found = self._identity("")
        return self._keeper_for(*found) if found is not None else None

    def reachable(self) -> list[tuple[tuple[str, ...], Conversation]]:
        """The sessions a notification outside any request can reach (the watch's)."""
        return [(k, g) for k, g in self.keepers.items() if self.channels.reachable(k)]

    async def listen(
        self, ctx: ServerRequestContext[Any, Any], params: mt.SubscriptionsListenRequestParams
    ) -> mt.SubscriptionsListenResult:
        """Serve ``subscriptions/listen`` (2026-07-28 connections) for the caller's session: the
        state watch's ``list_changed`` for it arrives on this stream."""
        found = self._identity("")  # a listen stream is 2026-07-28: no session id
        if found is None:
            raise MCPError(mt.INVALID_REQUEST, auth_required("No stream was opened").message)
        self._keeper_for(*found)
        return await self.channels.listen(found[0], ctx, params)

    async def recheck(self) -> int:
        """One pass of the state watch; returns how many sessions were sent ``list_changed``.

        Only sessions the gateway can reach outside a request are re-checked (see
        :mod:`maitred.gateway.channels`); one it cannot reach would not be told, and its next
        ``tools/list`` is a fresh listing anyway.
        """
        by_account: dict[str, list[tuple[tuple[str, ...], Conversation]]] = {}
        for key, keeper in self.reachable():
            by_account.setdefault(keeper.account, []).append((key, keeper))
        told = 0
        for group in by_account.values():  # one hop per account
            changed = await self._engine(partial(self.engines.recheck, [k for _, k in group]))
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


def subject_of(identity: Identity) -> str:
    """The credential's subject: a JWT's ``sub`` claim (else its account claim), a static
    token's id (``token:`` and the first 16 hex digits of its SHA-256, never the token)."""
    if identity.via == "jwt":
        sub = identity.claims.get("sub")
        return sub if isinstance(sub, str) and sub else identity.account
    return f"token:{token_id(identity.token)[:16]}"


def _session_id(context: MiddlewareContext[Any]) -> str:
    """The MCP session id on a handshake-era connection; ``""`` on a sessionless one."""
    ctx = context.fastmcp_context
    request = ctx.request_context if ctx is not None else None
    if ctx is None or request is None or request.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return ""
    return ctx.session_id


def tool_json(tool: Tool) -> dict[str, Any]:
    """A listed tool as its MCP JSON object (what the catalog and the pins read)."""
    return tool.to_mcp_tool().model_dump(by_alias=True, exclude_none=True, mode="json")
