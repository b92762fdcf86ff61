"""`maitred mcp --config gateway.yaml`: the MCP gateway, served over stdio or streamable HTTP.

Over stdio, an MCP client launches this command as its MCP server (one process per account).
Over HTTP (``--http``, or a ``server:`` block in the config), one process serves many clients,
each authenticated by a bearer token the config maps to a tenant and an account. The command
reads and checks the config, connects the upstream MCP servers, builds the gates over their
tools and serves until the client disconnects (stdio) or it is stopped (HTTP); the decision log
is closed on the way out.

fastmcp comes with the ``mcp`` extra and is imported only here, so the rest of the CLI works
without it. stdout belongs to the MCP protocol over stdio: this command prints nothing else
there (over HTTP, the address it serves is printed on stderr).
"""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import typer

from maitred.errors import MissingExtraError


def mcp(
    config: Path = typer.Option(
        ..., "--config", "-c", metavar="PATH", help="The gateway's YAML config (required)."
    ),
    account: str | None = typer.Option(
        None,
        "--account",
        metavar="ID",
        help="Over stdio: whose state the gates read (default: account of the config).",
    ),
    http: bool | None = typer.Option(
        None,
        "--http/--stdio",
        help="Serve streamable HTTP (bearer tokens from the config's 'tokens') or stdio "
        "(default: HTTP when the config has a 'server' block).",
    ),
    port: int | None = typer.Option(
        None,
        "--port",
        metavar="N",
        min=0,
        max=65535,
        help="Over HTTP: the port (0: any free one; default: config).",
    ),
) -> None:
    """Serve an MCP gateway: state-aware tools/list, gated tools/call, every decision logged."""
    try:
        from maitred.gateway import load_config
        from maitred.gateway.server import serve_http, serve_stdio
    except ImportError as exc:
        raise MissingExtraError("maitred mcp", "mcp", exc.name) from None
    settings = load_config(config, account=account)
    # FastMCP's own start-up lines (INFO) would repeat what maitred says; its warnings stay
    logging.getLogger("fastmcp").setLevel(logging.WARNING)
    over_http = http if http is not None else settings.server is not None
    if over_http:
        if account is not None:
            raise typer.BadParameter(
                "over HTTP each token names its account (the config's 'tokens'); drop --account",
                param_hint="--account",
            )
        anyio.run(lambda: serve_http(settings, port=port))
    else:
        if port is not None:
            raise typer.BadParameter("--port is for HTTP; add --http", param_hint="--port")
        anyio.run(serve_stdio, settings)


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add `mcp` to the app."""
    app.command("mcp")(mcp)
