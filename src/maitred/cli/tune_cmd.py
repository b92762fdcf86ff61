"""`maitred tune`: fit recall to a catalog from its own text, and store the result."""

from __future__ import annotations

from pathlib import Path

import typer

from maitred.cli._common import CACHE_OPT, SKILLS_OPT, console, dump_json, progress_bar
from maitred.cli._conventions import App
from maitred.recall.tune import MAX_PSEUDO_QUERIES, save_tuning, tune_catalog, tune_steps
from maitred.settings import Settings
from maitred.skills.catalog import load_catalog


def tune(
    skills: list[str] = SKILLS_OPT,
    cache_dir: Path | None = CACHE_OPT,
    seed: int = typer.Option(0, "--seed", help="Seed of the pseudo-query sample (default: 0)."),
    max_queries: int = typer.Option(
        MAX_PSEUDO_QUERIES,
        "--max-queries",
        min=1,
        help=f"Pseudo-queries scored at most (default: {MAX_PSEUDO_QUERIES}).",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print the stored tuning as JSON (default: a summary)."
    ),
) -> None:
    """Tune bm25/fused recall to a catalog without labels, and store it with the index.

    Held-out sentences of each tool's own text (body, parameter descriptions) are asked as
    queries; the field weights and fusion weight that find their tools best are stored as
    tuning.json for this catalog version, and used by `-m bm25` / `-m fused` with the same
    --cache-dir (as bm25(tuned) / fused(tuned)).
    """
    catalog = load_catalog(skills)
    where = cache_dir or Settings.from_env().cache_dir
    with progress_bar("tuning", tune_steps(catalog)) as advance:
        last = {"done": 0}

        def report(done: int, total: int) -> None:
            advance(done - last["done"])
            last["done"] = done

        tuning = tune_catalog(catalog, seed=seed, limit=max_queries, progress=report)
    path = save_tuning(where, catalog, tuning)
    if as_json:
        dump_json({**tuning.to_json(), "path": str(path)})
        return
    before, after = tuning.before, tuning.after
    console.print(
        f"tuned on {tuning.n_queries} held-out pseudo-queries of {len(catalog)} skills "
        f"(catalog {catalog.version[:15]})\n"
        f"  field weights  {tuning.field_weights}\n"
        f"  lexical weight {tuning.lexical_weight}\n"
        f"  bm25  nDCG@10  {before['bm25']:.3f} -> {after['bm25']:.3f}\n"
        f"  fused nDCG@10  {before['fused']:.3f} -> {after['fused']:.3f}\n"
        f"stored in {path}; used by -m bm25 / -m fused with this --cache-dir",
        highlight=False,
        markup=False,
    )


def register(app: App, eval_app: App) -> None:
    """Add `tune` to the app."""
    app.command("tune")(tune)
