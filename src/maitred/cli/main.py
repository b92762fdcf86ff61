"""`maitred`: the command-line adapter. Every command calls the library; none holds logic.

Errors from maitred (bad input, a broken environment) print one clear line on stderr and exit
with status 2, and so does an ``OSError`` (a path the user gave that cannot be read or written:
a missing folder for ``--out``, no permission); anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import logging
import sys

import typer
from rich.markup import escape

from maitred import __version__
from maitred.cli import (
    actions_cmd,
    audit_cmd,
    demo_cmd,
    depth_cmd,
    eval_cmd,
    gateway_cmd,
    log_cmd,
    native_cmd,
    replay_cmd,
    report_cmd,
    route_cmd,
    serve_cmd,
    skills_cmd,
    tune_cmd,
)
from maitred.cli._common import err_console
from maitred.cli._conventions import App
from maitred.errors import MaitredError

app = App(
    name="maitred",
    help="Decide what an LLM agent is offered and what it may do, turn by turn.",
)
skills_app = App(help="Skill catalogs: validate folders and tool files.")
log_app = App(help="The decision log: verify hashes, migrate.")
eval_app = App(help="Evaluations: routing accuracy, depth rules, gated agents.")


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"maitred {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        is_eager=True,
        expose_value=True,
        callback=_print_version,
        help="Print the version and exit.",
    ),
) -> None:
    """Decide what an LLM agent is offered and what it may do, turn by turn."""


skills_app.command("validate")(skills_cmd.validate)
app.add_typer(skills_app, name="skills")
app.command("index")(skills_cmd.index)
app.command("route")(route_cmd.route)
app.command("run")(route_cmd.run)
app.command("funnel")(log_cmd.funnel)
log_app.command("verify")(log_cmd.verify)
log_app.command("migrate")(log_cmd.migrate)
app.add_typer(log_app, name="log")
eval_app.command("routing")(eval_cmd.routing)
app.command("demo")(demo_cmd.demo)
# later capabilities register their own commands (parity/audit/report, actions, depth)
for _module in (audit_cmd, actions_cmd, depth_cmd, report_cmd, replay_cmd, native_cmd):
    _module.register(app, eval_app)
serve_cmd.register(app, eval_app)
gateway_cmd.register(app, eval_app)
tune_cmd.register(app, eval_app)
app.add_typer(eval_app, name="eval")


def main() -> None:
    """Console entry point."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        app()
    except MaitredError as exc:
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, markup=True)
        sys.exit(2)
    except OSError as exc:  # a path the user gave that cannot be read or written: not a bug
        err_console.print(
            f"[bold red]error:[/] {escape(_os_error(exc))}", highlight=False, markup=True
        )
        sys.exit(2)


def _os_error(exc: OSError) -> str:
    """One line for an OS error on a user's path: what failed, where, and the system's reason."""
    where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
    reason = exc.strerror or str(exc)
    if isinstance(exc, FileExistsError):
        reason = "a file is in the way of a folder this command creates; choose another path"
    return f"{where}: {reason}" if where else f"{type(exc).__name__}: {reason}"


if __name__ == "__main__":  # pragma: no cover
    main()
