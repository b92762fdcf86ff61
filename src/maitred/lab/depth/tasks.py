"""Depth task files: read them (with ``file:line`` errors), write them, build them from queries.

A task file is JSONL, one task per line, candidates ranked best first::

    {"id": "m17", "query": "...", "candidates": [{"name": "NewsTool", "score": 0.61,
     "cost": 1.3}, ...], "required": ["NewsTool", "FinanceTool"]}

``query`` is optional. A line that cannot be used (not JSON, a missing field, a wrong type, a
non-positive cost, a repeated candidate or id) is reported as an
:class:`~maitred.errors.InputError` naming ``file:line`` and skipped.

:func:`make_tasks` builds tasks from any labelled query set (the JSONL that
:func:`~maitred.recall.load_queries` reads): rank each query with a recaller, keep the top
``top``, attach each candidate's cost, and take the query's gold skills as the required set.
Cost models (:data:`COST_MODELS`):

* ``contract`` -- the skill's declared contract cost (1.0 when it declares none);
* ``tokens`` -- the skill's description tokens in the OpenAI tools format divided by the
  catalog's mean, so the average skill costs 1;
* ``seeded`` -- a heterogeneous per-skill cost ``exp(d·z − d²/2)`` with ``z ~ N(0, 1)`` drawn
  from a hash of (seed, skill name): mean 1 whatever the dispersion ``d``, all 1 at ``d = 0``,
  and the same skill always costs the same within a seed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final, Literal

from maitred.depth.payoff import DepthTask
from maitred.depth.rules import Ranked
from maitred.errors import ConfigError, InputError
from maitred.jsonl import parse_object, read_labelled
from maitred.recall.base import Recaller
from maitred.recall.evaluate import Query, RepeatedId, read_unique
from maitred.skills.model import Catalog

CostModel = Literal["contract", "tokens", "seeded"]
COST_MODELS: Final = ("contract", "tokens", "seeded")

logger = logging.getLogger(__name__)


def _candidate(obj: Any, i: int) -> Ranked:
    if not isinstance(obj, dict):
        raise ValueError(f"candidates[{i}] must be an object with name, score, cost")
    name, score, cost = obj.get("name"), obj.get("score"), obj.get("cost", 1.0)
    if not isinstance(name, str) or not name:
        raise ValueError(f"candidates[{i}].name must be a non-empty string")
    for key, value in (("score", score), ("cost", cost)):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise ValueError(f"candidates[{i}].{key} must be a finite number, got {value!r}")
    assert isinstance(score, (int, float)) and isinstance(cost, (int, float))
    if cost <= 0:
        raise ValueError(f"candidates[{i}].cost must be > 0, got {cost!r}")
    return Ranked(name, float(score), float(cost))


def parse_task(raw: str, seen: set[str]) -> DepthTask:
    """One JSONL line -> :class:`DepthTask`; raises ``ValueError`` saying what is wrong."""
    obj = parse_object(raw, ("id", "candidates", "required"))
    tid, cands, required = obj["id"], obj["candidates"], obj["required"]
    if not isinstance(tid, (str, int)) or isinstance(tid, bool):
        raise ValueError(f"field 'id' must be a unique string or integer, got {tid!r}")
    if str(tid) in seen:
        raise RepeatedId(str(tid), "task")
    if not isinstance(cands, list):
        raise ValueError("field 'candidates' must be a list (ranked, best first)")
    candidates = tuple(_candidate(c, i) for i, c in enumerate(cands))
    if len({c.name for c in candidates}) != len(candidates):
        raise ValueError("field 'candidates' names a skill twice")
    if (
        not isinstance(required, list)
        or not required
        or not all(isinstance(r, str) and r for r in required)
    ):
        raise ValueError("field 'required' must be a non-empty list of skill names")
    query = obj.get("query", "")
    return DepthTask(
        str(tid), candidates, frozenset(required), query if isinstance(query, str) else ""
    )


def load_tasks(
    path: Path | str,
    *,
    on_error: Callable[[InputError], None] | None = None,
    repeated: Literal["skip", "refuse"] = "skip",
) -> list[DepthTask]:
    """Read a task file, skipping (and reporting) lines that cannot be used.

    ``repeated``: what a repeated task id does, as for
    :func:`~maitred.recall.evaluate.load_queries` (``refuse``: the file is refused).

    Raises:
        InputError: the file cannot be read (line 0), holds no usable task, or (``refuse``)
            repeats an id.
    """
    read = read_labelled if repeated == "skip" else read_unique
    tasks = read(path, parse_task, what="task", on_error=on_error)
    if not tasks:
        raise InputError(str(path), 0, "no usable task in the file; see the lines reported above")
    return tasks


def task_to_json(task: DepthTask) -> dict[str, Any]:
    """The JSON object :func:`parse_task` reads back."""
    return {
        "id": task.id,
        "query": task.query,
        "candidates": [{"name": c.name, "score": c.score, "cost": c.cost} for c in task.candidates],
        "required": sorted(task.required),
    }


def write_tasks(tasks: Sequence[DepthTask], path: Path | str) -> None:
    """Write ``tasks`` as a task file."""
    text = "".join(json.dumps(task_to_json(t), ensure_ascii=False) + "\n" for t in tasks)
    Path(path).write_text(text, encoding="utf-8")


def seeded_cost(name: str, dispersion: float, seed: int) -> float:
    """The ``seeded`` cost model: ``exp(d·z − d²/2)``, ``z`` fixed by (seed, name)."""
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    z = random.Random(int.from_bytes(digest[:8], "big")).gauss(0.0, 1.0)
    return math.exp(dispersion * z - dispersion**2 / 2)


def catalog_costs(
    catalog: Catalog, model: CostModel, *, dispersion: float = 1.0, seed: int = 0
) -> dict[str, float]:
    """Every skill's cost under one cost model (see the module docstring)."""
    if model not in COST_MODELS:
        raise ConfigError(f"unknown cost model {model!r}; choose one of {list(COST_MODELS)}")
    if model == "contract":
        return {s.name: s.contract.cost for s in catalog}
    if model == "seeded":
        if dispersion < 0:
            raise ConfigError(f"cost dispersion must be >= 0, got {dispersion}")
        return {s.name: seeded_cost(s.name, dispersion, seed) for s in catalog}
    from maitred.menu.render import MenuRenderer

    renderer = MenuRenderer(catalog)
    tokens = {s.name: float(renderer.tokens(s.name)) for s in catalog}
    mean = sum(tokens.values()) / len(tokens)
    return {name: t / mean for name, t in tokens.items()}


def recost(tasks: Sequence[DepthTask], dispersion: float, seed: int) -> list[DepthTask]:
    """The same tasks with every candidate's cost replaced by the ``seeded`` model."""
    return [
        replace(
            t,
            candidates=tuple(
                Ranked(c.name, c.score, seeded_cost(c.name, dispersion, seed)) for c in t.candidates
            ),
        )
        for t in tasks
    ]


def make_tasks(
    catalog: Catalog,
    queries: Sequence[Query],
    recaller: Recaller,
    *,
    top: int = 20,
    costs: dict[str, float],
) -> tuple[list[DepthTask], list[Query]]:
    """Rank each query and keep the top ``top`` as a task; gold skills are the required set.

    Returns:
        ``(tasks, skipped)``: queries naming a gold skill that is not in the catalog are
        skipped (no list could ever be sufficient for them).
    """
    if top < 1:
        raise ConfigError(f"--top must be >= 1, got {top}")
    known = set(catalog.names)
    tasks, skipped = [], []
    for query in queries:
        if not all(g in known for g in query.gold):
            skipped.append(query)
            continue
        ranked = recaller.rank(query.text, top)[:top]
        candidates = tuple(Ranked(c.name, float(c.score), costs[c.name]) for c in ranked)
        tasks.append(DepthTask(query.id, candidates, frozenset(query.gold), query.text))
    return tasks, skipped
