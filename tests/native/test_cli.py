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
    args = ["native", "layers", "-c", str(tools), "--model", str(tmp_path / "m"), "--json"]
    result = CliRunner().invoke(app, [*args, "--png", str(png)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data["curve"]) == {"1", "2", "3", "4"} and 2 <= data["chosen"] <= 3
    assert png.is_file()
