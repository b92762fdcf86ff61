"""`maitred eval routing`: Hit@1, Recall@k, MRR, nDCG@10 of a recall method on labelled queries."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from maitred.cli._common import (
    CACHE_OPT,
    METHOD_OPT,
    console,
    dump_json,
    err_console,
    index_progress,
)
from maitred.errors import InputError
from maitred.recall.evaluate import evaluate_routing, load_queries
from maitred.recall.registry import make_recaller
from maitred.skills.catalog import load_catalog


def routing(
    catalog: list[str] = typer.Option(..., "--catalog", "-c", help="Skills dir or tools JSONL."),
    queries: Path = typer.Option(..., "--queries", "-q", help='JSONL {"id","text","gold":[...]}.'),
    method: str = METHOD_OPT,
    cache_dir: Path | None = CACHE_OPT,
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON."),
) -> None:
    """Score a recall method on labelled queries."""
    cat = load_catalog(catalog)
    bad: list[InputError] = []
    labelled = load_queries(queries, on_error=bad.append)
    for err in bad[:10]:
        err_console.print(f"[yellow]skipped:[/] {escape(str(err))}", highlight=False)
    recaller = make_recaller(method, cat, cache_dir=cache_dir, progress=index_progress(not as_json))
    result = evaluate_routing(recaller, labelled, method)
    if as_json:
        dump_json(result)
        return
    table = Table(title=f"routing: {method} on {result['n_queries']} queries")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in result.items():
        if key not in ("method", "n_queries"):
            table.add_row(key, f"{value:.4f}")
    console.print(table)
