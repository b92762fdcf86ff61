"""`maitred eval routing`: Hit@1, Recall@k, MRR, nDCG@10 of recall methods on labelled queries.

One set (``--skills`` paths and one ``--queries`` file), several sets (repeated
``--skills``/``--queries`` pairs, or ``--sets FILE``), one method or several (repeat
``--method``). One set and one method print that result (``--json``: one object); anything more
prints one row per set and method (``--json``: ``{"results": [...]}``).

Queries with ``steps`` (``{"id","text","steps":[...],"gold":[...]}``) are also scored step-wise:
each step is asked for its top ``--step-k`` (the steps ranked as one task by default,
``--steps apart`` asks each on its own: :mod:`maitred.recall.steps`) and the task is complete
when every gold skill is in the union; the figures gain ``n_step_queries``, ``step_k``,
``step_complete_at_k``, ``step_exposed`` (the union's mean size) and
``oneshot_complete_at_exposed`` (the text asked once with as many skills shown). Queries without
steps are scored as before.

Exit status: 0 when every set was read cleanly and scored; 1 when a query line was bad (each is
reported with ``file:line``; the good lines are still scored) or when a set had no query that
could be scored; 2 for errors that stop the run (an empty catalog, an unknown method, a query
id that repeats: which of the two lines is the query would be a guess, so no figures).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from maitred.cli._common import CACHE_OPT, console, dump_json, err_console
from maitred.cli._common import index_progress as _progress
from maitred.errors import EmptyCatalogError, InputError
from maitred.recall.analyzers import DEFAULT_ANALYZER, analyzer_names
from maitred.recall.embedders import AUTO, embedder_names
from maitred.recall.evaluate import (
    QUALITY_KEYS,
    STEP_K,
    STEP_KEYS,
    EvalSet,
    Query,
    StepMode,
    describe_unknown,
    evaluate_routing,
    load_queries,
    load_sets,
    pair_sets,
)
from maitred.recall.languages import catalog_languages
from maitred.recall.registry import make_recaller, recaller_names
from maitred.skills.catalog import load_catalog

_METHOD_HELP = (
    f"Recall method, repeat for several: {', '.join(recaller_names())}; append +intents to "
    "also rank the requests of a multi-request message that point elsewhere (e.g. "
    "fused+intents), +intents-all to split every such message; +servers (last) lifts "
    "the tools of a dominant MCP server (tools with a server key)."
)


def routing(
    catalog: list[str] = typer.Option(
        [],
        "--skills",
        "-s",
        help="Skill folders / tools file (repeat; pairs with --queries; default: --sets).",
    ),
    queries: list[Path] = typer.Option(
        [],
        "--queries",
        "-q",
        help='JSONL {"id","text","gold":[...]}, optionally "steps":[...] (repeat for several '
        "sets).",
    ),
    sets: Path | None = typer.Option(
        None,
        "--sets",
        help='JSON {"sets": [{"name","catalog","queries"}]}, paths relative to it '
        "(default: the --skills/--queries pairs).",
    ),
    method: list[str] = typer.Option(["adaptive"], "--method", "-m", help=_METHOD_HELP),
    step_k: int = typer.Option(
        STEP_K,
        "--step-k",
        min=1,
        help="Skills each step of a step-wise query is shown (its top k).",
    ),
    steps: str = typer.Option(
        "together",
        "--steps",
        help="How a step-wise query's steps are ranked: together (as one task: the task's "
        "servers weigh in, each step shows new tools) or apart (each on its own).",
    ),
    cache_dir: Path | None = CACHE_OPT,
    analyzer: str = typer.Option(
        DEFAULT_ANALYZER,
        "--analyzer",
        help=f"How lexical recall cuts text into terms: {', '.join(analyzer_names())}.",
    ),
    embedder: str = typer.Option(
        AUTO,
        "--embedder",
        help=f"The dense half's model: {AUTO} (by the catalog's languages), "
        f"{', '.join(embedder_names())}.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON."),
) -> None:
    """Score recall methods on labelled queries, over one set or several.

    Each result also names the catalog's detected languages and the analyzer and embedder the
    method was built with (``auto`` resolved).
    """
    if steps not in ("together", "apart"):
        raise typer.BadParameter(f"--steps must be 'together' or 'apart', not {steps!r}")
    chosen = _chosen_sets(catalog, queries, sets)
    # one set and one method keep the plain result object of earlier versions (no "set" key)
    with_set = len(chosen) > 1 or len(method) > 1
    rows: list[dict[str, Any]] = []
    failed = False
    for spec in chosen:
        set_rows, bad = _run_set(
            spec,
            method,
            cache_dir,
            with_set,
            step_k=step_k,
            step_mode="together" if steps == "together" else "apart",
            show_progress=not as_json,
            settings={"analyzer": analyzer, "embedder": embedder},
        )
        rows.extend(set_rows)
        failed = failed or bad
    if not rows:
        raise typer.Exit(code=1)
    if as_json:  # the shape follows what was asked, not how many sets could be scored
        dump_json(rows[0] if not with_set else {"results": rows})
    elif not with_set:
        _print_one(rows[0])
    else:
        _print_many(rows)
    if failed:
        raise typer.Exit(code=1)


def _chosen_sets(catalog: list[str], queries: list[Path], sets: Path | None) -> list[EvalSet]:
    if sets is not None:
        if catalog or queries:
            raise typer.BadParameter("give either --sets or --skills/--queries, not both")
        return load_sets(sets)
    if not catalog or not queries:
        raise typer.BadParameter("give --skills and --queries (or --sets FILE)")
    return pair_sets(catalog, queries)


def _run_set(
    spec: EvalSet,
    methods: list[str],
    cache_dir: Path | None,
    with_set: bool,
    *,
    step_k: int,
    step_mode: StepMode = "together",
    show_progress: bool,
    settings: dict[str, str],
) -> tuple[list[dict[str, Any]], bool]:
    """Every method on one set; returns its rows and whether anything was wrong."""
    bad: list[InputError] = []
    try:  # a repeated id refuses the file, after every other bad line was reported
        labelled = load_queries(spec.queries, on_error=bad.append, repeated="refuse")
    finally:
        for err in bad:
            err_console.print(f"[yellow]skipped:[/] {escape(str(err))}", highlight=False)
    cat = load_catalog(spec.catalog)
    if len(cat) == 0:
        where = ", ".join(map(str, spec.catalog))
        raise EmptyCatalogError(f"{where}: the catalog holds no skills or tools; check the path")
    known = set(cat.names)
    missing = [q for q in labelled if not all(g in known for g in q.gold)]
    if missing:
        _report_unknown(spec, labelled, missing, known)
    rows = []
    languages = catalog_languages(cat)
    for name in methods:
        recaller = make_recaller(
            name,
            cat,
            cache_dir=cache_dir,
            progress=_progress(show_progress),
            analyzer=settings["analyzer"],
            embedder=settings["embedder"],
        )
        result = evaluate_routing(
            recaller,
            labelled,
            name,
            known=known,
            on_unknown=_reported_already,
            on_unranked=partial(_report_unranked, spec, name),
            step_k=step_k,
            steps=step_mode,
        )
        result["languages"] = languages
        result.update(getattr(recaller, "settings", None) or {})
        rows.append({"set": spec.name, **result} if with_set else result)
    scored = rows[0]["n_queries"] if rows else 0
    if not scored:
        err_console.print(
            f"[bold red]error:[/] {escape(str(spec.queries))}: no query could be scored "
            f"({len(labelled)} read, {len(bad)} bad lines); every query needs a gold skill "
            "that is in the catalog",
            highlight=False,
        )
        return [], True  # no figures at all rather than zeros that read as a result
    return rows, bool(bad)


def _reported_already(skipped: list[Query]) -> None:
    """Queries with unknown gold are reported once per set, before any method runs."""


def _report_unknown(
    spec: EvalSet, all_q: list[Query], skipped: list[Query], known: set[str]
) -> None:
    err_console.print(
        f"[yellow]left out:[/] {escape(str(spec.queries))}: {len(skipped)} of {len(all_q)} "
        f"queries name gold skills missing from the catalog "
        f"({escape(describe_unknown(skipped, known))}); check that the catalog is the one "
        "the queries were written for",
        highlight=False,
    )


def _report_unranked(spec: EvalSet, method: str, empty: list[Query]) -> None:
    first = ", ".join(q.id for q in empty[:3])
    err_console.print(
        f"[yellow]note:[/] {escape(str(spec.queries))}: {method} ranked nothing for "
        f"{len(empty)} queries (e.g. {escape(first)}): no word of theirs is indexed "
        "(scored as misses)",
        highlight=False,
    )


def _print_one(result: dict[str, Any]) -> None:
    table = Table(title=f"routing: {result['method']} on {result['n_queries']} queries")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key in (*QUALITY_KEYS, "ms_per_query"):
        table.add_row(key, f"{result[key]:.4f}" if key != "ms_per_query" else f"{result[key]:.2f}")
    for key in STEP_KEYS if "n_step_queries" in result else ():
        value = result[key]
        table.add_row(key, f"{value:.4f}" if isinstance(value, float) else str(value))
    console.print(table)
    console.print(_settings_line(result), highlight=False)


def _settings_line(row: dict[str, Any]) -> str:
    """``languages zh 0.997, en 0.003; analyzer scripts; embedder ...`` for one result."""
    langs = ", ".join(f"{k} {v:.3f}" for k, v in row.get("languages", {}).items()) or "none"
    parts = [f"languages {langs}"]
    parts += [f"{key} {row[key]}" for key in ("analyzer", "embedder") if key in row]
    where = f"{row['set']} / {row['method']}: " if "set" in row else ""
    return escape(where + "; ".join(parts))


_SHORT = {
    "n_queries": "n",
    "hit_at_1": "Hit@1",
    "recall_at_5": "R@5",
    "recall_at_10": "R@10",
    "mrr": "MRR",
    "ndcg_at_10": "nDCG@10",
    "complete_at_10": "C@10",
    "ms_per_query": "ms/q",
    "n_step_queries": "steps n",
    "step_complete_at_k": "step C@k",
    "step_exposed": "step shown",
    "oneshot_complete_at_exposed": "1-shot C@shown",
}


def _print_many(rows: list[dict[str, Any]]) -> None:
    steps = [k for k in STEP_KEYS if k != "step_k"] if any("step_k" in r for r in rows) else []
    table = Table(title="routing")
    for col in ("set", "method", "n_queries", *QUALITY_KEYS, "ms_per_query", *steps):
        left = col in ("set", "method")
        table.add_column(_SHORT.get(col, col), justify="left" if left else "right", no_wrap=left)
    for row in rows:
        cells = [str(row.get("set", "")), row["method"], str(row["n_queries"])]
        cells += [f"{row[k]:.3f}" for k in QUALITY_KEYS] + [f"{row['ms_per_query']:.2f}"]
        cells += [_cell(row.get(k)) for k in steps]
        table.add_row(*cells)
    console.print(table)
    for row in rows:
        console.print(_settings_line(row), highlight=False)


def _cell(value: Any) -> str:
    """A step-wise figure of a row; ``-`` for a set without step-wise queries."""
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)
