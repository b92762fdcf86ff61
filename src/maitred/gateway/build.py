"""Assembling the gateway: the FastMCP server over the upstreams, its middlewares and routes.

:func:`open_gateway` connects every upstream (a stdio subprocess or a streamable-HTTP URL), reads
each one's ``tools/list``, builds the engines (:class:`~maitred.gateway.keeper.GatewayEngines`) over
those that answered (a broken sidecar or a tool name two upstreams share fails here, before any
client is served; one that did not answer joins when it does, :mod:`maitred.gateway.lifecycle`), and
returns a FastMCP server that serves one proxy provider per serving upstream, with the gate's
middleware (:class:`~maitred.gateway.server.GateMiddleware`) standing between every client and every
upstream, and, over HTTP, the operator's routes beside the MCP endpoint. :func:`watching` runs the
state watch and the upstreams' retries beside the server; :func:`close_gateway` closes what
:func:`open_gateway` opened. Serving it is :mod:`maitred.gateway.serve`'s.

Upstreams never see the client's headers (the proxies do not forward them), so a tenant's
token is never passed on to an upstream; an HTTP upstream gets the ``headers`` its config
names.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
from fastmcp import FastMCP
from fastmcp.server.providers.proxy import ProxyProvider
from fastmcp.tools import Tool
from starlette.middleware import Middleware as AsgiMiddleware  # FastMCP's HTTP app is Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from maitred.contract.tool_sidecar import SurfaceNames
from maitred.conversation.finding import (
    CALL_TOOL_SCHEMA,
    FIND_TOOLS_SCHEMA,
    call_tool_description,
    find_tools_description,
)
from maitred.errors import ConfigError
from maitred.gateway import hosts
from maitred.gateway.approval import Approvals
from maitred.gateway.auth import GatewayAuth
from maitred.gateway.channels import StreamingServer, sealing
from maitred.gateway.config import GatewayConfig, Upstream
from maitred.gateway.hosts import HostGuard
from maitred.gateway.http_config import HttpServer
from maitred.gateway.jwt import JwtVerifier
from maitred.gateway.keeper import FIND_TOOLS, GatewayEngines
from maitred.gateway.lifecycle import Listing, Upstreams
from maitred.gateway.listings import CACHE_SCOPE, listing_ttl_s
from maitred.gateway.metrics import CONTENT_TYPE
from maitred.gateway.passthrough import EraMethods, Passthrough
from maitred.gateway.rates import open_limiter
from maitred.gateway.server import GateMiddleware, tool_json
from maitred.gateway.skillset import GatedSkills, load_skills
from maitred.gateway.surfaces import open_surfaces
from maitred.gateway.tasks import TaskBook, TasksExtension, Who, offers_tasks
from maitred.gateway.upstreams import proxy_for
from maitred.tracing import Tracing


def gate_of(server: FastMCP[Any]) -> GateMiddleware:
    """The :class:`GateMiddleware` of a server :func:`open_gateway` built."""
    return next(m for m in server.middleware if isinstance(m, GateMiddleware))


async def close_gateway(server: FastMCP[Any], engines: GatewayEngines) -> None:
    """Close what :func:`open_gateway` opened: the upstream sessions kept for resource
    subscriptions, the engines, and the traces (exported)."""
    for middleware in server.middleware:
        if isinstance(middleware, Passthrough):
            await middleware.close()
    engines.close()
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


async def upstream_surfaces(proxy: ProxyProvider, upstream: Upstream) -> SurfaceNames:
    """What ``upstream`` lists besides tools, through ``proxy`` (before any gate): its
    resources' URIs, its templates and its prompts' names (a server without the capability
    lists none).

    Raises:
        ConfigError: the upstream failed to answer one of the three listings.
    """
    try:
        resources = [str(r.uri) for r in await proxy.list_resources()]
        templates = [str(t.uri_template) for t in await proxy.list_resource_templates()]
        prompts = [str(p.name) for p in await proxy.list_prompts()]
    except Exception as exc:
        raise ConfigError(
            f"upstream {upstream.name!r} ({upstream.where}): could not list its resources, "
            f"resource templates and prompts ({type(exc).__name__}: {exc}); the gateway "
            "needs them at start to gate them"
        ) from None
    return SurfaceNames(tuple(resources), tuple(templates), tuple(prompts))


async def _listing(proxy: ProxyProvider, upstream: Upstream) -> Listing:
    """Everything ``upstream`` lists, through ``proxy`` (see :func:`upstream_tools`)."""
    tools = await upstream_tools(proxy, upstream)
    return Listing(tools, await upstream_surfaces(proxy, upstream))


async def open_gateway(
    config: GatewayConfig, *, http: bool = False, tracing: Tracing | None = None
) -> tuple[FastMCP[Any], GatewayEngines]:
    """The gateway server for ``config`` and the engines it starts with (close them when done:
    they own the decision log; those serving now are ``gate_of(server).engines``).

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
    engines = await anyio.to_thread.run_sync(lambda: GatewayEngines.open(config, tools, listed))
    try:
        skills = load_skills(config)
        open_surfaces(config, engines, listed, skills=skills.surfaces if skills else ())
    except BaseException:
        engines.close()
        raise
    where = config.server or HttpServer()
    limit = where.max_sessions
    tasks = (
        TaskBook(engines.engine.log, engines.engine.now) if offers_tasks(config.upstreams) else None
    )
    gate = GateMiddleware(
        engines,
        account=None if http else config.account,
        max_sessions=limit,
        tracing=Tracing.start(config.tracing) if tracing is None else tracing,
        surfaces=True,
        limiter=limiter,
        upstreams=upstreams,
        tasks=tasks,
        approvals=Approvals(where.request_state_ttl_s),  # a yes lives as its sealed state
    )
    passthrough.serve_listen(gate.listen)
    auth = (
        GatewayAuth(
            config.tokens,
            verifier,
            path=where.path,
            scopes_supported=sorted({s for t in engines.engine.catalog for s in t.contract.scopes}),
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
        request_state_security=sealing(where, config.source),  # shared by replicas, or ours
    )
    gate.watch_pins(list(proxies.values()))
    for proxy in proxies.values():
        proxy.listeners.append(upstreams.observed)  # a tool it adds joins the catalog

    def serving(name: str) -> None:  # an upstream's proxy is served from now on
        passthrough.serve(proxies[name])
        if passthrough.completions:  # (again, when another one joins: it replaces the one)
            server.add_completion_handler(passthrough.complete)

    upstreams.attach(server, gate, auth, serving)  # those that answered, in the config's order
    if engines.finder is not None:

        def find_tools(need: str = "", needs: Sequence[str] = ()) -> dict[str, Any]:
            # answered by GateMiddleware, which knows the session; never reached
            raise RuntimeError("find_tools is answered by the gateway's middleware")

        def call_tool(name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
            # unwrapped by GateMiddleware into the call it names; never reached
            raise RuntimeError("call_tool is unwrapped by the gateway's middleware")

        runs = engines.call_tool
        found = Tool.from_function(
            find_tools, name=FIND_TOOLS, description=find_tools_description(runs)
        )
        server.add_tool(found.model_copy(update={"parameters": FIND_TOOLS_SCHEMA}))
        caller = Tool.from_function(call_tool, name=runs, description=call_tool_description())
        # no output schema: the result is the named tool's, whatever it returns (a client
        # checks a result against the schema of the tool it called: call_tool's)
        server.add_tool(
            caller.model_copy(update={"parameters": CALL_TOOL_SCHEMA, "output_schema": None})
        )
    server.add_middleware(EraMethods())  # outermost: a method the request's era lacks is none
    server.add_middleware(gate)
    if gate.surface_guard is not None:
        server.add_middleware(gate.surface_guard)  # inner: sees only calls the gate let through
    server.add_middleware(passthrough)
    if tasks is not None:
        who = Who(gate.keeper_now, lambda tool: gate.engines.owners.get(tool))
        server.add_extension(TasksExtension(tasks, passthrough.proxies, who, gate._engine))
    if skills is not None:  # the gateway's own skills, gated like its tools (.skillset)
        server.add_provider(skills.provider)
    if skills is not None or engines.skill_upstreams:  # and the upstreams' its sidecars name
        server.add_extension(GatedSkills(skills, gate, passthrough.proxies))
    if http:
        _add_routes(server, gate)
    return server, engines


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
