"""The embedder comparison table of BENCHMARKS.md from ``routing_loso.py --embedder NAME`` runs.

Each run writes ``bench-out/routing_loso[-NAME].json`` (the default ``minilm`` without a suffix).
This reads them and prints, per set, nDCG@10 of ``dense`` and of ``adaptive`` (leave-one-set-out:
its (a, p) fitted on the other sets with that embedder) for every embedder, then the mean over
the sets and the held-out margin of each embedder's ``adaptive`` to MiniLM's.

Run::

    for e in minilm minilm-tools minilm-l3 e5-small; do
        .venv/bin/python benchmarks/routing_loso.py --embedder $e \\
            --methods bm25-plain,bm25,dense,fused
    done
    .venv/bin/python benchmarks/embedder_table.py minilm,minilm-tools,minilm-l3,e5-small
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT = "minilm"
SHIPPED = "0.35,1.5"
"""``adaptive``'s shipped (lexical weight, power), a key of each set's grid."""


def load(name: str) -> dict[str, Any]:
    tag = "" if name == DEFAULT else f"-{name}"
    path = REPO / "bench-out" / f"routing_loso{tag}.json"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run routing_loso.py --embedder {name} first")
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return data


def main(argv: list[str]) -> None:
    names = argv[0].split(",") if argv else [DEFAULT]
    runs = {n: load(n)["sets"] for n in names}
    sets = [s for s in runs[names[0]] if all(s in r for r in runs.values())]
    head = "| set (skills, queries) | " + " | ".join(f"dense {n}" for n in names)
    head += " | " + " | ".join(f"adaptive {n} (LOSO a, p)" for n in names) + " |"
    lines = [head, "|---|" + "---:|" * (2 * len(names))]
    dense: dict[str, list[float]] = {n: [] for n in names}
    adaptive: dict[str, list[float]] = {n: [] for n in names}
    for s in sets:
        first = runs[names[0]][s]
        cells = []
        for n in names:
            d = runs[n][s]["methods"]["dense"]["ndcg_at_10"]
            dense[n].append(d)
            cells.append(f"{d:.3f}")
        for n in names:
            row = runs[n][s]
            a = row["loso_adaptive"]["ndcg_at_10"]
            adaptive[n].append(a)
            pair = row["loso_weight_power"]
            cells.append(f"{a:.3f} ({pair[0]:.2f}, {pair[1]:g})")
        lines.append(f"| {s} ({first['skills']}, {first['queries']}) | " + " | ".join(cells) + " |")
    mean = [f"{statistics.fmean(dense[n]):.3f}" for n in names]
    mean += [f"{statistics.fmean(adaptive[n]):.3f}" for n in names]
    lines.append(f"| mean of {len(sets)} sets | " + " | ".join(mean) + " |")
    shipped = [
        statistics.fmean(runs[n][s]["grid"][SHIPPED]["ndcg_at_10"] for s in sets) for n in names
    ]
    lines.append(
        f"| mean, adaptive with the shipped ({SHIPPED}) | "
        + " | ".join([""] * len(names) + [f"{x:.3f}" for x in shipped])
        + " |"
    )
    print("\n".join(lines))
    print()
    base = adaptive[names[0]]
    for n in names[1:]:
        margins = [x - y for x, y in zip(adaptive[n], base, strict=True)]
        wins = sum(m > 0 for m in margins)
        print(
            f"adaptive {n} - {names[0]} (LOSO): mean {statistics.fmean(margins):+.3f}, "
            f"worst {min(margins):+.3f}, better on {wins} of {len(margins)} sets"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
