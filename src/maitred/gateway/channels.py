"""How the gateway reaches a session outside any request: the state watch's way out.

A notification that answers a request (``list_changed`` after a write or a ``find_tools``)
rides that request's own stream. The state watch has no request to ride: it must push, and
what it can push on depends on the protocol era the client negotiated.

* **Handshake-era connections** (stdio, or streamable HTTP with an MCP session id) have a
  standing channel: the pipe, or the session's GET stream. :meth:`Channels.remember` keeps the
  :class:`~mcp.server.session.ServerSession` of a session's latest request, and a notification
  sent on it without a related request id goes out on that channel.
* **2026-07-28 connections** have none: the protocol delivers change notifications only on a
  ``subscriptions/listen`` stream the client opens (a request whose response *is* the stream),
  and the SDK drops a bare one. :meth:`Channels.listen` serves that request, per session: each
  gatekeeper has its own subscription bus, so an event for one tenant's session never reaches
  another's stream.

:meth:`Channels.notify` sends the ``list_changed`` of the lists it is given (tools by default;
resources and prompts for :mod:`maitred.gateway.surfaces`) on whichever way out the session has
(both, if it has both); a session with
neither cannot be told, and the watch leaves it alone (its next ``tools/list`` is a fresh
listing anyway). Nothing here decides anything: the gates do, in :mod:`maitred.gateway.keeper`.

**An upstream's own list changes.** An HTTP upstream that speaks 2026-07-28 tells its changes
only on a ``subscriptions/listen`` stream of its own; :func:`follow` holds one open to it while
it serves (reopened after a pause when it ends) and hands each ``list_changed`` to the
lifecycle (:meth:`Upstreams.changed <maitred.gateway.lifecycle.Upstreams.changed>`), which
lists the upstream again and tells every reachable session here, in its own era.

**Resumable streams** (SEP-1699). An upstream served over streamable HTTP may open each SSE
stream with a priming event (an event id and no data) and a ``retry`` interval, and keep its
events so that a client whose stream broke reconnects with ``Last-Event-ID`` and gets the
rest. A client of the gateway gets the same from the gateway's own streams:
:class:`StreamingServer` is FastMCP's server with an event store
(:class:`~maitred.gateway.events.Events`: in memory, so a stream is resumed on the replica
that served it) and :data:`RETRY_MS`.

**Sealed request state** (SEP-2322). Every ``requestState`` the gateway hands a 2026-07-28
client is sealed by the MCP SDK's request-state boundary and opened again when the client
echoes it. :func:`sealing` gives it the keys of ``server.request_state_keys_file`` when the
config names one, so every replica sharing that file opens what any of them sealed (and the
gateway after a restart); without it the key is made when the process starts. What is sealed
is always a round of the gateway's (:class:`~maitred.gateway.approval.Round`: its own
approval question, or an upstream's state wrapped), single-use where it must be.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import anyio
import mcp_types as mt  # the MCP wire types (`mcp.types` re-exports them)
from fastmcp import FastMCP
from fastmcp.server.http import StarletteWithLifespan
from fastmcp.server.middleware import MiddlewareContext
from mcp.client.subscriptions import listen as listen_to
from mcp.server.context import ServerRequestContext
from mcp.server.request_state import RequestStateSecurity
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ServerEvent,
    ToolsListChanged,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from maitred.gateway.events import Events
from maitred.gateway.http_config import HttpServer, request_state_keys

if TYPE_CHECKING:
    from maitred.gateway.upstreams import ListingProxy

Key = tuple[str, ...]
#: how long a client waits before it reconnects to a stream that closed (the SSE ``retry``)
RETRY_MS = 1000
#: the lists a session can be told have changed
ListKind = Literal["tools", "resources", "prompts"]
#: each list's change: as an event on a listen stream, and as a notification on a standing one
_CHANGED: Mapping[ListKind, tuple[ServerEvent, Any]] = {
    "tools": (ToolsListChanged(), mt.ToolListChangedNotification()),
    "resources": (ResourcesListChanged(), mt.ResourceListChangedNotification()),
    "prompts": (PromptsListChanged(), mt.PromptListChangedNotification()),
}


#: the list an upstream's listen event says changed
_KIND_OF: Mapping[type[ServerEvent], ListKind] = {
    type(event): kind for kind, (event, _) in _CHANGED.items()
}


def speaks_listen(proxy: ListingProxy) -> str | None:
    """The 2026-07-28 version ``proxy``'s HTTP upstream answers in (``None``: it does not,
    or it is a stdio upstream, whose one session carries its notifications itself)."""
    modern = [m for m in proxy.eras.spoken if m in MODERN_PROTOCOL_VERSIONS]
    return modern[0] if proxy.config.url and modern else None


async def follow(
    proxy: ListingProxy, told: Callable[[ListKind], Awaitable[None]], pause_s: float
) -> None:
    """Listen to ``proxy``'s upstream for list changes until cancelled: ``told(kind)`` for
    each; a stream that ends, fails or cannot be opened is opened again after ``pause_s``."""
    while True:
        version = speaks_listen(proxy)
        if version is not None:
            try:
                async with (
                    proxy.factory(version) as client,
                    listen_to(
                        client.session,
                        tools_list_changed=True,
                        prompts_list_changed=True,
                        resources_list_changed=True,
                    ) as changes,
                ):
                    async for event in changes:
                        kind = _KIND_OF.get(type(event))
                        if kind is not None:
                            await told(kind)
            except Exception:  # refused, dropped, or the upstream is down: try again later
                pass
        await anyio.sleep(pause_s)


class _Listeners:
    """One session's ``subscriptions/listen`` streams: its own bus, and how many are open."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self.handler = ListenHandler(self.bus, max_subscriptions=8)
        self.open = 0


class Channels:
    """The ways out to each session the gateway may have to tell something, by gatekeeper key."""

    def __init__(self) -> None:
        self.standing: dict[Key, ServerSession] = {}
        self.listeners: dict[Key, _Listeners] = {}

    def remember(self, key: Key, context: MiddlewareContext[Any]) -> None:
        """Keep the request's session when its connection has a standing channel."""
        ctx = context.fastmcp_context
        request = ctx.request_context if ctx is not None else None
        if request is not None and request.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self.standing[key] = request.session

    def reachable(self, key: Key) -> bool:
        """Whether a notification for ``key`` has somewhere to go."""
        listening = self.listeners.get(key)
        return key in self.standing or (listening is not None and listening.open > 0)

    async def listen(
        self,
        key: Key,
        ctx: ServerRequestContext[Any, Any],
        params: mt.SubscriptionsListenRequestParams,
    ) -> mt.SubscriptionsListenResult:
        """Serve one ``subscriptions/listen`` stream for the session ``key`` until it closes."""
        listening = self.listeners.setdefault(key, _Listeners())
        listening.open += 1
        try:
            return await listening.handler(ctx, params)
        finally:
            listening.open -= 1
            if listening.open == 0 and self.listeners.get(key) is listening:
                del self.listeners[key]

    async def notify(self, key: Key, lists: Sequence[ListKind] = ("tools",)) -> bool:
        """Send ``<list>/list_changed`` for each of ``lists`` (tools by default; resources,
        prompts) to ``key`` on every way out it has; True when one took it. A standing
        channel that fails (the client went away) is forgotten."""
        sent = False
        listening = self.listeners.get(key)
        if listening is not None and listening.open > 0:
            for kind in lists:
                await listening.bus.publish(_CHANGED[kind][0])
            sent = True
        channel = self.standing.get(key)
        if channel is not None:
            try:
                for kind in lists:
                    await channel.send_notification(_CHANGED[kind][1])
                sent = True
            except Exception:  # a closed stream: nobody left to tell there
                self.standing.pop(key, None)
        return sent

    def forget(self, key: Key) -> None:
        """Drop the standing channel of a session the gateway no longer keeps (its open listen
        streams end when their clients close them)."""
        self.standing.pop(key, None)


class StreamingServer(FastMCP[Any]):
    """FastMCP's server whose HTTP streams are resumable (see the module docstring): each
    starts with a priming event and says ``retry``; its events are kept for reconnection."""

    def http_app(self, *args: Any, **kwargs: Any) -> StarletteWithLifespan:
        if kwargs.get("event_store") is None:
            kwargs["event_store"] = Events()
        if kwargs.get("retry_interval") is None:
            kwargs["retry_interval"] = RETRY_MS
        return super().http_app(*args, **kwargs)


def sealing(server: HttpServer, source: str) -> RequestStateSecurity:
    """The request-state policy of ``server`` (the config's ``server`` block; ``source``, the
    config file, names an error): AES-256-GCM under the keys of its
    ``request_state_keys_file`` (the first seals, every one opens), or under a key made now
    for this process alone when it names no file; either way for ``request_state_ttl_s``
    (which the gateway's rounds follow too: :mod:`maitred.gateway.approval`), the audience
    the server's name.

    Raises:
        ConfigError: the keys file is missing, empty, or has a key that is too short.
    """
    ttl = server.request_state_ttl_s
    if not server.request_state_keys_file:
        return RequestStateSecurity.ephemeral(ttl=ttl)
    keys = request_state_keys(server.request_state_keys_file, source)
    return RequestStateSecurity(keys=list(keys), ttl=ttl)
