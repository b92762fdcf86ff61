"""Small synthetic depth tasks shared by the depth tests (no recall, no model)."""

from __future__ import annotations

import random

import pytest

from maitred.depth.payoff import DepthTask
from maitred.depth.rules import Ranked


def synthetic_tasks(n_tasks: int, seed: int, n: int = 8) -> list[DepthTask]:
    """Ranked lists where required skills tend to score high; costs vary per skill."""
    rng = random.Random(seed)
    names = [f"s{i}" for i in range(30)]
    cost = {s: rng.choice((0.5, 1.0, 2.0, 4.0)) for s in names}
    tasks = []
    for i in range(n_tasks):
        picked = rng.sample(names, n)
        required = set(rng.sample(picked, 2))
        scored = [(rng.gauss(1.0 if s in required else 0.0, 0.6), s) for s in picked]
        scored.sort(reverse=True)
        cands = tuple(Ranked(s, round(sc, 4), cost[s]) for sc, s in scored)
        tasks.append(DepthTask(f"t{i}", cands, frozenset(required)))
    return tasks


@pytest.fixture(scope="session")
def train_tasks() -> list[DepthTask]:
    return synthetic_tasks(200, seed=1)


@pytest.fixture(scope="session")
def test_tasks() -> list[DepthTask]:
    return synthetic_tasks(150, seed=2)
