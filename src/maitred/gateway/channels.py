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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import mcp_types as mt  # the MCP wire types (`mcp.types` re-exports them)
from fastmcp.server.middleware import MiddlewareContext
from mcp.server.context import ServerRequestContext
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

Key = tuple[str, ...]
#: the lists a session can be told have changed
ListKind = Literal["tools", "resources", "prompts"]
#: each list's change: as an event on a listen stream, and as a notification on a standing one
_CHANGED: Mapping[ListKind, tuple[ServerEvent, Any]] = {
    "tools": (ToolsListChanged(), mt.ToolListChangedNotification()),
    "resources": (ResourcesListChanged(), mt.ResourceListChangedNotification()),
    "prompts": (PromptsListChanged(), mt.PromptListChangedNotification()),
}


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
