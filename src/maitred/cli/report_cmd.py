"""`maitred report`: the funnel report (HTML + PNG charts) from the decision log."""

from __future__ import annotations

from pathlib import Path

import typer

from maitred.analytics.report import write_report
from maitred.cli._common import LOG_OPT, console
from maitred.cli._conventions import App
from maitred.log import open_log
from maitred.settings import Settings


def report(
    log: str | None = LOG_OPT,
    out: Path = typer.Option(Path("report"), "--out", "-o", help="Folder for report.html + PNGs."),
    run: str | None = typer.Option(None, "--run", help="Only this run id (default: every run)."),
    anonymise: bool = typer.Option(
        False, "--anonymise", help="Replace skill and predicate names by pseudonyms."
    ),
) -> None:
    """Write a self-contained report.html and PNG charts of the funnel (DuckDB, read-only)."""
    where = log or Settings.from_env().log
    with open_log(where, read_only=True):  # not a decision log: one clear line, not DuckDB's
        pass
    written = write_report(where, out, run_id=run, anonymised=anonymise)
    console.print(f"wrote {written['html']} and {len(written) - 2} charts", highlight=False)


def register(app: App, eval_app: App) -> None:
    """Add `report` to the app."""
    app.command("report")(report)
