"""Every cost-aware depth figure in docs/depth.md, from one command.

Data (built when missing, all under ``--out``, default ``bench-out/depth``):

* **MetaTool** -- the 497 real two-tool queries, split as ``benchmarks/metatool_routing.py``
  splits them (149 train from dev, 348 test); 199-tool catalog; cost = description tokens.
* **sitecare** and **airline** -- two-request customer messages from each domain's phrase banks
  (``maitred depth domain-queries``), 400 train (seed 1) and 600 test (seed 2); cost = each
  skill's declared contract cost.

Each is ranked top 20 by ``dense`` and by ``dense+intents-all`` (each request of the message ranked,
the rankings interleaved; :mod:`maitred.recall.intents`). Then, at ``λ = 0.05``:
``evaluate_depth`` free (every rule tuned for payoff alone, as the seed paper does) and guarded
(every rule tuned under the sufficiency floor ``full``'s training sufficiency − 0.02), with the
label-noise check; and the ``λ × d`` grid on the ``dense+intents-all`` ranking.

Run: ``.venv/bin/python benchmarks/depth_eval.py [--no-grid] [--boot N]``. Writes
``report.md`` (the tables), ``*.json`` (every result) and ``grid-*/`` (grid tables and plots).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from maitred.depth.payoff import DepthTask
from maitred.lab.depth.domain_tasks import domain_queries
from maitred.lab.depth.evaluate import BASELINES, RULES, evaluate_depth
from maitred.lab.depth.grid import grid_markdown, plot_grid, run_grid
from maitred.lab.depth.tasks import CostModel, catalog_costs, load_tasks, make_tasks, write_tasks
from maitred.lab.domains import get_domain
from maitred.recall.evaluate import Query, load_queries
from maitred.recall.registry import make_recaller
from maitred.skills.catalog import load_catalog

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

LAMBDA = 0.05
GUARD = 0.02
RANKINGS = ("dense", "dense+intents-all")
DATASETS = ("metatool", "sitecare", "airline")


def _metatool_queries(out: Path) -> tuple[list[Query], list[Query], Path]:
    folder = REPO / "bench-out" / "metatool"
    if not (folder / "test-multi.jsonl").is_file():
        import metatool_routing

        args = argparse.Namespace(
            data=REPO / ".." / "shared" / "data" / "metatool",
            out=folder,
            seed=0,
            dev_size=2000,
            test_size=3000,
            no_tune=True,
        )
        metatool_routing.prepare(args)
    train = [q for q in load_queries(folder / "dev.jsonl") if len(q.gold) > 1]
    return train, load_queries(folder / "test-multi.jsonl"), folder / "tools.jsonl"


def build_tasks(dataset: str, ranking: str, out: Path) -> tuple[list[DepthTask], list[DepthTask]]:
    """Train and test tasks for one dataset and ranking (read back when already built)."""
    paths = [out / f"{dataset}-{ranking}-{side}.jsonl" for side in ("train", "test")]
    if all(p.is_file() for p in paths):
        return load_tasks(paths[0]), load_tasks(paths[1])
    if dataset == "metatool":
        train_q, test_q, catalog_path = _metatool_queries(out)
        cost_model: CostModel = "tokens"
    else:
        domain = get_domain(dataset)
        train_q = domain_queries(dataset, 400, 1, f"{domain.prefix}tr")
        test_q = domain_queries(dataset, 600, 2, f"{domain.prefix}te")
        catalog_path, cost_model = domain.skills_dir, "contract"
    catalog = load_catalog(catalog_path)
    recaller = make_recaller(ranking, catalog, cache_dir=REPO / "bench-out" / "index")
    costs = catalog_costs(catalog, cost_model)
    built = []
    for queries, path in zip((train_q, test_q), paths, strict=True):
        tasks, _ = make_tasks(catalog, queries, recaller, top=20, costs=costs)
        write_tasks(tasks, path)
        built.append(tasks)
    return built[0], built[1]


def main_table(result: dict[str, Any]) -> str:
    """One setting's per-rule table (markdown)."""
    lines = [
        "| rule | payoff | camdf − rule, 95% CI | mean exposed | exposure cut vs full | "
        "sufficiency | Δ suff vs full (90% CI) | non-inferior (δ=0.05) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in RULES:
        r = result["rules"][name]
        lo, hi = r["payoff_ci_vs_camdf"]
        t = r["sufficiency_vs_full"]
        lines.append(
            f"| {name} | {r['payoff']:.3f} | [{lo:+.3f}, {hi:+.3f}] | {r['mean_exposed']:.2f} | "
            f"{r['exposure_reduction']:.0%} | {r['sufficiency']:.3f} | {t['diff']:+.3f} "
            f"[{t['ci90'][0]:+.3f}, {t['ci90'][1]:+.3f}] | {'yes' if t['noninferior'] else 'no'} |"
        )
    return "\n".join(lines)


def noise_table(noise: dict[str, dict[str, dict[str, float]]]) -> str:
    """Payoff / mean exposed per flip rate (clean test set)."""
    head = "| flip rate | " + " | ".join(RULES) + " |"
    lines = [head, "|---" * (len(RULES) + 1) + "|"]
    for rate, rules in noise.items():
        cells = [f"{rules[n]['payoff']:.3f} / {rules[n]['mean_exposed']:.1f}" for n in RULES]
        lines.append(f"| {rate} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary_row(dataset: str, ranking: str, guard: float | None, result: dict[str, Any]) -> str:
    """One line of the headline table: does CAM-DF meet the issue's bar here?"""
    rules = result["rules"]
    cam, full = rules["camdf"], rules["full"]
    best = max(BASELINES[1:], key=lambda n: float(rules[n]["payoff"]))
    lo, hi = rules[best]["payoff_ci_vs_camdf"]
    t = cam["sufficiency_vs_full"]
    verdict = "camdf better" if lo > 0 else "camdf worse" if hi < 0 else "level"
    return (
        f"| {dataset} | {ranking} | {'—' if guard is None else guard} | "
        f"{cam['payoff']:.3f} | {best} {rules[best]['payoff']:.3f} | [{lo:+.3f}, {hi:+.3f}] "
        f"({verdict}) | {cam['mean_exposed']:.2f} / {full['mean_exposed']:.0f} "
        f"({cam['exposure_reduction']:.0%}) | {cam['sufficiency']:.3f} vs "
        f"{full['sufficiency']:.3f} | {'yes' if t['noninferior'] else 'no'} |"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=REPO / "bench-out" / "depth")
    parser.add_argument("--boot", type=int, default=2000)
    parser.add_argument("--no-grid", action="store_true", help="skip the λ × d grids")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    summary = [
        "| data | ranking | guard | camdf payoff | best tuned baseline | camdf − best, 95% CI | "
        "camdf exposed / full | sufficiency camdf vs full | non-inferior |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    sections: list[str] = []
    for dataset in DATASETS:
        for ranking in RANKINGS:
            train, test = build_tasks(dataset, ranking, args.out)
            for guard in (None, GUARD):
                start = time.perf_counter()
                result = evaluate_depth(
                    train, test, LAMBDA, n_boot=args.boot, noise=True, guard=guard
                )
                tag = f"{dataset}-{ranking}-{'free' if guard is None else f'guard{guard}'}"
                (args.out / f"{tag}.json").write_text(json.dumps(result, indent=1) + "\n")
                summary.append(summary_row(dataset, ranking, guard, result))
                ablation = result["ablation"]["camdf_threshold_0.5"]
                coefs = ", ".join(
                    f"`{k}` {v:+.2f}" for k, v in result["camdf_lite_coefficients"].items()
                )
                sections.append(
                    f"### {tag}\n\nλ={LAMBDA}, {len(train)} train / {len(test)} test tasks, "
                    f"sufficiency guard {guard}, CAM-DF stop threshold tuned on train: "
                    f"{result['camdf_threshold']}\n\n{main_table(result)}\n\n"
                    f"Ablation, CAM-DF at the untuned threshold 0.5: payoff "
                    f"{ablation['payoff']:.3f}, exposed {ablation['mean_exposed']:.2f}, "
                    f"sufficiency {ablation['sufficiency']:.3f}.\n\n"
                    f"Label noise (retrained on flipped labels, clean test set), payoff / "
                    f"mean exposed:\n\n{noise_table(result['noise'])}\n\n"
                    f"camdf_lite coefficients: {coefs}\n"
                )
                print(summary[-1], f"({time.perf_counter() - start:.0f} s)", flush=True)
    grids: list[str] = []
    if not args.no_grid:
        for dataset in DATASETS:
            train, test = build_tasks(dataset, "dense+intents-all", args.out)
            rows = run_grid(train, test, (0.01, 0.03, 0.1), (0.0, 0.5, 1.0), n_boot=1000)
            folder = args.out / f"grid-{dataset}"
            folder.mkdir(exist_ok=True)
            (folder / "grid.json").write_text(json.dumps(rows, indent=1) + "\n")
            (folder / "grid.md").write_text(grid_markdown(rows))
            plot_grid(rows, folder / "grid.png", title=f"{dataset}, dense+intents-all, top 20")
            grids.append(f"### {dataset} (dense+intents-all)\n\n{grid_markdown(rows)}")
            print(f"grid {dataset} done", flush=True)
    report = "\n\n".join(
        ["## Headline (λ = 0.05)", "\n".join(summary), *sections, "## λ × d grids", *grids]
    )
    (args.out / "report.md").write_text(report + "\n", encoding="utf-8")
    print(f"wrote {args.out / 'report.md'}")


if __name__ == "__main__":
    main()
