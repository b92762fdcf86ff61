"""The λ × cost-dispersion grid: every rule in every cell, a table and a PNG.

Each cell re-draws every skill's cost from the ``seeded`` cost model at dispersion ``d``
(:func:`~maitred.lab.depth.tasks.recost`; train and test share a skill's cost, since cost is a
property of the skill) and runs :func:`~maitred.lab.depth.evaluate.evaluate_depth` at ``λ``: all
tuning and training on the training tasks of that cell, all figures on its test tasks.

:func:`plot_grid` draws one panel per cell -- mean payoff against mean exposed skills, one
marker per rule -- with matplotlib's Agg backend (the ``report`` extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from maitred.depth.payoff import DepthTask
from maitred.errors import MissingExtraError
from maitred.lab.depth.evaluate import BASELINES, RULES, evaluate_depth
from maitred.lab.depth.tasks import recost


def run_grid(
    train: Sequence[DepthTask],
    test: Sequence[DepthTask],
    lambdas: Sequence[float],
    dispersions: Sequence[float],
    *,
    seed: int = 0,
    n_boot: int = 1000,
    guard: float | None = None,
) -> list[dict[str, Any]]:
    """One row per (λ, d, rule): payoff, CI vs CAM-DF, exposure, sufficiency, TOST verdict.

    ``guard``: tune every rule under a sufficiency floor (see :func:`evaluate_depth`).
    """
    rows: list[dict[str, Any]] = []
    for d in dispersions:
        cell_train, cell_test = recost(train, d, seed), recost(test, d, seed)
        for lam in lambdas:
            result = evaluate_depth(
                cell_train, cell_test, lam, n_boot=n_boot, seed=seed, guard=guard
            )
            for name in RULES:
                r = result["rules"][name]
                rows.append(
                    {
                        "lambda": lam,
                        "dispersion": d,
                        "rule": name,
                        "payoff": r["payoff"],
                        "payoff_ci_vs_camdf": r["payoff_ci_vs_camdf"],
                        "mean_exposed": r["mean_exposed"],
                        "sufficiency": r["sufficiency"],
                        "noninferior": r["sufficiency_vs_full"]["noninferior"],
                        "best_baseline": result["best_baseline"],
                    }
                )
    return rows


def grid_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """Two tables: payoff per rule and cell, and CAM-DF against the best baseline per cell."""
    cells = sorted({(r["lambda"], r["dispersion"]) for r in rows})
    get = {(r["lambda"], r["dispersion"], r["rule"]): r for r in rows}
    head = "| λ | d | " + " | ".join(RULES) + " |"
    lines = [head, "|" + "---|" * (len(RULES) + 2)]
    for lam, d in cells:
        vals = [
            f"{get[(lam, d, n)]['payoff']:.3f} ({get[(lam, d, n)]['mean_exposed']:.1f})"
            for n in RULES
        ]
        lines.append(f"| {lam:g} | {d:g} | " + " | ".join(vals) + " |")
    lines += [
        "",
        "| λ | d | best baseline | its payoff | camdf | camdf − best, 95% CI | excludes 0 |"
        " camdf exposed / full | camdf sufficiency non-inferior |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for lam, d in cells:
        best = get[(lam, d, "camdf")]["best_baseline"]
        b, c, f = get[(lam, d, best)], get[(lam, d, "camdf")], get[(lam, d, "full")]
        lo, hi = b["payoff_ci_vs_camdf"]
        verdict = "yes (camdf better)" if lo > 0 else ("yes (camdf worse)" if hi < 0 else "no")
        lines.append(
            f"| {lam:g} | {d:g} | {best} | {b['payoff']:.3f} | {c['payoff']:.3f} | "
            f"[{lo:+.3f}, {hi:+.3f}] | {verdict} | {c['mean_exposed']:.1f} / "
            f"{f['mean_exposed']:.1f} | {'yes' if c['noninferior'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def plot_grid(rows: Sequence[dict[str, Any]], path: Path | str, title: str = "") -> None:
    """Write the payoff-vs-exposure PNG, one panel per (λ, d) cell."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingExtraError("the depth grid plot", "report", "matplotlib") from None
    lambdas = sorted({r["lambda"] for r in rows})
    dispersions = sorted({r["dispersion"] for r in rows})
    fig, axes = plt.subplots(
        len(lambdas),
        len(dispersions),
        figsize=(4 * len(dispersions), 3.2 * len(lambdas)),
        squeeze=False,
    )
    markers = dict(zip(RULES, ("o", "s", "D", "^", "v", "*", "P", "X"), strict=True))
    for i, lam in enumerate(lambdas):
        for j, d in enumerate(dispersions):
            ax = axes[i][j]
            for r in rows:
                if r["lambda"] == lam and r["dispersion"] == d:
                    size = 140 if r["rule"].startswith("camdf") else 60
                    ax.scatter(
                        r["mean_exposed"],
                        r["payoff"],
                        marker=markers[r["rule"]],
                        s=size,
                        label=r["rule"],
                        alpha=0.6 if r["rule"] in BASELINES else 0.9,
                    )
            ax.set_title(f"λ={lam:g}, d={d:g}", fontsize=9)
            ax.set_xlabel("mean exposed skills", fontsize=8)
            ax.set_ylabel("mean payoff", fontsize=8)
            ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(RULES), fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)
