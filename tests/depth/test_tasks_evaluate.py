"""Task files (file:line errors), cost models, evaluation figures, TOST, noise, grid."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from maitred.depth.payoff import DepthTask
from maitred.errors import ConfigError, InputError
from maitred.lab.depth.domain_tasks import domain_queries
from maitred.lab.depth.evaluate import RULES, evaluate_depth, flip_required, tost
from maitred.lab.depth.grid import grid_markdown, plot_grid, run_grid
from maitred.lab.depth.tasks import load_tasks, recost, seeded_cost, write_tasks


def test_task_file_roundtrip_and_bad_lines(train_tasks: list[DepthTask], tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_tasks(train_tasks[:3], path)
    with path.open("a") as f:
        f.write("not json\n")
        f.write(
            '{"id": "x", "candidates": [{"name": "a", "score": 1, "cost": 0}], "required": ["a"]}\n'
        )
        f.write('{"id": "t0", "candidates": [], "required": ["a"]}\n')
        f.write('{"id": "y", "candidates": []}\n')
    errors: list[InputError] = []
    tasks = load_tasks(path, on_error=errors.append)
    assert tasks == train_tasks[:3]
    assert [e.line for e in errors] == [4, 5, 6, 7]
    assert "cost must be > 0" in str(errors[1]) and f"{path}:5" in str(errors[1])
    assert "missing field(s) required" in str(errors[3])
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(InputError, match="no usable task"):
        load_tasks(tmp_path / "empty.jsonl")


def test_seeded_costs_are_per_skill_and_mean_one() -> None:
    assert seeded_cost("a", 0.0, 1) == 1.0
    assert seeded_cost("a", 1.0, 1) == seeded_cost("a", 1.0, 1) != seeded_cost("a", 1.0, 2)
    draws = [seeded_cost(f"s{i}", 0.5, 0) for i in range(4000)]
    assert abs(np.mean(draws) - 1.0) < 0.05


def test_sitecare_queries_are_two_skill_and_deterministic() -> None:
    a, b = domain_queries("sitecare", 50, 3), domain_queries("sitecare", 50, 3)
    assert a == b and all(len(q.gold) == 2 and q.gold[0] != q.gold[1] for q in a)


def test_tost() -> None:
    ref = np.ones(200)
    assert tost(ref.copy(), ref)["noninferior"]
    worse = ref.copy()
    worse[:40] = 0  # 20 points worse
    assert not tost(worse, ref)["noninferior"]


def test_flip_required_rate(train_tasks: list[DepthTask]) -> None:
    assert flip_required(train_tasks, 0.0, 0) == train_tasks
    noisy = flip_required(train_tasks, 0.1, 0)
    changed = sum(len(a.required ^ b.required) for a, b in zip(noisy, train_tasks, strict=True))
    total = sum(t.n for t in train_tasks)
    assert 0.05 < changed / total < 0.15


@pytest.mark.slow
def test_evaluate_depth_reports_every_rule(
    train_tasks: list[DepthTask], test_tasks: list[DepthTask]
) -> None:
    result = evaluate_depth(train_tasks, test_tasks, 0.05, n_boot=200, noise=True)
    rules = result["rules"]
    assert list(rules) == list(RULES)
    for r in rules.values():
        assert {"payoff", "payoff_ci_vs_camdf", "mean_exposed", "sufficiency"} <= set(r)
        assert r["payoff"] <= rules["oracle"]["payoff"] + 1e-12
    assert rules["camdf"]["payoff_ci_vs_camdf"] == [0.0, 0.0]
    assert rules["full"]["exposure_reduction"] == 0.0
    assert set(result["noise"]) == {"0", "0.05", "0.1"}
    assert len(result["camdf_lite_coefficients"]) == 10


def test_grid_table_and_png(
    train_tasks: list[DepthTask], test_tasks: list[DepthTask], tmp_path: Path
) -> None:
    rows = run_grid(train_tasks[:80], test_tasks[:60], [0.02, 0.2], [0.0, 1.0], n_boot=100)
    assert len(rows) == 4 * len(RULES)
    table = grid_markdown(rows)
    assert "| 0.2 | 1 |" in table
    pytest.importorskip(
        "matplotlib", reason="needs the report extra: pip install 'maitred[report]'"
    )
    plot_grid(rows, tmp_path / "g.png")
    assert (tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"
    json.dumps(rows)


def test_recost_keeps_ranking(train_tasks: list[DepthTask]) -> None:
    again = recost(train_tasks, 1.0, 7)
    assert [c.name for c in again[0].candidates] == [c.name for c in train_tasks[0].candidates]
    assert all(c.cost > 0 for t in again for c in t.candidates)


def test_sufficiency_guard_holds_every_tuned_rule_on_training_data(
    train_tasks: list[DepthTask],
) -> None:
    from maitred.lab.depth.evaluate import apply_rules, fit_rules
    from maitred.lab.depth.tuning import sufficiency_floor

    lam, guard = 0.08, 0.02
    floor = sufficiency_floor(train_tasks, guard)
    assert floor is not None
    free = apply_rules(fit_rules(train_tasks, lam), train_tasks)
    held = apply_rules(fit_rules(train_tasks, lam, guard=guard), train_tasks)
    # without the floor the payoff-optimal rules give sufficiency away at this λ ...
    assert free["camdf"].sufficient.mean() < floor
    for name in ("fixed_k", "score_threshold", "predict_then_threshold", "score_per_cost"):
        # ... with it, every tuned rule keeps its training sufficiency above the floor
        assert held[name].sufficient.mean() >= floor - 1e-9, name
        assert held[name].payoffs.mean() <= free[name].payoffs.mean() + 1e-9, name
    for name in ("camdf", "camdf_lite"):
        assert held[name].sufficient.mean() >= floor - 1e-9, name
    with pytest.raises(ConfigError, match="guard"):
        sufficiency_floor(train_tasks, -0.1)


def test_select_falls_back_to_the_most_sufficient_value(train_tasks: list[DepthTask]) -> None:
    from maitred.lab.depth.tuning import select

    # a floor nobody reaches: the deepest prefix (most sufficient) wins, not the best payoff
    k = select(
        train_tasks, 0.5, [0, 2, 4, 8], lambda k: [min(k, t.n) for t in train_tasks], floor=2
    )
    assert k == 8
    assert select(train_tasks, 0.5, [0, 2, 4, 8], lambda k: [min(k, t.n) for t in train_tasks]) < 8
