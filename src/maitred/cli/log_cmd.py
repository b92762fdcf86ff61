"""`maitred funnel` and `maitred log verify`: read-only views of the decision log."""

from __future__ import annotations

import typer

from maitred.analytics.funnel import funnel as compute_funnel
from maitred.analytics.funnel import render_table
from maitred.cli._common import LOG_OPT, console, dump_json
from maitred.log.base import open_log
from maitred.log.verify import verify as verify_log
from maitred.settings import Settings

_HEADS_SHOWN = 10


def funnel(
    log: str | None = LOG_OPT,
    run: str | None = typer.Option(None, "--run", help="Only this run id (default: every run)."),
    as_json: bool = typer.Option(False, "--json", help="Print the funnel as JSON."),
) -> None:
    """Messages, matches, candidate and blocked pairs, and skill-description tokens per stage."""
    result = compute_funnel(log or Settings.from_env().log, run)
    if as_json:
        dump_json(result.to_json())
    else:
        console.print(render_table(result))


def migrate(log: str | None = LOG_OPT) -> None:
    """Apply pending schema migrations to a log (read-only commands refuse an old schema)."""
    with open_log(log or Settings.from_env().log) as handle:
        names = handle.migrations()
    console.print(f"schema at {names[-1]} ({len(names)} migrations applied)", highlight=False)


def verify(
    log: str | None = LOG_OPT,
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Check every hash, each run's hash chain and the append-only guards; exit 1 on a mismatch.

    The text report ends with each run's head (its last chain position and hash): kept
    outside the log, a head pins its run, which a rewrite with recomputed hashes cannot match.
    """
    with open_log(log or Settings.from_env().log, read_only=True) as handle:
        report = verify_log(handle)
    if as_json:
        dump_json(report.to_json())
    else:
        console.print(report.summary(), highlight=False, markup=False, soft_wrap=True)
        for head in report.heads[:_HEADS_SHOWN]:
            console.print(
                f"  head of run {head.run_id}: {head.turns} chained turn(s), {head.head}",
                highlight=False,
                markup=False,
                soft_wrap=True,  # a hash is copied whole, never wrapped
            )
        if len(report.heads) > _HEADS_SHOWN:
            console.print(f"  ... and {len(report.heads) - _HEADS_SHOWN} more runs (see --json)")
    if not report.ok:
        raise typer.Exit(1)
