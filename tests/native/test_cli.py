from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from maitred.cli.native_cmd import register

from .conftest import tiny_model, tiny_tokenizer


def test_layers_command_on_a_model_folder(tmp_path: Path) -> None:
    tiny_model().save_pretrained(tmp_path / "m")
    tiny_tokenizer().save_pretrained(tmp_path / "m")
    tools = tmp_path / "tools.jsonl"
    tools.write_text(
        json.dumps({"name": "weather", "description": "check the weather tomorrow in my city"})
        + "\n"
        + json.dumps({"name": "refund", "description": "refund money for my invoice"})
        + "\n",
        encoding="utf-8",
    )
    app = typer.Typer()
    register(app, typer.Typer())
    png = tmp_path / "curve.png"
    args = ["native", "layers", "-s", str(tools), "--model", str(tmp_path / "m"), "--json"]
    result = CliRunner().invoke(app, [*args, "--png", str(png)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data["curve"]) == {"1", "2", "3", "4"} and 2 <= data["chosen"] <= 3
    assert png.is_file()


def test_rollout_command_calibrates_and_reports(tmp_path: Path) -> None:
    tiny_model().save_pretrained(tmp_path / "m")
    tiny_tokenizer().save_pretrained(tmp_path / "m")
    tools = tmp_path / "tools.jsonl"
    tools.write_text(
        json.dumps({"name": "weather", "description": "check the weather tomorrow in my city"})
        + "\n"
        + json.dumps({"name": "refund", "description": "refund money for my invoice"})
        + "\n",
        encoding="utf-8",
    )
    trajs = tmp_path / "t.jsonl"
    rows = [
        {"id": "p1", "text": "haha ok check the weather tomorrow", "gold": ["weather"], "onset": 8},
        {"id": "p2", "text": "ok please refund my money", "gold": ["refund"], "onset": 3},
        {"id": "p3", "text": "ok play a song", "gold": ["music"], "onset": 3},  # not in catalog
        {"id": "n1", "text": "haha ok you", "gold": []},
    ]
    trajs.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    app = typer.Typer()
    register(app, typer.Typer())
    base = ["native", "rollout", "-s", str(tools), "-t", str(trajs), "--model", str(tmp_path / "m")]
    base += ["--maps", str(tmp_path / "none.npz"), "--cache-dir", str(tmp_path / "cache")]
    result = CliRunner().invoke(app, [*base, "--val", str(trajs), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["maps"].startswith("untrained") and data["skipped_unknown_gold"] == 2
    assert (data["n_positive"], data["n_negative"]) == (2, 1)
    assert data["calibration"]["threshold"] == data["threshold"]
    fixed = CliRunner().invoke(app, [*base, "--threshold", "-1e9"])
    assert fixed.exit_code == 0, fixed.output
    assert "trigger rate     1.000" in fixed.stdout and "false-fire rate  1.000" in fixed.stdout
    both = CliRunner().invoke(app, [*base, "--threshold", "0", "--val", str(trajs)])
    assert both.exit_code != 0


def test_calibrate_command_refuses_queries_without_a_catalog_gold(tmp_path: Path) -> None:
    from maitred.errors import ConfigError

    tools = tmp_path / "tools.jsonl"
    tools.write_text(json.dumps({"name": "weather", "description": "the weather"}) + "\n")
    queries = tmp_path / "val.jsonl"
    queries.write_text(
        json.dumps({"id": "q1", "text": "pay my invoice", "gold": ["billing"]}) + "\n"
    )
    app = typer.Typer()
    register(app, typer.Typer())
    result = CliRunner().invoke(app, ["native", "calibrate", "-s", str(tools), "-q", str(queries)])
    assert result.exit_code != 0
    assert isinstance(result.exception, ConfigError)
    assert "gold skill" in str(result.exception)
