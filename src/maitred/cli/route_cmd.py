"""`maitred route` (one message) and `maitred run` (a message file into the decision log).

Exit status: 0 when every turn was decided on trusted state; **3** (``EXIT_FAIL_CLOSED``) when
at least one turn failed closed as a whole -- the state store could not be read
(``state_unavailable``) or had no record of the account (``account_not_found``). The output is
complete either way (the decision, the log, the funnel); a line on stderr gives the counts.
"""

from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from maitred.analytics.funnel import funnel as compute_funnel
from maitred.analytics.funnel import render_table
from maitred.build import PipelineOptions
from maitred.cli._common import (
    CACHE_OPT,
    LOG_OPT,
    METHOD_OPT,
    SKILLS_OPT,
    STATE_OPT,
    TABLES_OPT,
    console,
    dump_json,
    err_console,
    index_progress,
    load_tables,
    progress_bar,
)
from maitred.engine import Maitred
from maitred.errors import InputError
from maitred.messages import read_messages
from maitred.settings import Settings

TOP_K_OPT = typer.Option(10, "--top-k", min=1, help="Candidates kept from the ranking.")
MIN_SCORE_OPT = typer.Option(
    None, "--min-score", help="Minimum score to keep a candidate (default: keep every one)."
)
SCORE_ON_OPT = typer.Option(
    "score", "--score-on", help="Score --min-score applies to: score, dense, bm25."
)
FAMILY_OPT = typer.Option(
    False, "--family", help="Family-level recall: a matched family brings all its skills."
)
EXIT_FAIL_CLOSED = 3
"""Exit status of a route / run in which some turn failed closed for a cause (see above)."""

FORMAT_OPT = typer.Option(
    "openai", "--format", help="Menu format: openai, anthropic, mcp, agentskills."
)


def _options(
    method: str, top_k: int, min_score: float | None, score_on: str, family: bool, fmt: str
) -> PipelineOptions:
    return PipelineOptions(
        method=method,
        top_k=top_k,
        min_score=min_score,
        score_on=score_on,
        family=family,
        menu_format=fmt,
    )


def _print_turn(data: dict[str, Any]) -> None:
    if not data["matched"]:
        console.print("no skill matches this message (nothing offered)")
        return
    menu = Table(title=f"offered ({data['menu_format']}, {data['menu_tokens']} tokens)")
    for col in ("rank", "skill", "score"):
        menu.add_column(col)
    scores = {c["skill"]: c for c in data["candidates"]}
    for name in data["exposed"]:
        menu.add_row(str(scores[name]["rank"]), name, f"{scores[name]['score']:.4f}")
    console.print(menu)
    if data["blocked"]:
        table = Table(title="blocked by the executability gate")
        for col in ("skill", "predicate", "status", "why", "state read"):
            table.add_column(col)
        for item in data["blocked"]:
            if item["cause"]:
                table.add_row(item["skill"], "-", item["cause"], "state not trusted", "")
            for p in item["predicates"]:
                table.add_row(
                    item["skill"],
                    p["predicate"],
                    p["status"],
                    escape(p["message"] or p["detail"]),
                    escape(str(p["values"])),
                )
        console.print(table)
    if data["provider_error"]:
        err_console.print(f"[bold red]failed closed:[/] {escape(data['provider_error'])}")


def route(
    text: str = typer.Argument(..., help="The user's message."),
    account: str = typer.Option(..., "--account", "-a", help="Whose state the gate reads."),
    skills: list[str] = SKILLS_OPT,
    state: str = STATE_OPT,
    tables: Path | None = TABLES_OPT,
    method: str = METHOD_OPT,
    top_k: int = TOP_K_OPT,
    min_score: float | None = MIN_SCORE_OPT,
    score_on: str = SCORE_ON_OPT,
    family: bool = FAMILY_OPT,
    fmt: str = FORMAT_OPT,
    cache_dir: Path | None = CACHE_OPT,
    as_json: bool = typer.Option(False, "--json", help="Print the decision as JSON."),
) -> None:
    """Route one message for one account: the menu offered and every skill blocked, with why.

    Exits with status 3 when the turn failed closed (state unavailable, account not found). A
    message that is not valid UTF-8 is routed with each undecodable byte replaced by U+FFFD (as
    `run` reads message files), with a warning on stderr.
    """
    text = _message_text(text)
    engine = Maitred.open(
        skills,
        state,
        _options(method, top_k, min_score, score_on, family, fmt),
        tables=load_tables(tables),
        cache_dir=cache_dir or Settings.from_env().cache_dir,
        progress=index_progress(not as_json),
    )
    data = engine.turn(text, account=account, id="cli").to_json()
    if as_json:
        dump_json(data)
    else:
        _print_turn(data)
    if data["cause"]:
        raise typer.Exit(EXIT_FAIL_CLOSED)


def _message_text(text: str) -> str:
    """The command-line message as valid Unicode, warning on stderr when it was not.

    Python decodes command-line bytes that are not UTF-8 into lone surrogates (U+DC80..U+DCFF,
    "surrogateescape"). No tokenizer, JSON document or decision log can hold those, so each such
    byte becomes U+FFFD, the Unicode replacement character, exactly as `run` decodes message
    files (``errors="replace"``); the rest of the message is routed unchanged.
    """
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        clean = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate that did not come from a byte (e.g. U+D800)
        clean = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    replaced = clean.count("\ufffd") - text.count("\ufffd")
    err_console.print(
        f"[yellow]warning:[/] the message is not valid UTF-8: {replaced} undecodable byte(s) "
        "replaced by U+FFFD; pass UTF-8 text (check the terminal's or the shell's encoding)",
        highlight=False,
    )
    return clean


def run(
    messages: Path = typer.Argument(..., help="JSONL: {id, text, account, conversation?}."),
    skills: list[str] = SKILLS_OPT,
    state: str = STATE_OPT,
    tables: Path | None = TABLES_OPT,
    log: str | None = LOG_OPT,
    method: str = METHOD_OPT,
    top_k: int = TOP_K_OPT,
    min_score: float | None = MIN_SCORE_OPT,
    score_on: str = SCORE_ON_OPT,
    family: bool = FAMILY_OPT,
    fmt: str = FORMAT_OPT,
    cache_dir: Path | None = CACHE_OPT,
    limit: int | None = typer.Option(
        None, "--limit", min=1, help="Route only the first N messages (default: all)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the funnel as JSON."),
) -> None:
    """Route every message of a file and write each decision to the log.

    Bad lines (unreadable JSON, a missing field, an id used twice) are reported with file and
    line and skipped; the good ones are routed and logged. The exit status is 3 when some turns
    failed closed (state unavailable, account not found), else 1 when any line was bad, else 0.
    """
    settings = Settings.from_env()
    options = _options(method, top_k, min_score, score_on, family, fmt)
    target = log or settings.log
    bad: list[InputError] = []
    try:  # before the log is opened, so a wrong path creates no empty log
        total = _count_lines(messages, limit)
    except OSError as exc:
        raise InputError(str(messages), 0, f"cannot read the message file: {exc}") from None
    try:
        with Maitred.open(
            skills,
            state,
            options,
            tables=load_tables(tables),
            cache_dir=cache_dir or settings.cache_dir,
            log=target,
            progress=index_progress(),
        ) as engine:
            stream = read_messages(messages, on_error=bad.append)
            if limit is not None:
                stream = islice(stream, limit)  # stops reading (and reporting) at the limit
            with progress_bar("routing", total) as advance:
                # a pipe or FIFO is a live stream: route each line as it arrives
                batch = 256 if messages.is_file() else 1
                stats = engine.run(stream, progress=advance, batch=batch)
    finally:  # the lines already found bad are reported even when the run fails
        _report_bad_lines(bad)
    err_console.print(
        f"routed {stats.messages} messages in {stats.seconds:.1f}s "
        f"({stats.messages / max(stats.seconds, 1e-9):.0f} msg/s); log: {target}",
        highlight=False,
    )
    result = compute_funnel(target, engine.pipeline.run_id)
    if as_json:
        dump_json(result.to_json())
    else:
        console.print(render_table(result))
    if result.fail_closed_turns:
        err_console.print(
            f"[bold red]failed closed:[/] of {result.messages} turns, "
            f"{result.state_unavailable_turns} state_unavailable and "
            f"{result.account_not_found_turns} account_not_found (exit status 3)",
            highlight=False,
        )
        raise typer.Exit(EXIT_FAIL_CLOSED)
    if bad:
        raise typer.Exit(1)


def _count_lines(path: Path, limit: int | None) -> int | None:
    """Non-blank lines of a regular file (capped at ``limit``); None for a pipe or FIFO."""
    if path.exists() and not path.is_file():
        return limit  # a stream: reading it here would consume it
    with open(path, "rb") as handle:
        n = sum(1 for line in handle if line.strip())
    return min(n, limit) if limit is not None else n


def _report_bad_lines(bad: list[InputError]) -> None:
    if not bad:
        return
    err_console.print(
        f"[yellow]skipped {len(bad)} bad line(s) (exit status 1; the good lines were routed):[/]"
    )
    for err in bad[:10]:
        err_console.print(f"  {escape(str(err))}", highlight=False)
    if len(bad) > 10:
        err_console.print(f"  ... and {len(bad) - 10} more")
