"""`maitred mcp --config gateway.yaml`: the MCP gateway, served over stdio.

An MCP client launches this command as its MCP server (one process per account). The command
reads and checks the config, starts the upstream MCP server, builds the gates over its tools
and serves until the client disconnects; the decision log is closed on the way out.

fastmcp comes with the ``mcp`` extra and is imported only here, so the rest of the CLI works
without it. stdout belongs to the MCP protocol: this command prints nothing else there.
"""

from __future__ import annotations

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
        help="Whose state the gates read (default: account of the config).",
    ),
) -> None:
    """Serve an MCP gateway over stdio: state-aware tools/list, gated tools/call, logged."""
    try:
        from maitred.gateway import load_config
        from maitred.gateway.server import serve_stdio
    except ImportError as exc:
        raise MissingExtraError("maitred mcp", "mcp", exc.name) from None
    settings = load_config(config, account=account)
    anyio.run(serve_stdio, settings)


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add `mcp` to the app."""
    app.command("mcp")(mcp)
