"""Step-wise discovery: the needs of a task ranked apart against ranked together.

On every step-wise set (queries with ``steps``; today ``mcp-bench-steps``), for each ``k``
each step shows, it scores (``maitred.recall.evaluate_routing``'s figures):

- ``apart``: each step asked on its own (what the library did before);
- ``servers``: together, the task's server shares lifting each step's tools, no fresh tools
  (``rank_steps(fresh=False)``);
- ``fresh``: together, each step's top k drawn from tools the earlier steps did not show, no
  server lift (``prior=0``);
- ``together``: both (the library's default, ``maitred.recall.steps``);

with ``step_complete_at_k`` (every gold tool in the union of the steps' top k) and the union's
mean size (tools shown), so that a method is compared with another *at the same number of tools
shown*, not only at the same k. Then the server prior is chosen by five-fold cross-validation
over the set's tasks (seed 0; the prior maximising step-wise complete on four folds, scored on
the fifth) from :data:`PRIORS`, at each k of ``--cv-k``.

Run (after ``routing_sets.py`` converted the sets)::

    .venv/bin/python benchmarks/routing_steps.py [--sets bench-out/sets/sets.json]
        [--method adaptive] [--ks 1,2,3,4,5,7,10] [--cv-k 2,3]

Each text is ranked once per method (a memo in front of the recaller), so the variants cost
little beyond the first.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from maitred.recall import load_queries, make_recaller
from maitred.recall.base import Candidate, Recaller
from maitred.recall.evaluate import Query, load_sets, step_metrics
from maitred.recall.steps import PRIOR, rank_steps
from maitred.skills.catalog import load_catalog
from maitred.skills.model import Catalog

REPO = Path(__file__).resolve().parents[1]
PRIORS = (0.0, 0.25, 0.5, 1.0)
VARIANTS = {
    "apart": None,
    "servers": {"prior": PRIOR, "fresh": False},
    "fresh": {"prior": 0.0, "fresh": True},
    "together": {"prior": PRIOR, "fresh": True},
}


class Memo:
    """A recaller's rankings memoised by (text, k): the variants ask the same texts."""

    def __init__(self, inner: Recaller, catalog: Catalog) -> None:
        self.inner, self.catalog, self.name = inner, catalog, inner.name
        self._seen: dict[tuple[str, int], list[Candidate]] = {}

    def rank(self, text: str, k: int) -> list[Candidate]:
        key = (text, k)
        if key not in self._seen:
            self._seen[key] = self.inner.rank(text, k)
        return self._seen[key]


def complete(
    recaller: Memo, tasks: Sequence[Query], k: int, options: dict[str, Any] | None
) -> tuple[float, float]:
    """Mean step-wise complete and tools shown over ``tasks``."""
    done = shown = 0.0
    for task in tasks:
        if options is None:
            steps = [[c.name for c in recaller.rank(s, 100)[:k]] for s in task.steps]
        else:
            joint = rank_steps(recaller, task.steps, k, **options)
            steps = [[c.name for c in r[:k]] for r in joint]
        m = step_metrics(steps, [], task.gold, k)
        done += m["step_complete_at_k"]
        shown += m["step_exposed"]
    n = max(len(tasks), 1)
    return done / n, shown / n


def cross_validate(recaller: Memo, tasks: Sequence[Query], k: int) -> dict[str, Any]:
    """Five folds over the tasks: the prior chosen on four, scored on the fifth."""
    order = list(range(len(tasks)))
    random.Random(0).shuffle(order)
    folds = [order[i::5] for i in range(5)]
    chosen, total = [], 0.0
    for fold in folds:
        held = set(fold)
        fit = [tasks[i] for i in order if i not in held]
        best = max(PRIORS, key=lambda p: complete(recaller, fit, k, {"prior": p, "fresh": True})[0])
        chosen.append(best)
        total += complete(recaller, [tasks[i] for i in fold], k, {"prior": best, "fresh": True})[
            0
        ] * len(fold)
    return {"k": k, "priors": chosen, "step_complete_at_k": total / max(len(tasks), 1)}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=Path, default=REPO / "bench-out" / "sets" / "sets.json")
    parser.add_argument("--cache", type=Path, default=REPO / "bench-out" / "cache")
    parser.add_argument("--method", default="adaptive")
    parser.add_argument("--ks", default="1,2,3,4,5,7,10")
    parser.add_argument("--cv-k", default="2,3")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    ks = [int(k) for k in args.ks.split(",") if k]
    out: list[dict[str, Any]] = []
    for spec in load_sets(args.sets):
        tasks = [q for q in load_queries(spec.queries) if q.steps]
        if not tasks:
            continue
        catalog = load_catalog(spec.catalog)
        tasks = [q for q in tasks if all(g in catalog for g in q.gold)]
        recaller = Memo(make_recaller(args.method, catalog, cache_dir=args.cache), catalog)
        print(f"\n{spec.name}: {len(catalog)} tools, {len(tasks)} step-wise tasks, {args.method}")
        print("| k | " + " | ".join(VARIANTS) + " |")
        print("|---:|" + "---:|" * len(VARIANTS))
        for k in ks:
            cells = []
            for variant, options in VARIANTS.items():
                done, shown = complete(recaller, tasks, k, options)
                out.append({"set": spec.name, "k": k, "variant": variant, "complete": done,
                            "shown": shown})  # fmt: skip
                cells.append(f"{done:.3f} ({shown:.1f})")
            print(f"| {k} | " + " | ".join(cells) + " |", flush=True)
        for k in [int(k) for k in args.cv_k.split(",") if k]:
            cv = cross_validate(recaller, tasks, k)
            out.append({"set": spec.name, "cv": cv})
            print(f"five-fold CV, k={k}: priors {cv['priors']}, "
                  f"step-wise complete {cv['step_complete_at_k']:.3f}")  # fmt: skip
    path = REPO / "bench-out" / "routing_steps.json"
    path.write_text(json.dumps(out, indent=1), "utf-8")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
