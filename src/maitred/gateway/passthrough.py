"""What the gateway does not decide, it passes through as it came.

The gate (:mod:`maitred.gateway.server`) decides which tools a session sees and which calls
run. Everything else a client and an upstream say to each other must reach the other side as
a direct connection would carry it. :class:`Passthrough` is the FastMCP middleware (and
completion handler) that does so, with a :class:`Relay` per upstream for what the upstream
sends unasked:

* **Completions** (``completion/complete``): forwarded to the upstream that lists the prompt
  or resource template named, its answer returned as is; the ``completions`` capability is
  declared when an upstream declares it.
* **Resource subscriptions** (``resources/subscribe``, ``resources/unsubscribe``): forwarded
  to the upstream that serves the URI, on a session that stays open while anyone is subscribed
  (:class:`Subscriptions`: one upstream subscription per URI however many clients ask); each
  ``notifications/resources/updated`` it sends reaches every client session subscribed to that
  URI, and only those. ``resources.subscribe`` is declared when an upstream declares it.
* **Log messages**: an upstream's ``notifications/message`` reaches the client whose request
  it was sent during, with its ``level``, ``logger`` and ``data`` as sent (FastMCP's proxy
  rewrites ``data`` into ``{"msg", "extra"}``). Over streamable HTTP each request has an
  upstream session of its own, so the message's request is known. A stdio upstream is one
  session shared by every client: a message is delivered when the requests in flight on it
  belong to one client session, and dropped otherwise (it cannot be attributed, and a guess
  could hand one tenant another's log line). A client's ``logging/setLevel`` is forwarded
  (over HTTP to every upstream session of that client; to a shared stdio session the most
  verbose level any client asked for) and the gateway drops what is below the client's own
  level, so each client gets what it asked for.
* **``list_changed``** from an upstream reaches the client of that request, as FastMCP's proxy
  forwards it.
* ``subscriptions/listen`` (2026-07-28 clients) is served here for the gate's state watch,
  through the ``listen`` callback the gate gives (:meth:`GateMiddleware.listen
  <maitred.gateway.server.GateMiddleware.listen>`); FastMCP has no handler hook for the
  method, and a middleware is its public way in.

The listings themselves, the schemas and a call's arguments as sent are the upstream
components' (:mod:`maitred.gateway.upstreams`). Nothing here decides anything.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

import anyio
import mcp_types as mt  # the MCP wire types (`mcp.types` re-exports them)
from fastmcp.client import Client
from fastmcp.server.dependencies import get_context
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp_types.methods import CLIENT_REQUESTS, SPEC_CLIENT_METHODS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from maitred.gateway.config import Upstream
from maitred.gateway.upstreams import (
    Eras,
    ListingProxy,
    UpstreamClient,
    client_factory,
    sdk_request,
    transport_for,
)

#: MCP log levels, least severe first
LEVELS: tuple[str, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
_LIST_CHANGED = (
    mt.ToolListChangedNotification,
    mt.ResourceListChangedNotification,
    mt.PromptListChangedNotification,
)
Listen = Callable[
    [ServerRequestContext[Any, Any], mt.SubscriptionsListenRequestParams],
    Awaitable[mt.SubscriptionsListenResult],
]


@dataclass(frozen=True)
class Target:
    """Where an upstream's message about one client request goes: the client session (its
    id), the way to it, and the request it rides with."""

    key: str
    session: ServerSession
    request_id: mt.RequestId | None

    @classmethod
    def current(cls) -> Target | None:
        """The client request being served, if any."""
        request = sdk_request()
        if request is None:
            return None
        try:
            key = get_context().session_id
        except RuntimeError:
            return None
        return cls(key, request.session, request.request_id)


class Levels:
    """The log level each client session set with ``logging/setLevel`` (the newest kept)."""

    def __init__(self, most: int = 10_000) -> None:
        self.most = most
        self.by_session: OrderedDict[str, str] = OrderedDict()

    def set(self, key: str, level: str) -> None:
        self.by_session[key] = level
        self.by_session.move_to_end(key)
        while len(self.by_session) > self.most:
            self.by_session.popitem(last=False)

    def of(self, key: str) -> str | None:
        return self.by_session.get(key)

    def most_verbose(self) -> str | None:
        return min(self.by_session.values(), key=LEVELS.index, default=None)


class Relay:
    """Delivers what one upstream sends unasked (log messages, notifications) to the client
    it is for (see the module docstring for how a shared stdio session is attributed)."""

    def __init__(
        self, upstream: str, *, shared: bool, levels: Levels, subscriptions: Subscriptions
    ) -> None:
        self.upstream = upstream
        self.shared = shared
        self.levels = levels
        self.subscriptions = subscriptions
        self.active: dict[int, Target] = {}
        self._serial = 0
        #: log messages dropped because no single client session could be named
        self.unattributed = 0

    def target(self) -> Target | None:
        """The client request a new upstream client is made for (its messages go there)."""
        return Target.current()

    def level(self) -> str | None:
        """The log level the current client session set, if it set one."""
        target = Target.current()
        return self.levels.of(target.key) if target is not None else None

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Mark the current client request as in flight on this upstream for the block."""
        target = Target.current()
        if target is None:
            yield
            return
        self._serial += 1
        serial = self._serial
        self.active[serial] = target
        try:
            yield
        finally:
            self.active.pop(serial, None)

    def _route(self, own: Target | None) -> Target | None:
        if not self.shared:
            return own
        sessions = {t.key for t in self.active.values()}
        if len(sessions) != 1:
            return None
        return next(reversed(self.active.values()))

    async def on_log(
        self, own: Target | None, message: mt.LoggingMessageNotificationParams
    ) -> None:
        target = self._route(own)
        if target is None:
            self.unattributed += 1
            return
        floor = self.levels.of(target.key)
        if floor is not None and LEVELS.index(message.level) < LEVELS.index(floor):
            return
        with suppress(Exception):  # the client went away: nobody left to tell
            await target.session.send_log_message(
                message.level, message.data, message.logger, related_request_id=target.request_id
            )

    async def on_message(
        self, own: Target | None, message: mt.ServerNotification | Exception
    ) -> None:
        if isinstance(message, mt.ResourceUpdatedNotification):
            await self.subscriptions.updated(self.upstream, str(message.params.uri))
        elif isinstance(message, _LIST_CHANGED):
            target = self._route(own)
            if target is not None:
                with suppress(Exception):
                    await target.session.send_notification(message)


class Subscriptions:
    """Client sessions subscribed to upstream resources, and the upstream side of it."""

    def __init__(self) -> None:
        #: (upstream, uri) -> {client session id: its session}
        self.subscribers: dict[tuple[str, str], dict[str, ServerSession]] = {}
        #: HTTP upstreams: the session kept open for their subscriptions
        self.listeners: dict[str, Client[Any]] = {}
        self.lock = anyio.Lock()

    async def _upstream(self, proxy: ListingProxy, method: str, uri: str) -> None:
        up = proxy.config
        if not up.url:  # the one stdio session: the subscription lives on it
            async with proxy.factory() as client:
                await _send(client, method, uri)
            return
        client = self.listeners.get(up.name)
        if client is None:
            client = UpstreamClient(  # no request of its own: unsolicited messages go nowhere
                transport_for(up), proxy.relay, None, None, mode="legacy", name=up.name
            )
            await client.__aenter__()
            self.listeners[up.name] = client
        await _send(client, method, uri)

    async def subscribe(self, proxy: ListingProxy, uri: str, target: Target) -> None:
        key = (proxy.upstream, uri)
        async with self.lock:
            if key not in self.subscribers:
                await self._upstream(proxy, "resources/subscribe", uri)
            self.subscribers.setdefault(key, {})[target.key] = target.session

    async def unsubscribe(self, proxy: ListingProxy, uri: str, target: Target) -> None:
        key = (proxy.upstream, uri)
        async with self.lock:
            subscribed = self.subscribers.get(key)
            if subscribed is None:  # nothing subscribed through here: the upstream answers
                async with proxy.factory() as client:
                    await _send(client, "resources/unsubscribe", uri)
                return
            subscribed.pop(target.key, None)
            if subscribed:
                return
            del self.subscribers[key]
            await self._upstream(proxy, "resources/unsubscribe", uri)
            if not any(name == proxy.upstream for name, _ in self.subscribers):
                await self.close(proxy.upstream)

    async def updated(self, upstream: str, uri: str) -> None:
        """Tell every client session subscribed to ``uri`` of ``upstream`` that it changed."""
        subscribed = self.subscribers.get((upstream, uri), {})
        for key, session in list(subscribed.items()):
            try:
                await session.send_resource_updated(uri)
            except Exception:  # that client is gone
                subscribed.pop(key, None)

    async def close(self, upstream: str | None = None) -> None:
        """Close the kept sessions (of one upstream, or all)."""
        for name in [n for n in self.listeners if upstream is None or n == upstream]:
            client = self.listeners.pop(name)
            with suppress(Exception):
                await client.__aexit__(None, None, None)  # type: ignore[no-untyped-call]


async def _send(client: Client[Any], method: str, uri: str) -> None:
    if method == "resources/subscribe":
        await client.session.subscribe_resource(uri)
    else:
        await client.session.unsubscribe_resource(uri)


class Passthrough(Middleware):
    """The protocol surfaces the gate does not decide, forwarded (see the module docstring).

    Args:
        listen: serves ``subscriptions/listen`` for the gate (``None``: not served).

    :meth:`proxy_for` makes each upstream's provider (with its :class:`Relay`); what it serves
    passes through once :meth:`serve` is called for it (an upstream that has not answered, or
    was refused, is asked for nothing here: :mod:`maitred.gateway.lifecycle`).
    """

    def __init__(self, listen: Listen | None = None) -> None:
        self.listen = listen
        self.levels = Levels()
        self.subscriptions = Subscriptions()
        #: the upstreams served now (their capabilities, subscriptions, levels, completions)
        self.proxies: dict[str, ListingProxy] = {}

    def serve_listen(self, listen: Listen) -> None:
        """Serve ``subscriptions/listen`` with ``listen`` (the gate's, known once it is built)."""
        self.listen = listen

    def proxy_for(self, upstream: Upstream) -> ListingProxy:
        """The provider of ``upstream``'s components, its messages relayed through here."""
        relay = Relay(
            upstream.name,
            shared=not upstream.url,
            levels=self.levels,
            subscriptions=self.subscriptions,
        )
        eras = Eras()
        return ListingProxy(client_factory(upstream, relay, eras), upstream, relay, eras)

    def serve(self, proxy: ListingProxy) -> None:
        """Pass through what ``proxy``'s upstream serves, from now on (it answered, and its
        tools are in the catalog)."""
        self.proxies[proxy.upstream] = proxy

    def _declared(
        self, test: Callable[[mt.ServerCapabilities], object], modern: bool = False
    ) -> bool:
        """Whether some upstream declares what ``test`` looks for, to the era of ``modern``."""
        declared = [p.declared(modern) for p in self.proxies.values()]
        return any(caps is not None and test(caps) for caps in declared)

    @property
    def completions(self) -> bool:
        """Whether some upstream declares ``completions``."""
        return self._declared(lambda c: c.completions is not None)

    @property
    def subscribe(self) -> bool:
        """Whether some upstream declares ``resources.subscribe``."""
        return self._declared(lambda c: c.resources is not None and bool(c.resources.subscribe))

    async def on_initialize(
        self,
        context: MiddlewareContext[mt.InitializeRequest],
        call_next: CallNext[mt.InitializeRequest, mt.InitializeResult | None],
    ) -> mt.InitializeResult | None:
        result = await call_next(context)
        if result is None:
            return None
        caps = result.capabilities
        update: dict[str, Any] = {}
        if caps.resources is not None:  # the gateway forwards what its upstreams send
            update["resources"] = caps.resources.model_copy(
                update={
                    "subscribe": self.subscribe,
                    "list_changed": self._declared(
                        lambda c: c.resources is not None and bool(c.resources.list_changed)
                    ),
                }
            )
        if caps.prompts is not None:
            update["prompts"] = caps.prompts.model_copy(
                update={
                    "list_changed": self._declared(
                        lambda c: c.prompts is not None and bool(c.prompts.list_changed)
                    )
                }
            )
        return result.model_copy(update={"capabilities": caps.model_copy(update=update)})

    async def on_discover(
        self,
        context: MiddlewareContext[mt.DiscoverRequest],
        call_next: CallNext[mt.DiscoverRequest, mt.DiscoverResult | dict[str, Any]],
    ) -> mt.DiscoverResult | dict[str, Any]:
        found = await call_next(context)
        if self.listen is None:
            return found
        result = found if isinstance(found, mt.DiscoverResult) else None
        if result is None:
            result = mt.DiscoverResult.model_validate(found)
        caps = result.capabilities
        update: dict[str, Any] = {}
        if caps.tools is not None:  # the gate's watch sends tools list_changed on listen streams
            update["tools"] = caps.tools.model_copy(update={"list_changed": True})
        for kind in ("prompts", "resources"):  # relayed from the upstreams that send them
            if getattr(caps, kind) is not None and self._declared(
                partial(_changes, kind), modern=True
            ):
                update[kind] = getattr(caps, kind).model_copy(update={"list_changed": True})
        return result.model_copy(update={"capabilities": caps.model_copy(update=update)})

    async def on_request(
        self,
        context: MiddlewareContext[mt.Request[Any, Any]],
        call_next: CallNext[mt.Request[Any, Any], Any],
    ) -> Any:
        method = context.method
        params = cast(Mapping[str, Any], context.message or {})
        if method == "logging/setLevel":
            answer = await call_next(context)  # FastMCP keeps the level for its own logs
            await self._set_level(str(params.get("level", "")))
            return answer
        if method in ("resources/subscribe", "resources/unsubscribe"):
            return await self._subscription(method, str(params.get("uri", "")))
        if method == "subscriptions/listen" and self.listen is not None:
            request = sdk_request()
            if request is None:
                raise MCPError(mt.INVALID_REQUEST, "subscriptions/listen needs a request")
            listen = mt.SubscriptionsListenRequestParams.model_validate(dict(params))
            return await self.listen(request, listen)
        return await call_next(context)

    async def _set_level(self, level: str) -> None:
        target = Target.current()
        if target is None or level not in LEVELS:
            return
        self.levels.set(target.key, level)
        for proxy in self.proxies.values():
            caps = proxy.capabilities
            if caps is None or caps.logging is None:
                continue
            # an HTTP upstream session is this client's own; a stdio one is everyone's
            forwarded = level if proxy.config.url else self.levels.most_verbose()
            try:
                async with proxy.factory() as client:
                    if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                        continue  # 2026-07-28 has no logging/setLevel: levels ride each request
                    if isinstance(client, UpstreamClient) and client.level == forwarded:
                        continue  # it was told when it connected
                    await client.session.set_logging_level(cast(mt.LoggingLevel, forwarded))
            except Exception as exc:  # one upstream's refusal does not fail the client's request
                print(
                    f"maitred mcp: upstream {proxy.upstream!r} refused logging/setLevel "
                    f"({type(exc).__name__}: {exc}); its messages are filtered by the gateway",
                    file=sys.stderr,
                    flush=True,
                )

    async def _owner(self, uri: str) -> ListingProxy | None:
        """The upstream serving ``uri`` (a listed resource or a template's match)."""
        for proxy in self.proxies.values():
            if await proxy.get_resource(uri) is not None:
                return proxy
        for proxy in self.proxies.values():
            if await proxy.get_resource_template(uri) is not None:
                return proxy
        subscribing = [p for p in self.proxies.values() if _subscribes(p)]
        return subscribing[0] if len(subscribing) == 1 else None  # it decides what it serves

    async def _subscription(self, method: str, uri: str) -> mt.EmptyResult:
        target = Target.current()
        proxy = await self._owner(uri)
        if proxy is None or target is None:
            raise MCPError(mt.INVALID_PARAMS, f"no upstream serves the resource {uri!r}")
        if method == "resources/subscribe":
            await self.subscriptions.subscribe(proxy, uri, target)
        else:
            await self.subscriptions.unsubscribe(proxy, uri, target)
        return mt.EmptyResult()

    async def complete(
        self,
        ref: mt.PromptReference | mt.ResourceTemplateReference,
        argument: mt.CompletionArgument,
        context: mt.CompletionContext | None,
    ) -> mt.Completion | None:
        """FastMCP's completion handler: the owning upstream's answer, as it gave it."""
        for proxy in self.proxies.values():
            if isinstance(ref, mt.PromptReference):
                owns = await proxy.get_prompt(ref.name) is not None
            else:
                owns = await proxy.has_template(ref.uri)
            if owns:
                async with proxy.factory() as client:
                    answer = await client.complete_mcp(
                        ref,
                        {"name": argument.name, "value": argument.value},
                        dict(context.arguments or {}) if context is not None else None,
                    )
                completion: mt.Completion = answer.completion
                return completion
        return None

    async def close(self) -> None:
        """Close the sessions kept for subscriptions and for the upstreams' calls."""
        await self.subscriptions.close()
        for proxy in list(self.proxies.values()):
            await proxy.close()


def _changes(kind: str, caps: mt.ServerCapabilities) -> bool:
    """Whether ``caps`` say the ``kind`` list (prompts, resources) sends ``list_changed``."""
    declared = getattr(caps, kind)
    return declared is not None and bool(declared.list_changed)


def refuses_client(exc: BaseException) -> bool:
    """Whether an upstream's error is its refusal of the client rather than its failure: a
    ``-32021`` says the client did not declare a capability the request needs (the upstream
    saw the client's own capabilities, :func:`~maitred.gateway.upstreams.undeclared_handlers`).
    The gateway passes such an error on as the upstream sent it, as a direct connection
    would carry it, instead of answering ``UPSTREAM_FAILED``."""
    return isinstance(exc, MCPError) and exc.error.code == mt.MISSING_REQUIRED_CLIENT_CAPABILITY


class EraMethods(Middleware):
    """A method the request's protocol revision does not have is not a method there.

    2026-07-28 removed ``initialize``, ``ping``, ``logging/setLevel`` and the
    ``resources/subscribe`` pair; a request of that revision naming one is answered
    ``-32601`` (HTTP 404 over streamable HTTP), as the revision says and as an upstream would
    answer it directly, before any gate decides or logs it and before anything forwards it.
    The gateway's outermost middleware. Methods no revision of the specification defines
    (extensions: tasks, skills) pass on.
    """

    async def on_request(
        self,
        context: MiddlewareContext[mt.Request[Any, Any]],
        call_next: CallNext[mt.Request[Any, Any], Any],
    ) -> Any:
        method = context.method
        ctx = context.fastmcp_context
        request = ctx.request_context if ctx is not None else None
        version = request.protocol_version if request is not None else None
        if (
            version in MODERN_PROTOCOL_VERSIONS
            and method in SPEC_CLIENT_METHODS
            and (method, version) not in CLIENT_REQUESTS
        ):
            raise MCPError(mt.METHOD_NOT_FOUND, "Method not found", data=method)
        return await call_next(context)


def _subscribes(proxy: ListingProxy) -> bool:
    caps = proxy.capabilities
    return caps is not None and caps.resources is not None and bool(caps.resources.subscribe)
