"""`maitred console --log LOG`: the read-only web console over a decision log, under uvicorn.

The log is opened read-only (the database refuses writes; a log that needs a migration is
refused rather than upgraded). With ``--config`` (the service's config file) the console also
answers what-if turns on an engine built from that config without a log, and its
``operators`` tokens are the ones it asks for when bound off loopback.

Starlette and uvicorn come with the ``serve`` extra and are imported only here.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import typer

from maitred.errors import MissingExtraError
from maitred.log.base import open_log


def console(
    log: str = typer.Option(
        ..., "--log", help="The decision log: a SQLite file or a postgresql:// URL."
    ),
    config: Path | None = typer.Option(
        None,
        "--config",
        "-c",
        help="The service's YAML config: what-if turns on its engine, and its operators' tokens "
        "(default: none: no what-if turns, and loopback only).",
    ),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Bind address (off loopback, an operator token is required)."
    ),
    port: int = typer.Option(8090, "--port", min=0, max=65535, help="Port."),
) -> None:
    """Serve the read-only console: overview, decisions, one decision, accounts, verify."""
    try:
        import uvicorn

        from maitred.console import Access, WhatIf, create_console
        from maitred.serve import load_config, open_engine
    except ImportError as exc:
        raise MissingExtraError("maitred console", "serve", exc.name) from None
    settings = load_config(config) if config is not None else None
    operators = frozenset(settings.operators.values()) if settings is not None else frozenset()
    where = str(config) if config is not None else "a config given with --config"
    access = Access.for_bind(host, operators, where)
    engine = open_engine(dataclasses.replace(settings, log=None)) if settings else None
    handle = open_log(log, read_only=True)
    try:
        app = create_console(handle, access, what_if=WhatIf(engine) if engine else None)
        uvicorn.run(app, host=host, port=port, log_level="info", access_log=False)
    finally:
        handle.close()
        if engine is not None:
            engine.close()


def register(app: typer.Typer) -> None:
    """Add `console` to the app."""
    app.command("console")(console)
