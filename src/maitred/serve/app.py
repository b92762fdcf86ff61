"""The HTTP API of ``maitred serve``: a Starlette app over one :class:`.Service`.

Why Starlette under uvicorn: the API is seven routes of JSON in and JSON out, and Starlette is
a small, typed ASGI toolkit that does routing, requests and responses and nothing else -- no
dependency injection, no model-driven validation, no magic on top. FastAPI is Starlette plus
such a layer; here it would add a second way of declaring the same request shapes that
:mod:`maitred.serve.requests` already checks with messages naming the field, and an OpenAPI
generator we do not need for seven routes described by hand (:mod:`maitred.serve.openapi`,
tested against the routes and against real responses). uvicorn is the ASGI server.

Routes (every ``/v1`` route needs ``Authorization: Bearer <token>``)::

    POST /v1/turns         route a message: the menu (format per request), the blocked skills
                           with the predicates that fired, the turn id
    POST /v1/calls/check   allow or reject a tool call of a session
    GET  /v1/funnel        the funnel of the tenant's own turns
    GET  /healthz          the process is up
    GET  /readyz           catalog loaded, log writable, state store reachable (503 if not);
                           the live catalog version and the last rejected reload
    GET  /metrics          Prometheus text
    GET  /openapi.json     this API's description

Engine calls run on worker threads, so a state fetch waiting on its deadline never blocks the
event loop; at most :data:`ENGINE_THREADS` at a time, admitted first come first served (an
:class:`anyio.CapacityLimiter`). The engine runs one call at a time anyway (the service's
lock), so more threads would only queue on that lock, which is not fair: under 16 concurrent
clients some requests then wait many turns and the p99 grows. A few threads are enough to
keep the next request decided while earlier ones wait for their commit (group commit).
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from maitred.ratelimit import Limiter
from maitred.serve.config import Limits
from maitred.serve.metrics import CONTENT_TYPE, Metrics
from maitred.serve.openapi import openapi
from maitred.serve.rates import admit, mutates
from maitred.serve.reload import Reloader
from maitred.serve.requests import Problem, authenticate, parse_check, parse_turn, read_json
from maitred.serve.service import Service
from maitred.serve.traces import Traced, note_check, note_turn
from maitred.tracing import OFF, Tracing, trace_id_of

Handler = Callable[[Request], Awaitable[Response]]
T = TypeVar("T")
#: engine calls in flight at once (one decides, the others wait for their commit)
ENGINE_THREADS = 4


def create_app(
    service: Service,
    limits: Limits,
    *,
    on_shutdown: Callable[[], None] | None = None,
    reloader: Reloader | None = None,
    tracing: Tracing = OFF,
    limiter: Limiter | None = None,
) -> ASGIApp:
    """The ASGI app: the routes above, each error a JSON body, every request counted.

    Args:
        service: the engine behind the routes.
        limits: the body limit (and the session bounds the service already holds).
        on_shutdown: called when the server shuts down (``maitred serve`` closes the engine
            and its log there: uvicorn re-raises SIGTERM after its shutdown, so code after
            ``uvicorn.run`` never runs on a signal).
        reloader: polls the catalog files while the app runs (hot reload), stopped before
            ``on_shutdown`` is called.
        tracing: a span per ``/v1`` request with the turn or check inside it
            (:mod:`maitred.serve.traces`); off by default. Its owner closes it.
        limiter: the rate limits of turns and checks (:mod:`maitred.serve.rates`: 429 with
            ``Retry-After``); ``None``: none.
    """

    engine_threads = _Workers(ENGINE_THREADS)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if reloader is not None:
            reloader.start()
        try:
            yield
        finally:
            if reloader is not None:
                reloader.stop()
            if on_shutdown is not None:
                on_shutdown()

    async def turns(request: Request) -> Response:
        tenant = authenticate(request, service.tenants)
        req = parse_turn(await read_json(request, limits.max_body_bytes))
        if not tenant.owns(req.account):
            raise Problem(
                403,
                "account_forbidden",
                f"account {req.account!r} is not one of tenant {tenant.name!r}'s accounts",
                field="account",
            )
        await admit(limiter, service.metrics, tenant)
        with tracing.span("maitred.turn") as span:
            out = await engine_threads.run(service.turn, tenant, req)
            note_turn(span, tracing, tenant, service.run_ids[tenant.name], out)
        return JSONResponse(out)

    async def check(request: Request) -> Response:
        tenant = authenticate(request, service.tenants)
        req = parse_check(await read_json(request, limits.max_body_bytes))
        writes = limiter is not None and mutates(service.engine, req.name)
        await admit(limiter, service.metrics, tenant, req.name, mutates=writes)
        with tracing.span("maitred.check") as span:
            trace_id = trace_id_of(span, request.headers)  # tracing off: the caller's header
            out = await engine_threads.run(service.check, tenant, req, trace_id)
            note_check(span, tenant, req.name, out)
        return JSONResponse(out)

    async def funnel(request: Request) -> Response:
        tenant = authenticate(request, service.tenants)
        run_id = request.query_params.get("run_id") or None
        return JSONResponse(await engine_threads.run(service.funnel, tenant, run_id))

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        checks = await engine_threads.run(service.ready)
        ready = all(c.ok for c in checks.values())
        body = {
            "ready": ready,
            "checks": {k: {"ok": c.ok, "detail": c.detail} for k, c in checks.items()},
        }
        return JSONResponse(body, status_code=200 if ready else 503)

    async def metrics(request: Request) -> Response:
        return Response(service.metrics.render(), media_type=CONTENT_TYPE)

    async def spec(request: Request) -> Response:
        return JSONResponse(openapi())

    routes = [
        Route("/v1/turns", _answering(turns, service.metrics), methods=["POST"]),
        Route("/v1/calls/check", _answering(check, service.metrics), methods=["POST"]),
        Route("/v1/funnel", _answering(funnel, service.metrics), methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/openapi.json", spec, methods=["GET"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    counted = _Counted(app, service, {r.path for r in routes})
    if not tracing.enabled:
        return counted
    return Traced(counted, tracing, frozenset(r.path for r in routes if r.path.startswith("/v1/")))


def _answering(handler: Handler, metrics: Metrics) -> Handler:
    """``handler``, with a :class:`Problem` it raises turned into its JSON error response.

    A 4xx is the client's error and is counted as such (``maitred_refused_requests_total``
    by code), never as an engine error: only the service's 503s count there.
    """

    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except Problem as problem:
            if problem.status < 500:
                metrics.refused.labels(problem.code).inc()
            return JSONResponse(problem.body(), problem.status, headers=problem.headers)

    return wrapped


class _Workers:
    """Runs blocking calls on worker threads, at most ``n`` at once, first come first served.

    The limiter is made on first use: it belongs to the event loop that serves the app.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self._limiter: anyio.CapacityLimiter | None = None

    async def run(self, call: Callable[..., T], *args: Any) -> T:
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.n)
        return await anyio.to_thread.run_sync(functools.partial(call, *args), limiter=self._limiter)


class _Counted:
    """ASGI middleware: counts every HTTP request by route, method and status, and times it.

    The route label is the request path when it is one of the app's routes and ``other``
    otherwise, so a scan of random paths cannot grow the metrics without bound.
    """

    def __init__(self, app: ASGIApp, service: Service, paths: set[str]) -> None:
        self.app = app
        self.metrics = service.metrics
        self.paths = frozenset(paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        route = scope["path"] if scope["path"] in self.paths else "other"
        status: dict[str, Any] = {"code": 500}
        start = time.perf_counter()

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            self.metrics.latency.labels(route).observe(time.perf_counter() - start)
            self.metrics.requests.labels(route, scope["method"], str(status["code"])).inc()
