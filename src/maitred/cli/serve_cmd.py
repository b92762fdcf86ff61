"""`maitred serve --config serve.yaml`: run the HTTP API under uvicorn.

The command reads and checks the config, builds the engine (catalog, recall index, state
provider with its deadline, decision log), and serves until interrupted; the engine and its
log are closed when the server shuts down (the app's lifespan). On SIGTERM/SIGINT uvicorn
shuts down gracefully, then re-raises the signal, so the exit status is the signal's.

Starlette, uvicorn and prometheus-client come with the ``serve`` extra and are imported only
here, so the rest of the CLI works without them.
"""

from __future__ import annotations

from pathlib import Path

import typer

from maitred._heap import freeze_start_heap
from maitred.errors import MissingExtraError


def serve(
    config: Path = typer.Option(..., "--config", "-c", help="The server's YAML config."),
    host: str | None = typer.Option(
        None, "--host", help="Bind address (default: server.host of the config)."
    ),
    port: int | None = typer.Option(
        None, "--port", min=0, max=65535, help="Port (default: server.port of the config)."
    ),
) -> None:
    """Serve the HTTP API: /v1/turns, /v1/calls/check, /v1/funnel, /healthz, /readyz, /metrics
    (and the read-only console under /console when the config names operators)."""
    try:
        import uvicorn

        from maitred.console import MOUNT, Access, Mounted, WhatIf, create_console, unlogged
        from maitred.log.base import open_log
        from maitred.serve import Reloader, Service, create_app, load_config, open_engine
        from maitred.serve.rates import open_limiter
        from maitred.tracing import Tracing
    except ImportError as exc:
        raise MissingExtraError("maitred serve", "serve", exc.name) from None
    settings = load_config(config)
    engine = open_engine(settings)
    tracing = Tracing.start(settings.tracing, extra="serve")
    try:
        limiter = open_limiter(settings, engine)
        service = Service(
            engine,
            settings.tenants,
            settings.limits,
            durability=settings.durability,
            require_scopes=settings.require_scopes,
        )
        reloader = Reloader(service, settings)  # hot reload of the catalog files
        # the console under /console, for the config's operators (a log opened read-only)
        console_log = (
            open_log(settings.log, read_only=True) if settings.operators and settings.log else None
        )

        def shutdown() -> None:
            engine.close()
            tracing.close()  # exports the spans still buffered
            if console_log is not None:
                console_log.close()

        app = create_app(
            service,
            settings.limits,
            on_shutdown=shutdown,
            reloader=reloader,
            tracing=tracing,
            limiter=limiter,
        )
        if console_log is not None:
            access = Access(frozenset(settings.operators.values()))
            what_if = WhatIf(unlogged(engine))  # the engine at start (a reload is not followed)
            app = Mounted(app, create_console(console_log, access, what_if=what_if, root=MOUNT))
        freeze_start_heap()  # the engine and app live as long as the process (maitred._heap)
        uvicorn.run(
            app,
            host=host or settings.host,
            port=settings.port if port is None else port,
            log_level="info",  # the address it listens on, startup and shutdown
            access_log=False,  # per-request counts and latencies are in /metrics
        )
    finally:  # on a signal uvicorn re-raises it after shutdown; the lifespan closed the engine
        engine.close()
        tracing.close()


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add `serve` to the app."""
    app.command("serve")(serve)
