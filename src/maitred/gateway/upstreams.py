"""Each upstream as the gateway serves it: proxied components that are what the upstream sent.

FastMCP's proxy rebuilds every upstream component as one of its own and serialises that:
a tool without a title gains one made from its name, every tool, resource, template and
prompt gains ``_meta: {fastmcp: {tags: []}}``, a resource without a MIME type becomes
``text/plain``, a prompt without arguments gets ``arguments: []``, and a call the client sent
without ``arguments`` reaches the upstream with ``{}``. None of that is the gateway's to
decide, so here:

* :class:`ListingProxy` lists the upstream itself and keeps each listed object as it arrived;
  its components (:class:`UpstreamTool`, :class:`UpstreamResource`, :class:`UpstreamTemplate`,
  :class:`UpstreamPrompt`) still run through FastMCP's proxy classes, but list as that object.
  Schemas are served as sent (``$defs``, ``$ref``, ``$schema``; the server is built with
  ``dereference_schemas=False``). Every fresh tool listing is handed to the ``listeners``
  (the pins, :mod:`maitred.gateway.pins`).
* :class:`UpstreamTool` forwards a call without ``arguments`` without them.
* :class:`KeptSession`: a stdio upstream's calls go over one client kept entered on its one
  session (the transport's kept-alive session, which the gateway holds anyway), not a client
  made, connected and closed per call as FastMCP's proxy does (a task, two events and a lock
  each time: about half a millisecond of CPU a call). An upstream that exited is found before
  a call is sent on it, and the next call connects afresh (the server relaunched).
* :func:`client_factory` gives each request its own client to the upstream
  (:class:`UpstreamClient`): over streamable HTTP a session of its own, in the protocol era
  the client's own connection negotiated when the upstream speaks it, else in the one it
  speaks (:class:`Eras`; a handshake-era client reaches a handshake-era upstream session, so
  ``logging/setLevel`` and ``resources/subscribe`` mean there what they mean to the client),
  declaring the client's own ``sampling`` / ``elicitation`` / ``roots`` and no more; over
  stdio the one process and its one session, shared (the era it negotiated at launch). Its
  log messages and notifications go to the gateway's
  :class:`~maitred.gateway.passthrough.Relay` for that upstream, which delivers them as sent.
* :class:`ListingProxy` lists an HTTP upstream in every era it speaks outside a request (the
  catalog is their union) and in the client's era within one; :func:`era_hold` is how the
  gate learns that a tool is listed only to the other era.

The gate decides on the components (:mod:`maitred.gateway.calls`); nothing here decides.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import nullcontext, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

import anyio
import mcp_types as mt  # the MCP wire types (`mcp.types` re-exports them)
from fastmcp.client import Client
from fastmcp.client.transports import ClientTransport, StdioTransport, StreamableHttpTransport
from fastmcp.prompts import Prompt, PromptResult
from fastmcp.resources import Resource, ResourceResult, ResourceTemplate
from fastmcp.server.context import Context
from fastmcp.server.dependencies import get_context
from fastmcp.server.providers.proxy import (
    ProxyClient,
    ProxyPrompt,
    ProxyProvider,
    ProxyResource,
    ProxyTemplate,
    ProxyTool,
)
from fastmcp.tools import Tool, ToolResult
from fastmcp.utilities.versions import VersionSpec
from mcp.client.extension import ClientExtension
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from maitred.actions.model import TOOL_UNKNOWN, Hold
from maitred.gateway.config import Upstream

if TYPE_CHECKING:
    from maitred.gateway.passthrough import Relay, Target

#: how long a listing serves lookups (a call's tool) before the upstream is asked again
CACHE_TTL_S = 300.0

C = TypeVar("C")


def sdk_request() -> ServerRequestContext[Any, Any] | None:
    """The MCP SDK's own context of the client request being served (``None`` outside one).

    FastMCP's public wrapper of it (``Context.request_context``) turns the JSON-RPC id into a
    string and leaves out the raw params; a relayed message must name the request by its own
    id, and a forwarded call must know whether ``arguments`` was sent at all, so this reads
    the SDK context FastMCP keeps beside it (its documented escape hatch, ``_srctx``).
    """
    try:
        ctx = get_context()
    except RuntimeError:
        return None
    request = ctx.request_context
    return request._srctx if request is not None else None


def _serving(relay: Relay | None) -> Any:
    """The relay's in-flight registration for the current request (or nothing)."""
    return relay.serving() if relay is not None else nullcontext()


class UpstreamTool(ProxyTool):
    """A proxied tool that lists as its upstream listed it and forwards arguments as sent."""

    _wire: mt.Tool | None = None
    _relay: Relay | None = None

    def adopt(self, wire: mt.Tool, relay: Relay | None) -> UpstreamTool:
        """Keep the object the upstream listed (what this lists as) and its relay."""
        self._wire = wire
        self._relay = relay
        return self

    def to_mcp_tool(self, **overrides: Any) -> mt.Tool:
        wire = self._wire
        if wire is None:
            return super().to_mcp_tool(**overrides)
        update: dict[str, Any] = {}
        if overrides.get("name", wire.name) != wire.name:
            update["name"] = overrides["name"]
        if "outputSchema" in overrides and overrides["outputSchema"] != wire.output_schema:
            update["output_schema"] = overrides["outputSchema"]  # the era's wrapping of it
        return wire.model_copy(update=update) if update else wire

    async def run(self, arguments: dict[str, Any], context: Context | None = None) -> ToolResult:
        request = sdk_request()
        sent = request.params if request is not None else None
        if not arguments and sent is not None and "arguments" not in sent:
            # the client sent no arguments member; FastMCP made it {}; the upstream gets none
            arguments = cast(dict[str, Any], None)
        with _serving(self._relay):
            return await super().run(arguments, context)


class UpstreamResource(ProxyResource):
    """A proxied resource that lists as its upstream listed it."""

    _wire: mt.Resource | None = None
    _relay: Relay | None = None

    def adopt(self, wire: mt.Resource, relay: Relay | None) -> UpstreamResource:
        """Keep the object the upstream listed (what this lists as) and its relay."""
        self._wire = wire
        self._relay = relay
        return self

    def to_mcp_resource(self, **overrides: Any) -> mt.Resource:
        if self._wire is None:
            return super().to_mcp_resource(**overrides)
        return self._wire

    async def read(self) -> ResourceResult:
        with _serving(self._relay):
            return await super().read()


class UpstreamTemplate(ProxyTemplate):
    """A proxied resource template that lists as its upstream listed it."""

    _wire: mt.ResourceTemplate | None = None
    _relay: Relay | None = None

    def adopt(self, wire: mt.ResourceTemplate, relay: Relay | None) -> UpstreamTemplate:
        """Keep the object the upstream listed (what this lists as) and its relay."""
        self._wire = wire
        self._relay = relay
        return self

    def to_mcp_template(self, **overrides: Any) -> mt.ResourceTemplate:
        if self._wire is None:
            return super().to_mcp_template(**overrides)
        return self._wire


class UpstreamPrompt(ProxyPrompt):
    """A proxied prompt that lists as its upstream listed it."""

    _wire: mt.Prompt | None = None
    _relay: Relay | None = None

    def adopt(self, wire: mt.Prompt, relay: Relay | None) -> UpstreamPrompt:
        """Keep the object the upstream listed (what this lists as) and its relay."""
        self._wire = wire
        self._relay = relay
        return self

    def to_mcp_prompt(self, **overrides: Any) -> mt.Prompt:
        if self._wire is None:
            return super().to_mcp_prompt(**overrides)
        return self._wire

    async def render(self, arguments: dict[str, Any]) -> PromptResult:  # type: ignore[override]
        with _serving(self._relay):
            return await super().render(arguments)


class KeptSession:
    """One client to a stdio upstream, entered once and kept: the session every forwarded call
    to that upstream goes over (see the module docstring).

    Calling it gives the kept client, entered first when there is none or when its session
    can no longer send (the upstream exited: the same check FastMCP's stdio transport makes
    before it reuses its kept-alive session, which then relaunches the server). A
    :class:`~fastmcp.server.providers.proxy.ProxyTool` built on it enters it again around each
    call, which only counts the call in. :meth:`drop` lets go of it (the gateway closes; a
    call over it failed), never closing the transport: the server stays up for the next one.
    """

    def __init__(self, factory: Callable[[], Client[Any]]) -> None:
        self.factory = factory
        self.client: Client[Any] | None = None
        self._opening = anyio.Lock()

    async def __call__(self) -> Client[Any]:
        client = self.client
        if client is not None and not _closed(client):
            return client
        async with self._opening:
            if self.client is not None and _closed(self.client):
                await self.drop()
            if self.client is None:
                fresh = self.factory()
                await fresh.__aenter__()  # type: ignore[no-untyped-call]
                self.client = fresh
            return self.client

    @property
    def closed(self) -> bool:
        """Whether there is no kept session that can send: none yet, or its upstream's end
        closed (the next call enters a fresh one, relaunching the server)."""
        return self.client is None or _closed(self.client)

    async def drop(self) -> None:
        """Let go of the kept client: its session stops once no call is on it."""
        client, self.client = self.client, None
        if client is not None:
            with suppress(Exception):
                await client.__aexit__(None, None, None)  # type: ignore[no-untyped-call]


def _closed(client: Client[Any]) -> bool:
    """Whether ``client``'s session can no longer send a request: it disconnected, or the
    upstream's end of its stream closed (the SDK's dispatcher marks itself closed then)."""
    if not client.is_connected():
        return True
    dispatcher = getattr(client.session, "_dispatcher", None)
    return bool(getattr(dispatcher, "_closed", False))


@dataclass
class _Listed(Generic[C]):
    items: Sequence[C]
    at: float
    by_key: Mapping[str, C]

    def fresh(self) -> bool:
        return time.monotonic() - self.at < CACHE_TTL_S


#: the connect mode of a handshake-era session (FastMCP's name for that era)
LEGACY = "legacy"
#: the cache key of a listing over every era an upstream speaks (a stdio upstream: its one)
EVERY_ERA = "*"
Kind = Literal["tools", "resources", "resource templates", "prompts"]


class Eras:
    """The protocol eras one HTTP upstream answers in, newest first, as its listings found
    them: connect modes (a 2026-07-28 version, or :data:`LEGACY`). Empty until it answered."""

    def __init__(self) -> None:
        self.spoken: list[str] = []

    def learn(self, mode: str) -> None:
        """The upstream answered a session in ``mode``."""
        if mode not in self.spoken:
            self.spoken = sorted([*self.spoken, mode], key=lambda m: (m == LEGACY, m))

    def reach(self, wanted: str | None) -> str:
        """The mode to reach the upstream in for a client of era ``wanted`` (``None``: no
        client request, the handshake era): the client's own when the upstream speaks it (or
        is not known yet), else the newest it speaks -- what the client's own connection
        would negotiate with it directly."""
        mode = wanted or LEGACY
        return mode if not self.spoken or mode in self.spoken else self.spoken[0]


class ListingProxy(ProxyProvider):
    """The components of one upstream, listed by the gateway itself (see the module docstring).

    **Eras.** An HTTP upstream may list differently to each protocol era (a tool only for
    2026-07-28 clients, another only for handshake-era ones). Within a client's request this
    lists (and looks up) in the era that client reaches the upstream in
    (:meth:`Eras.reach`), so each client sees what the upstream lists to its era; outside a
    request (at start, when an upstream joins) it lists in every era the upstream speaks --
    ``auto`` first (2026-07-28 when spoken), then the handshake era -- and returns their
    union, each name once (the newest era's object): the catalog the gateway's engines are built on.
    A stdio upstream is one session in one era: its one listing serves every client.

    Every fresh listing of the upstream's tools is handed to the ``listeners``
    (``listener(upstream name, tools)``), wherever FastMCP asks for one: a client's
    ``tools/list``, or a call's lookup once the cached list has expired. This is where the pins
    see an upstream change a tool while the gateway runs. ``capabilities`` are the upstream's as
    its latest listing connection reported them.
    """

    def __init__(
        self,
        factory: Callable[..., Client[Any]],
        upstream: Upstream,
        relay: Relay | None = None,
        eras: Eras | None = None,
    ) -> None:
        super().__init__(factory, cache_ttl=CACHE_TTL_S)
        self.factory = factory
        self.upstream = upstream.name
        self.config = upstream
        self.relay = relay
        self.eras = eras if eras is not None else Eras()
        self.listeners: list[Callable[[str, Sequence[Tool]], None]] = []
        self.capabilities: mt.ServerCapabilities | None = None
        #: the capabilities the upstream declared to each era it answered in
        self.capabilities_in: dict[str, mt.ServerCapabilities] = {}
        self.protocol_version: str | None = None
        self._listed: dict[tuple[Kind, str], _Listed[Any]] = {}
        #: a stdio upstream's one session, kept for its calls (``None``: an HTTP upstream,
        #: whose every request connects in its client's era with its client's capabilities)
        self.kept = None if upstream.url else KeptSession(factory)

    def declared(self, modern: bool) -> mt.ServerCapabilities | None:
        """The capabilities the upstream declares to clients of the 2026-07-28 era
        (``modern``) or of the handshake era; those of its latest listing where it was not
        reached in that era."""
        for mode, caps in self.capabilities_in.items():
            if (mode != LEGACY) == modern:
                return caps
        return self.capabilities

    def _era(self) -> str:
        """The cache key of the current request's listing (see the class docstring)."""
        if not self.config.url:
            return EVERY_ERA
        wanted = front_era()
        return EVERY_ERA if wanted is None else self.eras.reach(wanted)

    async def _ask(
        self, kind: Kind, fetch: Callable[[Client[Any]], Awaitable[list[Any]]], mode: str | None
    ) -> tuple[list[Any], str]:
        """One listing from the upstream in ``mode`` (``None``: the request's era) and the era
        it was answered in: ``[]`` when it does not serve ``kind``."""
        try:
            async with self.factory(mode) as client:
                found = await fetch(client)
                self.capabilities = client.server_capabilities or self.capabilities
                self.protocol_version = client.protocol_version or self.protocol_version
                modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
                spoken = str(client.protocol_version) if modern else LEGACY
                if client.server_capabilities is not None:
                    self.capabilities_in[spoken] = client.server_capabilities
                if self.config.url:
                    self.eras.learn(spoken)
                return found, spoken
        except MCPError as exc:
            if exc.error.code == mt.METHOD_NOT_FOUND:
                return [], mode or LEGACY
            raise
        except Exception as exc:  # the transport failed: one protocol error, naming it
            raise MCPError(
                mt.INTERNAL_ERROR,
                f"the upstream MCP server {self.upstream!r} could not list its {kind} "
                f"({type(exc).__name__}: {exc})",
            ) from exc

    async def _every_era(
        self, kind: Kind, fetch: Callable[[Client[Any]], Awaitable[list[Any]]]
    ) -> dict[str, list[Any]]:
        """``kind`` as listed to each era the upstream speaks (at least one, or the error)."""
        by_era: dict[str, list[Any]] = {}
        failed: MCPError | None = None
        for mode in ("auto", LEGACY):
            if mode == LEGACY and LEGACY in by_era:
                break  # `auto` found the handshake era only
            try:
                found, spoken = await self._ask(kind, fetch, mode)
            except MCPError as exc:  # e.g. a 2026-07-28-only upstream refuses the handshake
                failed = failed or exc
                continue
            by_era[spoken] = found
        if not by_era:
            assert failed is not None
            raise failed
        return by_era

    async def _fresh(
        self,
        kind: Kind,
        fetch: Callable[[Client[Any]], Awaitable[list[Any]]],
        build: Callable[[Any], Any],
        key: Callable[[Any], str],
    ) -> list[Any]:
        """A fresh listing of ``kind`` in the request's era (every era outside a request),
        built into components and cached for lookups."""
        era = self._era()
        if era == EVERY_ERA and self.config.url:
            union: dict[str, Any] = {}
            for found in (await self._every_era(kind, fetch)).values():
                for wire in found:
                    union.setdefault(key(wire), wire)
            wires = list(union.values())
        else:
            wires, _ = await self._ask(kind, fetch, None if era == EVERY_ERA else era)
        items = [build(w) for w in wires]
        by_key = {key(w): item for w, item in zip(wires, items, strict=True)}
        self._listed[(kind, era)] = _Listed(items, time.monotonic(), by_key)
        return items

    def forget(self, kind: Literal["tools", "resources", "prompts"]) -> None:
        """Drop every cached listing of ``kind`` (the upstream said it changed)."""
        kinds: tuple[Kind, ...] = (
            ("resources", "resource templates") if kind == "resources" else (kind,)
        )
        for key in [k for k in self._listed if k[0] in kinds]:
            del self._listed[key]

    def _cached(self, kind: Kind) -> _Listed[Any] | None:
        listed = self._listed.get((kind, self._era()))
        return listed if listed is not None and listed.fresh() else None

    async def _list_tools(self) -> Sequence[Tool]:
        calls = self.kept if self.kept is not None else self.client_factory
        tools: list[Tool] = await self._fresh(
            "tools",
            lambda c: c.list_tools(),
            lambda t: cast(UpstreamTool, UpstreamTool.from_mcp_tool(calls, t)).adopt(t, self.relay),
            lambda t: str(t.name),
        )
        for listener in self.listeners:
            listener(self.upstream, tools)
        return tools

    async def _get_tool(self, name: str, version: VersionSpec | None = None) -> Tool | None:
        listed = self._cached("tools")
        if listed is None:
            await self._list_tools()
            listed = self._listed[("tools", self._era())]
        found: Tool | None = listed.by_key.get(name)
        return found

    async def lists_tool(self, name: str) -> bool:
        """Whether the upstream lists the tool ``name`` to the era of the request being
        served (outside a request, or for a stdio upstream: to any client)."""
        return await self._get_tool(name) is not None

    async def tool(self, name: str) -> UpstreamTool | None:
        """The tool ``name`` as the upstream lists it to the era of the request being served
        (from the cached listing; listed afresh once it expired), to forward a call to."""
        found = await self._get_tool(name)
        return found if isinstance(found, UpstreamTool) else None

    async def close(self) -> None:
        """Let go of the session kept for calls (the upstream itself is the transport's)."""
        if self.kept is not None:
            await self.kept.drop()

    async def _list_resources(self) -> Sequence[Resource]:
        return await self._fresh(
            "resources",
            lambda c: c.list_resources(),
            lambda r: cast(
                UpstreamResource, UpstreamResource.from_mcp_resource(self.client_factory, r)
            ).adopt(r, self.relay),
            lambda r: str(r.uri),
        )

    async def _get_resource(self, uri: str, version: VersionSpec | None = None) -> Resource | None:
        listed = self._cached("resources")
        if listed is None:
            await self._list_resources()
            listed = self._listed[("resources", self._era())]
        found: Resource | None = listed.by_key.get(uri)
        return found

    async def _list_resource_templates(self) -> Sequence[ResourceTemplate]:
        return await self._fresh(
            "resource templates",
            lambda c: c.list_resource_templates(),
            lambda t: cast(
                UpstreamTemplate, UpstreamTemplate.from_mcp_template(self.client_factory, t)
            ).adopt(t, self.relay),
            lambda t: str(t.uri_template),
        )

    async def _templates(self) -> Sequence[ResourceTemplate]:
        listed = self._cached("resource templates")
        return listed.items if listed is not None else await self._list_resource_templates()

    async def _get_resource_template(
        self, uri: str, version: VersionSpec | None = None
    ) -> ResourceTemplate | None:
        return next((t for t in await self._templates() if t.matches(uri) is not None), None)

    async def has_template(self, uri_template: str) -> bool:
        """Whether this upstream lists a resource template with exactly this URI template."""
        return any(t.uri_template == uri_template for t in await self._templates())

    async def _list_prompts(self) -> Sequence[Prompt]:
        return await self._fresh(
            "prompts",
            lambda c: c.list_prompts(),
            lambda p: cast(
                UpstreamPrompt, UpstreamPrompt.from_mcp_prompt(self.client_factory, p)
            ).adopt(p, self.relay),
            lambda p: str(p.name),
        )

    async def _get_prompt(self, name: str, version: VersionSpec | None = None) -> Prompt | None:
        listed = self._cached("prompts")
        if listed is None:
            await self._list_prompts()
            listed = self._listed[("prompts", self._era())]
        found: Prompt | None = listed.by_key.get(name)
        return found


#: why a call to a tool its upstream does not list to the client's era is refused (the action
#: gate's own words for an unknown tool: the model learns nothing of tools it was not shown)
_UNLISTED = "that tool is not available in this conversation; use one of the tools you were offered"


async def era_hold(proxy: ProxyProvider | None, name: str) -> Hold | None:
    """A hold for a call to ``name`` when ``proxy``'s upstream does not list it to the era of
    the client's request (an HTTP upstream that lists it only to the other era): the gate
    refuses it ``TOOL_UNKNOWN``, as the upstream would answer that client directly, and logs
    it. ``None`` when it is listed, or when the upstream cannot be asked now (the call is then
    decided and forwarded as before, and fails there)."""
    if not isinstance(proxy, ListingProxy) or not proxy.config.url:
        return None
    try:
        if await proxy.lists_tool(name):
            return None
    except MCPError:
        return None
    return Hold(
        TOOL_UNKNOWN,
        _UNLISTED,
        f"the upstream {proxy.upstream!r} does not list {name!r} to this client's protocol era",
    )


def transport_for(upstream: Upstream) -> ClientTransport:
    """The transport to ``upstream``: it launches a stdio server (kept alive between
    connections, relaunched after a crash), or posts to a streamable-HTTP URL."""
    if upstream.url:
        return StreamableHttpTransport(upstream.url, headers=dict(upstream.headers) or None)
    return StdioTransport(
        upstream.command, list(upstream.args), env=dict(upstream.env) or None, keep_alive=True
    )


def front_era() -> str | None:
    """The connect mode that speaks the era of the client's request being served: its
    2026-07-28 version, ``"legacy"`` for a handshake-era connection, ``None`` outside one."""
    try:
        ctx = get_context()
    except RuntimeError:
        return None
    request = ctx.request_context
    if request is None:
        return None
    version = request.protocol_version
    return version if version in MODERN_PROTOCOL_VERSIONS else "legacy"


class UpstreamClient(ProxyClient[Any]):
    """A client to one upstream for one request: its log messages and notifications go to the
    upstream's relay, tagged with ``target``, the request it was made for (``None``: a session
    the gateway keeps for itself); a handshake-era session of a client that set a log
    ``level`` is told that level first."""

    def __init__(
        self,
        transport: ClientTransport,
        relay: Relay | None,
        level: str | None,
        target: Target | None,
        **kw: Any,
    ) -> None:
        if relay is not None:

            async def on_log(message: mt.LoggingMessageNotificationParams) -> None:
                await relay.on_log(target, message)

            async def on_message(message: mt.ServerNotification | Exception) -> None:
                await relay.on_message(target, message)

            kw["log_handler"] = on_log
            kw["message_handler"] = on_message
        super().__init__(transport, forward_incoming_headers=False, **kw)
        self.level = level

    async def __aenter__(self) -> UpstreamClient:
        await super().__aenter__()  # type: ignore[no-untyped-call]
        caps = self.server_capabilities
        legacy = self.protocol_version not in MODERN_PROTOCOL_VERSIONS
        if self.level and legacy and caps is not None and caps.logging is not None:
            await self.session.set_logging_level(cast(mt.LoggingLevel, self.level))
        return self


#: the client capabilities a proxy client declares by installing a handler, by its keyword
_HANDLERS: tuple[tuple[str, str], ...] = (
    ("sampling", "sampling_handler"),
    ("elicitation", "elicitation_handler"),
    ("roots", "roots"),
)


def undeclared_handlers() -> dict[str, None]:
    """The forwarding handlers to leave out of an upstream client made for the request being
    served: one per capability (sampling, elicitation, roots) its client did not declare, so
    the upstream sees the client's own capabilities (and refuses a tool that needs one with
    -32021, as it would refuse the client directly). Nothing outside a request."""
    request = sdk_request()
    declared = request.session.client_capabilities if request is not None else None
    if declared is None:
        return {}
    return {kw: None for field, kw in _HANDLERS if getattr(declared, field) is None}


def client_factory(
    upstream: Upstream, relay: Relay | None, eras: Eras | None = None
) -> Callable[..., Client[Any]]:
    """A fresh :class:`UpstreamClient` per request: ``fresh(mode)`` connects in ``mode``, by
    default in the era the request's client reaches the upstream in (``eras``,
    :meth:`Eras.reach`; see the module docstring)."""
    transport = transport_for(upstream)
    known = eras if eras is not None else Eras()

    def fresh(mode: str | None = None, extensions: Sequence[ClientExtension] = ()) -> Client[Any]:
        declared: dict[str, Any] = {}
        if not upstream.url:
            mode = "auto"  # stdio: one session for every client, in the era it negotiates
        else:
            mode = mode or known.reach(front_era())
            declared = undeclared_handlers()  # a session of its own: the client's capabilities
        level = relay.level() if relay is not None and upstream.url else None
        target = relay.target() if relay is not None else None
        return UpstreamClient(
            transport,
            relay,
            level,
            target,
            mode=mode,
            name=upstream.name,
            timeout=upstream.timeout_s,
            **declared,
            **({"extensions": list(extensions)} if extensions else {}),
        )

    return fresh


def proxy_for(upstream: Upstream) -> ListingProxy:
    """``upstream``'s provider on its own, nothing relayed (what ``maitred mcp pin`` lists)."""
    eras = Eras()
    return ListingProxy(client_factory(upstream, None, eras), upstream, eras=eras)


def declaring(proxy: ListingProxy, *extensions: ClientExtension) -> Callable[[], Client[Any]]:
    """A client factory for ``proxy``'s upstream like its own (the same transport, era, relay
    and the client's own capabilities), whose connections declare ``extensions`` too (the
    skills and tasks extensions: :mod:`maitred.gateway.skillset`, :mod:`maitred.gateway.tasks`).
    A stdio upstream's one kept session declares what it declared when it opened."""

    def fresh() -> Client[Any]:
        return proxy.factory(extensions=list(extensions))

    return fresh
