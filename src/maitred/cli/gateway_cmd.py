"""`maitred mcp --config gateway.yaml`: the MCP gateway, served over stdio or streamable HTTP.

Over stdio, an MCP client launches this command as its MCP server (one process per account).
Over HTTP (``--http``, or a ``server:`` block in the config), one process serves many clients,
each authenticated by a bearer token the config maps to a tenant and an account. The command
reads and checks the config, connects the upstream MCP servers, builds the engines over their
tools and serves until the client disconnects (stdio) or it is stopped (HTTP); the decision log
is closed on the way out.

`maitred mcp pin --config gateway.yaml` reviews the upstreams' tools: it lists them as the
gateway would at start, approves their definitions into the pin file (all of them, or only
those named with ``--tool``) and prints what changed since the last approval, field by field
(:mod:`maitred.gateway.pins`); ``--check`` writes nothing and exits 1 when the gateway would
hold a tool back.

fastmcp comes with the ``mcp`` extra and is imported only here, so the rest of the CLI works
without it. stdout belongs to the MCP protocol over stdio: this command prints nothing else
there (over HTTP, the address it serves is printed on stderr).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio
import typer

from maitred.cli._conventions import App
from maitred.errors import ConfigError, MissingExtraError

_SHOWN = 160  # characters of a changed value shown by `maitred mcp pin`


def mcp(
    ctx: typer.Context,
    config: Path | None = typer.Option(
        None,
        "--config",
        "-c",
        metavar="PATH",
        help="The gateway's YAML config (required to serve).",
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
        help="Serve streamable HTTP (bearer tokens from the config's 'tokens', JWTs with "
        "'auth') or stdio "
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
    if ctx.invoked_subcommand is not None:
        given = [o for o, v in (("--config", config), ("--account", account), ("--port", port),
                                ("--http/--stdio", http)) if v is not None]  # fmt: skip
        if given:
            raise typer.BadParameter(
                f"give it after '{ctx.invoked_subcommand}'", param_hint=given[0]
            )
        return
    if config is None:
        raise typer.BadParameter("is required: the gateway's YAML config", param_hint="--config")
    try:
        from maitred.gateway import load_config
        from maitred.gateway.serve import serve_http, serve_stdio
    except ImportError as exc:
        raise MissingExtraError("maitred mcp", "mcp", exc.name) from None
    settings = load_config(config, account=account)
    # FastMCP's own start-up lines (INFO) would repeat what maitred says; its warnings stay
    logging.getLogger("fastmcp").setLevel(logging.WARNING)
    over_http = http if http is not None else settings.server is not None
    if over_http:
        if account is not None:
            raise typer.BadParameter(
                "over HTTP each token names its account (the config's 'tokens', or a JWT's "
                "claim with 'auth'); drop --account",
                param_hint="--account",
            )
        anyio.run(lambda: serve_http(settings, port=port))
    else:
        if port is not None:
            raise typer.BadParameter("--port is for HTTP; add --http", param_hint="--port")
        anyio.run(serve_stdio, settings)


def pin(
    config: Path = typer.Option(
        ..., "--config", "-c", metavar="PATH", help="The gateway's YAML config (required)."
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        metavar="PATH",
        help="The pin file to update (default: the config's pins.file).",
    ),
    tool: list[str] | None = typer.Option(
        None,
        "--tool",
        metavar="NAME",
        help="Approve only this tool; repeat for more (default: every tool listed now, and "
        "the pins of tools no longer listed are dropped).",
    ),
    check: bool = typer.Option(
        False,
        "--check",
        help="Write nothing; exit 1 when some tool differs from its pin or has none.",
    ),
) -> None:
    """Review the upstreams' tools: approve their definitions into the pin file."""
    try:
        from maitred.gateway import load_config
        from maitred.gateway.build import list_upstreams
        from maitred.gateway.pins import Pins, load_pins, pin_lock, repin, write_pins
        from maitred.gateway.scan import scan_listings
    except ImportError as exc:
        raise MissingExtraError("maitred mcp pin", "mcp", exc.name) from None
    settings = load_config(config)
    if out is not None:
        path = out
    elif settings.pins is not None:
        path = Path(settings.pins.file)
    else:
        raise ConfigError(
            f"{config}: names no pin file; add 'pins: gateway.pins.json' to it, or pass --out"
        )
    logging.getLogger("fastmcp").setLevel(logging.WARNING)
    listings = anyio.run(list_upstreams, settings)
    with pin_lock(path):
        old = load_pins(path) if path.exists() else Pins()
        pins, changes = repin(old, listings, only=tool or None)
        if not check:
            write_pins(path, pins)
    verb = {"new": "would approve", "changed": "would re-approve"} if check else {}
    reviewed: set[tuple[str, str]] = set()
    for change in changes:
        label = f"{change.upstream} {change.tool}"
        if change.status in ("new", "changed"):
            reviewed.add((change.upstream, change.tool))
            what = verb.get(change.status, "approved" if change.status == "new" else "re-approved")
            typer.echo(f"{label}: {change.status}, {what}")
        elif change.status == "not approved":
            reviewed.add((change.upstream, change.tool))
            typer.echo(f"{label}: {'changed' if change.fields else 'new'}, NOT approved "
                       "(not named by --tool): still held back")  # fmt: skip
        elif change.status == "removed":
            typer.echo(f"{label}: no longer listed, {'pin kept' if check else 'pin dropped'}")
        else:
            typer.echo(f"{label}: unchanged")
        for where, before, after in change.values:
            typer.echo(f"    {where}: {_shown(before)} -> {_shown(after)}")
    for finding in scan_listings(listings):
        if (finding.upstream, finding.tool) in reviewed:
            typer.echo(f"warning: {finding.line()}", err=True)
    counts = {s: sum(c.status == s for c in changes) for s in ("new", "changed", "not approved")}
    pinned = sum(1 for _ in pins)
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "nothing changed"
    if check:
        typer.echo(f"checked {path}: {summary}")
        if counts["new"] or counts["changed"] or counts["not approved"]:
            raise typer.Exit(1)
    else:
        typer.echo(f"wrote {path}: {pinned} tool(s) pinned ({summary})")


def _shown(value: Any) -> str:
    """A changed value for the terminal: JSON with non-ASCII escaped (an invisible character
    shows as its escape), cut at :data:`_SHOWN` characters."""
    from maitred.gateway.pins import ABSENT

    if value is ABSENT:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=True, sort_keys=True)
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}... ({len(text)} characters)"


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add `mcp` (serve) and `mcp pin` (review the upstreams' tools) to the app."""
    group = App(
        help="Serve an MCP gateway: state-aware tools/list, gated tools/call, every decision "
        "logged. `maitred mcp pin` reviews its upstreams' tools.",
        invoke_without_command=True,
        subcommand_metavar="[COMMAND]",
    )
    group.callback()(mcp)
    group.command("pin")(pin)
    app.add_typer(group, name="mcp")
