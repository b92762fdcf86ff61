"""Rules by name, CAM-DF training / save / load, and the live-pipeline interface."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from maitred.depth.camdf import CamDFRule, load_model, save_model, train_camdf
from maitred.depth.features import LITE_FEATURES
from maitred.depth.payoff import DepthTask, oracle_depth, prefix_payoffs
from maitred.depth.rules import (
    ExposeAll,
    FixedK,
    Ranked,
    ScorePerCost,
    ScoreThreshold,
    make_depth_rule,
    rule_names,
)
from maitred.errors import ConfigError

LIST = [Ranked("a", 0.9, 1.0), Ranked("b", 0.5, 4.0), Ranked("c", 0.4, 0.5)]


def test_names_and_aliases() -> None:
    assert make_depth_rule("all").name == "full"
    assert make_depth_rule("fixed-k", k=2).name == "fixed_k"
    assert isinstance(make_depth_rule("full"), ExposeAll)
    assert {"full", "fixed_k", "score_threshold", "score_per_cost", "camdf"} <= set(rule_names())
    with pytest.raises(ConfigError, match="choose one of"):
        make_depth_rule("nope")
    with pytest.raises(ConfigError, match="bad parameters"):
        make_depth_rule("fixed_k", q=1)


def test_threshold_rules_expose_the_leading_run() -> None:
    assert FixedK(2).choose(LIST) == 2
    assert ScoreThreshold(0.45).choose(LIST) == 2
    # score per cost: 0.9, 0.125, 0.8 -> stops at b even though c would pass
    assert ScorePerCost(0.5).choose(LIST) == 1
    assert ScoreThreshold(0.0).choose([]) == 0


@pytest.mark.parametrize("kind", ["camdf", "camdf_lite"])
def test_camdf_trains_saves_and_loads(
    kind: str, train_tasks: list[DepthTask], test_tasks: list[DepthTask], tmp_path: Path
) -> None:
    model = train_camdf(train_tasks, 0.05, kind=kind)  # type: ignore[arg-type]
    if kind == "camdf_lite":
        assert model.features == LITE_FEATURES and len(model.features) == 10
    path = tmp_path / "m.json"
    save_model(model, path)
    data = json.loads(path.read_text())
    assert data["lambda"] == 0.05 and data["data_hash"].startswith("c1:")
    assert data["features"] == list(model.features)
    loaded = load_model(path)
    assert loaded == model
    rule = make_depth_rule(kind, model=str(path))
    assert rule.name == kind
    for task in test_tasks:
        k = rule.choose(task.candidates)
        u = prefix_payoffs(task, 0.05)
        assert 0 <= k <= task.n and u[k] <= u[oracle_depth(task, 0.05)] + 1e-12


def test_camdf_learns_something(train_tasks: list[DepthTask], test_tasks: list[DepthTask]) -> None:
    """On tasks where required skills score high, it beats exposing everything."""
    rule = CamDFRule(train_camdf(train_tasks, 0.05))

    def mean_payoff(choose: object) -> float:
        return float(
            np.mean([prefix_payoffs(t, 0.05)[choose(t.candidates)] for t in test_tasks])  # type: ignore[operator]
        )

    assert mean_payoff(rule.choose) > mean_payoff(ExposeAll().choose)


def test_load_model_refuses_other_files(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"format": "other"}')
    with pytest.raises(ConfigError, match="not a CAM-DF model"):
        load_model(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_model(tmp_path / "missing.json")


def test_predict_then_threshold_loads_from_a_model(
    train_tasks: list[DepthTask], tmp_path: Path
) -> None:
    save_model(train_camdf(train_tasks, 0.05, kind="camdf_lite"), tmp_path / "m.json")
    rule = make_depth_rule("predict_then_threshold", model=tmp_path / "m.json", threshold=0.99)
    assert 0 <= rule.choose(LIST) <= len(LIST)
