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
* :func:`client_factory` gives each request its own client to the upstream
  (:class:`UpstreamClient`): over streamable HTTP a session of its own, in the protocol era
  the client's own connection negotiated (a handshake-era client reaches a handshake-era
  upstream session, so ``logging/setLevel`` and ``resources/subscribe`` mean there what they
  mean to the client); over stdio the one process and its one session, shared (the era it
  negotiated at launch). Its log messages and notifications go to the gateway's
  :class:`~maitred.gateway.passthrough.Relay` for that upstream, which delivers them as sent.

The gate decides on the components (:mod:`maitred.gateway.server`); nothing here decides.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

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


@dataclass
class _Listed(Generic[C]):
    items: Sequence[C]
    at: float

    def fresh(self) -> bool:
        return time.monotonic() - self.at < CACHE_TTL_S


class ListingProxy(ProxyProvider):
    """The components of one upstream, listed by the gateway itself (see the module docstring).

    Every fresh listing of the upstream's tools is handed to the ``listeners``
    (``listener(upstream name, tools)``), wherever FastMCP asks for one: a client's
    ``tools/list``, or a call's lookup once the cached list has expired. This is where the pins
    see an upstream change a tool while the gateway runs. ``capabilities`` are the upstream's as
    its latest listing connection reported them.
    """

    def __init__(
        self,
        factory: Callable[[], Client[Any]],
        upstream: Upstream,
        relay: Relay | None = None,
    ) -> None:
        super().__init__(factory, cache_ttl=CACHE_TTL_S)
        self.factory = factory
        self.upstream = upstream.name
        self.config = upstream
        self.relay = relay
        self.listeners: list[Callable[[str, Sequence[Tool]], None]] = []
        self.capabilities: mt.ServerCapabilities | None = None
        self.protocol_version: str | None = None
        self._tools: _Listed[Tool] | None = None
        self._resources: _Listed[Resource] | None = None
        self._templates: _Listed[ResourceTemplate] | None = None
        self._prompts: _Listed[Prompt] | None = None

    async def _ask(self, kind: str, fetch: Callable[[Client[Any]], Awaitable[list[C]]]) -> list[C]:
        """One listing from the upstream: ``[]`` when it does not serve ``kind``."""
        try:
            async with self.factory() as client:
                found = await fetch(client)
                self.capabilities = client.server_capabilities or self.capabilities
                self.protocol_version = client.protocol_version or self.protocol_version
                return found
        except MCPError as exc:
            if exc.error.code == mt.METHOD_NOT_FOUND:
                return []
            raise
        except Exception as exc:  # the transport failed: one protocol error, naming it
            raise MCPError(
                mt.INTERNAL_ERROR,
                f"the upstream MCP server {self.upstream!r} could not list its {kind} "
                f"({type(exc).__name__}: {exc})",
            ) from exc

    async def _list_tools(self) -> Sequence[Tool]:
        wire = await self._ask("tools", lambda c: c.list_tools())
        tools: list[Tool] = [
            cast(UpstreamTool, UpstreamTool.from_mcp_tool(self.client_factory, t)).adopt(
                t, self.relay
            )
            for t in wire
        ]
        self._tools = _Listed(tools, time.monotonic())
        for listener in self.listeners:
            listener(self.upstream, tools)
        return tools

    async def _get_tool(self, name: str, version: VersionSpec | None = None) -> Tool | None:
        listed = self._tools
        tools = listed.items if listed is not None and listed.fresh() else await self._list_tools()
        return next((t for t in tools if t.name == name), None)

    async def _list_resources(self) -> Sequence[Resource]:
        wire = await self._ask("resources", lambda c: c.list_resources())
        resources: list[Resource] = [
            cast(
                UpstreamResource, UpstreamResource.from_mcp_resource(self.client_factory, r)
            ).adopt(r, self.relay)
            for r in wire
        ]
        self._resources = _Listed(resources, time.monotonic())
        return resources

    async def _get_resource(self, uri: str, version: VersionSpec | None = None) -> Resource | None:
        listed = self._resources
        found = listed.items if listed is not None and listed.fresh() else None
        resources = found if found is not None else await self._list_resources()
        return next((r for r in resources if str(r.uri) == uri), None)

    async def _list_resource_templates(self) -> Sequence[ResourceTemplate]:
        wire = await self._ask("resource templates", lambda c: c.list_resource_templates())
        templates: list[ResourceTemplate] = [
            cast(
                UpstreamTemplate, UpstreamTemplate.from_mcp_template(self.client_factory, t)
            ).adopt(t, self.relay)
            for t in wire
        ]
        self._templates = _Listed(templates, time.monotonic())
        return templates

    async def _get_resource_template(
        self, uri: str, version: VersionSpec | None = None
    ) -> ResourceTemplate | None:
        listed = self._templates
        found = listed.items if listed is not None and listed.fresh() else None
        templates = found if found is not None else await self._list_resource_templates()
        return next((t for t in templates if t.matches(uri) is not None), None)

    async def has_template(self, uri_template: str) -> bool:
        """Whether this upstream lists a resource template with exactly this URI template."""
        listed = self._templates
        found = listed.items if listed is not None and listed.fresh() else None
        templates = found if found is not None else await self._list_resource_templates()
        return any(t.uri_template == uri_template for t in templates)

    async def _list_prompts(self) -> Sequence[Prompt]:
        wire = await self._ask("prompts", lambda c: c.list_prompts())
        prompts: list[Prompt] = [
            cast(UpstreamPrompt, UpstreamPrompt.from_mcp_prompt(self.client_factory, p)).adopt(
                p, self.relay
            )
            for p in wire
        ]
        self._prompts = _Listed(prompts, time.monotonic())
        return prompts

    async def _get_prompt(self, name: str, version: VersionSpec | None = None) -> Prompt | None:
        listed = self._prompts
        prompts = (
            listed.items if listed is not None and listed.fresh() else await self._list_prompts()
        )
        return next((p for p in prompts if p.name == name), None)


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


def client_factory(upstream: Upstream, relay: Relay | None) -> Callable[[], Client[Any]]:
    """A fresh :class:`UpstreamClient` per request (see the module docstring for the era)."""
    transport = transport_for(upstream)

    def fresh() -> Client[Any]:
        mode = "auto"  # stdio: one session for every client, in the era it negotiates
        if upstream.url:
            mode = front_era() or "legacy"  # at start: the era most clients speak
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
        )

    return fresh


def proxy_for(upstream: Upstream) -> ListingProxy:
    """``upstream``'s provider on its own, nothing relayed (what ``maitred mcp pin`` lists)."""
    return ListingProxy(client_factory(upstream, None), upstream)


def declaring(proxy: ListingProxy, *extensions: ClientExtension) -> Callable[[], Client[Any]]:
    """A client factory for ``proxy``'s upstream like its own (the same transport, era and
    relay), whose connections declare ``extensions`` too (the skills and tasks extensions:
    :mod:`maitred.gateway.skillset`, :mod:`maitred.gateway.tasks`). A stdio upstream's one
    kept session declares what it declared when it opened."""

    def fresh() -> Client[Any]:
        base = proxy.factory()
        relay = proxy.relay
        return UpstreamClient(
            base.transport,
            relay,
            base.level if isinstance(base, UpstreamClient) else None,
            relay.target() if relay is not None else None,
            mode=base.mode,
            name=proxy.upstream,
            timeout=proxy.config.timeout_s,
            extensions=list(extensions),
        )

    return fresh
