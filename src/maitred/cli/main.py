"""`maitred`: the command-line adapter. Every command calls the library; none holds logic.

Errors from maitred (bad input, a broken environment) print one clear line on stderr and exit
with status 2, and so do click's usage errors (an unknown option, a value out of range: one
line naming the option, and where to read the help) and an ``OSError`` (a path the user gave
that cannot be read or written: a missing folder for ``--out``, no permission); anything else
is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import logging
import sys
import warnings
from typing import TextIO

import typer
from rich.markup import escape
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer.exceptions import Abort

from maitred import __version__
from maitred.cli import (
    actions_cmd,
    audit_cmd,
    console_cmd,
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
log_app = App(help="The decision log: find and show decisions, verify hashes, migrate.")
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
log_app.command("show")(log_cmd.show)
log_app.command("list")(log_cmd.list_)
log_app.command("verify")(log_cmd.verify)
log_app.command("migrate")(log_cmd.migrate)
app.add_typer(log_app, name="log")
eval_app.command("routing")(eval_cmd.routing)
app.command("demo")(demo_cmd.demo)
# later capabilities register their own commands (parity/audit/report, actions, depth)
for _module in (audit_cmd, actions_cmd, depth_cmd, report_cmd, replay_cmd, native_cmd):
    _module.register(app, eval_app)
serve_cmd.register(app, eval_app)
console_cmd.register(app)
gateway_cmd.register(app, eval_app)
tune_cmd.register(app, eval_app)
app.add_typer(eval_app, name="eval")


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """A library warning as one line for people (``maitred: warning: ...``), no source line."""
    typer.echo(f"maitred: warning: {message}", err=True)


def main() -> None:
    """Console entry point."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    warnings.showwarning = _show_warning
    try:
        code = app(standalone_mode=False)
    except NoArgsIsHelpError as exc:  # a bare group: its help, as click shows it
        exc.show()
        sys.exit(exc.exit_code)
    except ClickException as exc:  # a usage error: an unknown option, a value out of range...
        _error(_usage_error(exc))
        sys.exit(exc.exit_code)
    except Abort:
        typer.echo("Aborted!", err=True)
        sys.exit(1)
    except MaitredError as exc:
        _error(str(exc))
        sys.exit(2)
    except OSError as exc:  # a path the user gave that cannot be read or written: not a bug
        if exc.errno == errno.EPIPE:  # the reader of a pipe went away (`| head`): stop quietly
            sys.exit(1)
        _error(_os_error(exc))
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)


def _error(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, markup=True)


def _usage_error(exc: ClickException) -> str:
    """click's usage error as one line, with where to read the command's help."""
    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    return f"{message} (see '{ctx.command_path} -h')" if ctx is not None else message


def _os_error(exc: OSError) -> str:
    """One line for an OS error on a user's path: what failed, where, and the system's reason."""
    where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
    reason = exc.strerror or str(exc)
    if isinstance(exc, FileExistsError):
        reason = "a file is in the way of a folder this command creates; choose another path"
    return f"{where}: {reason}" if where else f"{type(exc).__name__}: {reason}"


if __name__ == "__main__":  # pragma: no cover
    main()
