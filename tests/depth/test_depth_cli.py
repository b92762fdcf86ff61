"""`maitred depth domain-queries | make-tasks | train` and `maitred eval depth`, in-process."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from maitred.cli.main import app
from maitred.depth.payoff import DepthTask
from maitred.lab.depth.evaluate import RULES
from maitred.lab.depth.tasks import load_tasks, write_tasks
from maitred.lab.domains.sitecare import skills_dir


def _run(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, (result.stdout, result.exception)
    return result.stdout


def test_make_tasks_from_sitecare(tmp_path: Path) -> None:
    queries, tasks = tmp_path / "q.jsonl", tmp_path / "t.jsonl"
    _run(
        "depth", "domain-queries", "--domain", "sitecare", "-n", "20", "--seed", "1",
        "--out", str(queries),
    )  # fmt: skip
    _run(
        "depth", "make-tasks", "--skills", str(skills_dir()), "--queries", str(queries),
        "--method", "bm25", "--top", "5", "--costs", "seeded", "--dispersion", "1",
        "--seed", "3", "--out", str(tasks),
    )  # fmt: skip
    loaded = load_tasks(tasks)
    assert len(loaded) == 20 and all(t.n == 5 and len(t.required) == 2 for t in loaded)


def test_eval_depth_json_and_train(
    train_tasks: list[DepthTask], test_tasks: list[DepthTask], tmp_path: Path
) -> None:
    write_tasks(train_tasks, tmp_path / "train.jsonl")
    write_tasks(test_tasks, tmp_path / "test.jsonl")
    out = _run(
        "eval", "depth", "--train", str(tmp_path / "train.jsonl"), "--test",
        str(tmp_path / "test.jsonl"), "--lambda", "0.05", "--json", "--no-noise", "--boot", "100",
    )  # fmt: skip
    rules = json.loads(out)["rules"]
    assert list(rules) == list(RULES)
    assert all(len(r["payoff_ci_vs_camdf"]) == 2 for r in rules.values())
    text = _run(
        "depth", "train", "--tasks", str(tmp_path / "train.jsonl"), "--lambda", "0.05",
        "--lite", "--out", str(tmp_path / "m.json"),
    )  # fmt: skip
    assert "camdf_lite" in text and "marginal_value" in text


def test_sufficiency_guard_options(
    train_tasks: list[DepthTask], test_tasks: list[DepthTask], tmp_path: Path
) -> None:
    write_tasks(train_tasks, tmp_path / "train.jsonl")
    write_tasks(test_tasks, tmp_path / "test.jsonl")
    args = ["--train", str(tmp_path / "train.jsonl"), "--test", str(tmp_path / "test.jsonl")]
    common = ["--lambda", "0.08", "--json", "--no-noise", "--boot", "50"]
    free = json.loads(_run("eval", "depth", *args, *common))
    held = json.loads(_run("eval", "depth", *args, *common, "--sufficiency-guard", "0.0"))
    assert held["sufficiency_guard"] == 0.0 and free["sufficiency_guard"] is None
    assert held["rules"]["camdf"]["mean_exposed"] > free["rules"]["camdf"]["mean_exposed"]
    _run(
        "depth", "train", "--tasks", str(tmp_path / "train.jsonl"), "--lambda", "0.08",
        "--sufficiency-guard", "0.0", "--out", str(tmp_path / "g.json"),
    )  # fmt: skip
    guarded = json.loads((tmp_path / "g.json").read_text())
    assert guarded["threshold"] >= free["camdf_threshold"]


def test_bad_task_lines_are_reported_the_good_used_and_the_exit_is_1(
    train_tasks: list[DepthTask], tmp_path: Path
) -> None:
    path = tmp_path / "train.jsonl"
    write_tasks(train_tasks, path)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("not json\n")
    result = CliRunner().invoke(
        app,
        ["depth", "train", "--tasks", str(path), "--lambda", "0.05", "--lite", "--out",
         str(tmp_path / "m.json")],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert (tmp_path / "m.json").is_file()  # the good tasks were used
    assert f"train.jsonl:{len(train_tasks) + 1}" in result.output
