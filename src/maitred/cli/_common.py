"""Options and helpers the commands share."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from maitred._yaml import read_yaml
from maitred.errors import ConfigError, MaitredError

console = Console()
# soft_wrap: an error or a skipped-line report stays on one line whatever the terminal width
err_console = Console(stderr=True, soft_wrap=True)

# One spelling per concept (docs/cli.md, "Command-line conventions"). The catalog is `--skills`/`-s`
# everywhere; `--catalog`/`-c` still parse as hidden aliases (see _conventions.py).
SKILLS_HELP = "Skill folders or tool files (.json/.jsonl); repeatable."
SKILLS_OPT = typer.Option(..., "--skills", "-s", metavar="PATH", help=SKILLS_HELP)
"""The catalog option, for ``skills: list[str] = SKILLS_OPT``."""
LOG_HELP = (
    "Decision log: a file path or a postgresql:// URL (default: $MAITRED_LOG, else "
    "maitred-decisions.sqlite)."
)
LOG_OPT = typer.Option(None, "--log", metavar="PATH|URL", help=LOG_HELP)
"""The decision log, for ``log: str | None = LOG_OPT`` (None: the settings' log)."""
API_KEY_ENV_HELP = (
    "Name of the environment variable that holds the API key (the key itself never goes on "
    "the command line)."
)
STATE_OPT = typer.Option(
    ...,
    "--state",
    metavar="URL|PATH",
    help="State provider: sqlite:///x.db, postgresql://..., or a .json file.",
)
TABLES_OPT = typer.Option(
    None,
    "--tables",
    help="YAML/JSON file mapping key roots to tables, for SQL providers (default: none).",
)
METHOD_HELP = (
    "Recall method: adaptive (BM25F + dense, each weighed by how far its best skills stand "
    "out), fused, bm25, bm25-plain, dense, hybrid, native-glance ...; append +intents to "
    "also rank the requests of a multi-request message that point elsewhere (e.g. "
    "adaptive+intents), +intents-all to split every such message; +servers (last) lifts "
    "the tools of a dominant MCP server (tools with a server key)."
)
METHOD_OPT = typer.Option("adaptive", "--method", "-m", help=METHOD_HELP)
CACHE_OPT = typer.Option(
    None,
    "--cache-dir",
    help="Where indexes persist (default: $MAITRED_CACHE_DIR, else .maitred-cache).",
)


def dump_json(value: Any) -> None:
    """Print JSON to stdout (plain, so it can be piped); never ``NaN`` or ``Infinity``.

    Raises:
        MaitredError: a figure is not finite (figures from no data): nothing is printed.
    """
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str, allow_nan=False)
    except ValueError:
        raise MaitredError(
            "a figure is not a finite number (NaN or infinite): the inputs leave it "
            "undefined; nothing was printed"
        ) from None
    sys.stdout.write(text + "\n")


def load_tables(path: Path | None) -> dict[str, Any] | None:
    """Read a tables mapping file, naming the file when it is wrong."""
    if path is None:
        return None
    data = read_yaml(path, "the tables mapping")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of key root -> table spec")
    return data


@contextmanager
def progress_bar(description: str, total: int | None, *, enabled: bool = True) -> Iterator[Any]:
    """A rich progress bar on stderr; yields ``advance(n)`` (a no-op when disabled)."""
    if not enabled:
        yield lambda n=1: None
        return
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=False,
    ) as bar:
        task = bar.add_task(description, total=total)

        def advance(n: int = 1) -> None:
            bar.advance(task, n)

        yield advance


def index_progress(enabled: bool = True) -> Any:
    """A ``progress(done, total)`` callback for index builds, printing to stderr."""
    if not enabled:
        return None
    state: dict[str, int] = {"last": -1}

    def report(done: int, total: int) -> None:
        pct = int(100 * done / max(1, total))
        if pct // 10 != state["last"] // 10 or done == total:
            err_console.print(f"  embedding skills: {done}/{total} ({pct}%)", highlight=False)
            state["last"] = pct

    return report
