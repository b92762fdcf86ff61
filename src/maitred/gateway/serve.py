"""Serving the gateway: over stdio, or over streamable HTTP on a socket of its own.

:func:`serve_stdio` and :func:`serve_http` open the gateway
(:func:`~maitred.gateway.build.open_gateway`), run its state watch beside it, and close it
when serving ends: over HTTP at the server's lifespan shutdown (:class:`CloseAtShutdown`), so
the log is closed and the buffered spans are exported even when uvicorn re-raises SIGTERM.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from fastmcp import FastMCP
from starlette.middleware import Middleware as AsgiMiddleware  # FastMCP's HTTP app is Starlette

from maitred._heap import freeze_start_heap
from maitred.console import MOUNT, OPERATOR_SCOPE, Access, Mounted, create_console
from maitred.errors import ConfigError
from maitred.gateway import traces
from maitred.gateway.build import close_gateway, open_gateway, watching
from maitred.gateway.config import GatewayConfig
from maitred.gateway.http_config import HttpServer
from maitred.gateway.keeper import GatewayEngines
from maitred.gateway.limits import BodyLimit
from maitred.log.base import DecisionLog, open_log


async def serve_stdio(config: GatewayConfig) -> None:
    """Serve the gateway over stdio until the client disconnects."""
    server, engines = await open_gateway(config)
    freeze_start_heap()  # what start-up built lives as long as the process (maitred._heap)
    traces.without_idle_library_spans()  # FastMCP's no-op spans: not built at all
    try:
        async with watching(server, config.watch.interval_s):
            await server.run_async(transport="stdio", show_banner=False)
    finally:
        await close_gateway(server, engines)


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


def _closer(server: FastMCP[Any], engines: GatewayEngines) -> Callable[[], Awaitable[None]]:
    """:func:`close_gateway` (the upstream sessions, the decision log, the traces exported),
    once, whichever of its callers comes first (both run on the server's event loop)."""
    done: list[bool] = []

    async def close() -> None:
        if not done:
            done.append(True)
            await close_gateway(server, engines)

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
    server, engines = await open_gateway(config, http=True)
    close = _closer(server, engines)
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
    console, console_log = _console(config)
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
                    *([AsgiMiddleware(Mounted, console=console)] if console else []),
                ],
            )
    finally:
        await close()
        sock.close()
        if console_log is not None:
            console_log.close()


def _console(config: GatewayConfig) -> tuple[Any, DecisionLog | None]:
    """The read-only console under ``/console``, for the static tokens granting
    ``maitred:console`` (none: not served), over the gateway's log opened read-only."""
    operators = frozenset(t.token_sha256 for t in config.tokens if OPERATOR_SCOPE in t.scopes)
    if not operators or not config.log:
        return None, None
    log = open_log(config.log, read_only=True)
    return create_console(log, Access(operators), root=MOUNT), log
