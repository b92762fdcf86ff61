"""`maitred funnel` and `maitred log verify | show | list`: read-only views of the decision log."""

from __future__ import annotations

import typer

from maitred.analytics.funnel import funnel as compute_funnel
from maitred.analytics.funnel import render_table
from maitred.cli import _log_tables
from maitred.cli._common import LOG_OPT, console, dump_json
from maitred.errors import ConfigError
from maitred.log.base import open_log
from maitred.log.lookup import (
    KINDS,
    MAX_LIMIT,
    DecisionFilter,
    DecisionKind,
    LoggedTurn,
    find_decision,
    list_decisions,
    parse_time,
)
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


TENANT_OPT = typer.Option(
    None, "--tenant", help="Only this tenant's decisions (matched exactly; default: every tenant)."
)
TIME_HELP = (
    "ISO 8601 (2026-12-04, 2026-12-04T22:30Z; UTC unless it names an offset), unix seconds, "
    "or a span before now (15m, 2h, 7d)"
)


def show(
    decision_id: str = typer.Argument(..., help="A turn id or an action decision id, whole."),
    log: str | None = LOG_OPT,
    tenant: str | None = TENANT_OPT,
    as_json: bool = typer.Option(False, "--json", help="Print the decision as JSON."),
) -> None:
    """Everything the log holds about one turn or action decision (exit 2: not in the log).

    A turn: its message, account, session, the candidates with their scores and the
    predicates that hid them, the state it read, its place in the run's hash chain and the
    calls made on its menu. An action decision: the call and its arguments, the verdict, code
    and messages, every predicate with the values it read, the turn it came from.
    """
    with open_log(log or Settings.from_env().log, read_only=True) as handle:
        found = find_decision(handle, decision_id, tenant=tenant)
    if as_json:
        dump_json(found.to_json())
    elif isinstance(found, LoggedTurn):
        _log_tables.turn(console, found)
    else:
        _log_tables.action(console, found)


def list_(
    log: str | None = LOG_OPT,
    tenant: str | None = TENANT_OPT,
    session: str | None = typer.Option(
        None, "--session", help="Only this session's (default: every session)."
    ),
    account: str | None = typer.Option(
        None,
        "--account",
        help="Only this account's (an action decision's is its turn's; default: every account).",
    ),
    code: str | None = typer.Option(
        None,
        "--code",
        help="Only action decisions with this code (OK, TOOL_NOT_OFFERED...; default: any code, "
        "and turns).",
    ),
    trace: str | None = typer.Option(
        None,
        "--trace",
        help="Only action decisions made in the request of this W3C trace id (32 hex digits, "
        "as a tracing backend shows it; default: any, and turns).",
    ),
    kind: str | None = typer.Option(
        None, "--kind", help=f"Only one kind: {' or '.join(KINDS)} (default: both)."
    ),
    since: str | None = typer.Option(
        None, "--since", help=f"At or after: {TIME_HELP} (default: no start)."
    ),
    until: str | None = typer.Option(
        None, "--until", help=f"Before: {TIME_HELP} (default: no end)."
    ),
    limit: int = typer.Option(50, "--limit", min=1, max=MAX_LIMIT, help="At most this many."),
    as_json: bool = typer.Option(False, "--json", help="Print the listing as JSON."),
) -> None:
    """Turns and action decisions, newest first by their own clock, filtered.

    Each row has the id `maitred log show` takes.
    """
    where = DecisionFilter(
        tenant=tenant,
        session=session,
        account=account,
        code=code,
        trace=trace,
        kind=_kind(kind),
        since=None if since is None else parse_time(since, what="--since"),
        until=None if until is None else parse_time(until, what="--until"),
        limit=limit,
    )
    with open_log(log or Settings.from_env().log, read_only=True) as handle:
        found = list_decisions(handle, where)
    if as_json:
        dump_json(found.to_json())
    else:
        _log_tables.listing(console, found.decisions, more=found.more)


def _kind(name: str | None) -> DecisionKind | None:
    for kind in KINDS:
        if name == kind:
            return kind
    if name is None:
        return None
    raise ConfigError(f"unknown --kind {name!r}; choose one of {', '.join(KINDS)}")
