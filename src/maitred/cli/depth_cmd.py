"""`maitred eval depth` and the `maitred depth` group (make-tasks, domain-queries, train).

Thin adapters over :mod:`maitred.depth`: read options, call the library, print.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from maitred.cli._common import (
    METHOD_OPT,
    SKILLS_OPT,
    console,
    dump_json,
    err_console,
    index_progress,
)
from maitred.cli._conventions import App
from maitred.depth.camdf import save_model, train_camdf
from maitred.depth.payoff import DepthTask
from maitred.errors import ConfigError, InputError
from maitred.lab.depth.domain_tasks import domain_queries
from maitred.lab.depth.evaluate import RULES, evaluate_depth
from maitred.lab.depth.grid import grid_markdown, plot_grid, run_grid
from maitred.lab.depth.tasks import COST_MODELS, CostModel, catalog_costs, load_tasks, make_tasks
from maitred.lab.depth.tasks import write_tasks as write_task_file
from maitred.lab.depth.tuning import sufficiency_floor
from maitred.lab.domains import DOMAINS
from maitred.recall.evaluate import load_queries
from maitred.recall.registry import make_recaller
from maitred.skills.catalog import load_catalog


def _floats(text: str, what: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(f"{what} must be comma-separated numbers, got {text!r}") from None
    if not values or not all(math.isfinite(v) and v >= 0 for v in values):
        raise ConfigError(f"{what} must be comma-separated finite numbers >= 0, got {text!r}")
    return values


def _read(path: Path, bad: list[InputError]) -> list[DepthTask]:
    """The good tasks of ``path``; each bad line is reported (file and line) and added to
    ``bad``, so the command can finish its work and then exit 1."""
    found: list[InputError] = []
    try:  # a repeated id refuses the file, after every other bad line was reported
        tasks = load_tasks(path, on_error=found.append, repeated="refuse")
    finally:
        _report_bad(found, path)
    bad.extend(found)
    return tasks


def _report_bad(found: list[InputError], path: Path) -> None:
    """The first ten bad lines of ``path`` on stderr, then how many more there were."""
    for err in found[:10]:
        err_console.print(f"[yellow]skipped:[/] {escape(str(err))}", highlight=False)
    if len(found) > 10:
        err_console.print(f"  ... and {len(found) - 10} more bad line(s) in {path}")


def _exit_if_bad(bad: list[InputError]) -> None:
    """One rule for bad input: the good records were used; any bad one makes the exit status 1."""
    if bad:
        err_console.print(f"{len(bad)} bad line(s) were skipped (exit status 1)")
        raise typer.Exit(1)


def _print_report(result: dict[str, object]) -> None:
    rules = result["rules"]
    assert isinstance(rules, dict)
    table = Table(title=f"depth rules at λ={result['lambda']} on {result['n_test']} test tasks")
    for col in (
        "rule",
        "payoff",
        "camdf − rule (95% CI)",
        "exposed",
        "sufficiency",
        "TOST vs full",
    ):
        table.add_column(col, justify="left" if col == "rule" else "right")
    for name in RULES:
        r = rules[name]
        lo, hi = r["payoff_ci_vs_camdf"]
        t = r["sufficiency_vs_full"]
        table.add_row(
            name,
            f"{r['payoff']:.4f}",
            f"[{lo:+.4f}, {hi:+.4f}]",
            f"{r['mean_exposed']:.2f}",
            f"{r['sufficiency']:.3f}",
            f"{t['diff']:+.3f} p={t['p_noninferior']:.3f}",
        )
    console.print(table)
    console.print(f"best tuned baseline on test: {result['best_baseline']}")
    console.print("camdf_lite coefficients (standardised features):")
    coefs = result["camdf_lite_coefficients"]
    assert isinstance(coefs, dict)
    for feature, value in coefs.items():
        console.print(f"  {feature:>18} {value:+.3f}")


def eval_depth(
    train: Path = typer.Option(..., "--train", help="Training task JSONL (tuning, fitting)."),
    test: Path = typer.Option(..., "--test", help="Test task JSONL (reporting only)."),
    lam: float = typer.Option(0.05, "--lambda", min=0.0, help="Cost weight λ in U = 1{G⊆A} − λΣc."),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON."),
    noise: bool = typer.Option(True, "--noise/--no-noise", help="Label-noise robustness check."),
    grid: bool = typer.Option(False, "--grid", help="Run the λ × dispersion grid instead."),
    lambdas: str = typer.Option("0.01,0.03,0.1", "--lambdas", help="Grid λ values."),
    dispersions: str = typer.Option("0,0.5,1", "--dispersions", help="Grid cost dispersions."),
    out: Path = typer.Option(Path("depth-grid"), "--out", help="Grid output folder."),
    boot: int = typer.Option(2000, "--boot", min=1, help="Bootstrap resamples."),
    seed: int = typer.Option(0, "--seed", help="Seed (bootstrap, noise, grid costs)."),
    guard: float | None = typer.Option(
        None,
        "--sufficiency-guard",
        help="Tune every rule under a floor: training sufficiency at most this below full's "
        "(default: no floor).",
    ),
) -> None:
    """Compare every depth rule: payoff, paired bootstrap CI vs CAM-DF, exposure, sufficiency.

    Bad task lines are reported with file and line and skipped; the exit status is then 1.
    """
    bad: list[InputError] = []
    train_tasks, test_tasks = _read(train, bad), _read(test, bad)
    if grid:
        rows = run_grid(
            train_tasks,
            test_tasks,
            _floats(lambdas, "--lambdas"),
            _floats(dispersions, "--dispersions"),
            seed=seed,
            n_boot=boot,
            guard=guard,
        )
        out.mkdir(parents=True, exist_ok=True)
        (out / "grid.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
        (out / "grid.md").write_text(grid_markdown(rows), encoding="utf-8")
        plot_grid(rows, out / "grid.png", title=f"{train.name} → {test.name}")
        if as_json:
            dump_json(rows)
        else:
            console.print(grid_markdown(rows), markup=False, highlight=False)
            console.print(f"wrote {out / 'grid.json'}, {out / 'grid.md'}, {out / 'grid.png'}")
        _exit_if_bad(bad)
        return
    result = evaluate_depth(
        train_tasks, test_tasks, lam, n_boot=boot, seed=seed, noise=noise, guard=guard
    )
    if as_json:
        dump_json(result)
    else:
        _print_report(result)
    _exit_if_bad(bad)


def make_tasks_cmd(
    skills: list[str] = SKILLS_OPT,
    queries: Path = typer.Option(..., "--queries", "-q", help='JSONL {"id","text","gold":[...]}.'),
    method: str = METHOD_OPT,
    top: int = typer.Option(20, "--top", min=1, help="Candidates kept per task."),
    costs: str = typer.Option("tokens", "--costs", help=f"Cost model: {', '.join(COST_MODELS)}."),
    dispersion: float = typer.Option(
        1.0, "--dispersion", min=0.0, help="Seeded cost dispersion d."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the seeded cost model."),
    out: Path = typer.Option(..., "--out", "-o", help="Task JSONL to write."),
    cache_dir: Path | None = typer.Option(
        None, "--cache-dir", help="Where indexes persist (default: built in memory, not kept)."
    ),
) -> None:
    """Build a depth task file from labelled queries ranked by a recall method."""
    if costs not in COST_MODELS:
        raise ConfigError(f"unknown --costs {costs!r}; choose one of {', '.join(COST_MODELS)}")
    cost_model: CostModel = costs  # type: ignore[assignment]
    cat = load_catalog(skills)
    bad: list[InputError] = []
    try:  # a repeated id refuses the file, after every other bad line was reported
        labelled = load_queries(queries, on_error=bad.append, repeated="refuse")
    finally:
        _report_bad(bad, queries)
    recaller = make_recaller(method, cat, cache_dir=cache_dir, progress=index_progress(True))
    per_skill = catalog_costs(cat, cost_model, dispersion=dispersion, seed=seed)
    tasks, skipped = make_tasks(cat, labelled, recaller, top=top, costs=per_skill)
    write_task_file(tasks, out)
    note = f" ({len(skipped)} skipped: a gold skill is not in the catalog)" if skipped else ""
    console.print(f"wrote {len(tasks)} tasks to {out}{note}")
    _exit_if_bad(bad)


def domain_queries_cmd(
    domain: str = typer.Option(
        ..., "--domain", "-d", help=f"A built-in domain, by name: {', '.join(DOMAINS)}."
    ),
    n: int = typer.Option(600, "--messages", "-n", min=1, help="How many two-request messages."),
    seed: int = typer.Option(0, "--seed", help="Generator seed."),
    prefix: str | None = typer.Option(None, "--prefix", help="Id prefix (default: the domain's)."),
    out: Path = typer.Option(..., "--out", "-o", help="Labelled query JSONL to write."),
) -> None:
    """Write a built-in domain's two-request messages labelled with both skills."""
    rows = domain_queries(domain, n, seed, prefix)
    text = "".join(
        json.dumps({"id": q.id, "text": q.text, "gold": list(q.gold)}) + "\n" for q in rows
    )
    out.write_text(text, encoding="utf-8")
    console.print(f"wrote {len(rows)} queries to {out}")


def train_cmd(
    tasks: Path = typer.Option(..., "--tasks", help="Training task JSONL."),
    lam: float = typer.Option(..., "--lambda", min=0.0, help="Cost weight λ."),
    lite: bool = typer.Option(False, "--lite", help="Train camdf_lite (ten features)."),
    out: Path = typer.Option(..., "--out", "-o", help="Model JSON to write."),
    guard: float | None = typer.Option(
        None,
        "--sufficiency-guard",
        help="Tune the stop threshold under a floor: training sufficiency at most this below "
        "exposing the whole list (default: no floor).",
    ),
) -> None:
    """Train a CAM-DF stopper and save it (use with depth rule `camdf`, model=PATH).

    Bad task lines are reported with file and line and skipped; the exit status is then 1.
    """
    bad: list[InputError] = []
    train_tasks = _read(tasks, bad)
    model = train_camdf(
        train_tasks,
        lam,
        kind="camdf_lite" if lite else "camdf",
        floor=sufficiency_floor(train_tasks, guard),
    )
    save_model(model, out)
    console.print(f"wrote {model.kind} (λ={lam}, data {model.data_hash[:19]}…) to {out}")
    for feature, value in model.coefficients():
        console.print(f"  {feature:>20} {value:+.3f}")
    _exit_if_bad(bad)


def register(app: App, eval_app: App) -> None:
    """Add this module's commands to the `maitred` app (and its `eval` group).

    Old spellings kept as hidden aliases: make-tasks ``--catalog``/``-c`` (as everywhere) and
    domain-queries ``--n`` (now ``--messages``/``-n``).
    """
    depth_app = App(help="Cost-aware depth: task files and CAM-DF models.")
    depth_app.command("make-tasks")(make_tasks_cmd)
    depth_app.command("domain-queries", aliases={"--n": "--messages"})(domain_queries_cmd)
    depth_app.command("train")(train_cmd)
    app.add_typer(depth_app, name="depth")
    eval_app.command("depth")(eval_depth)
