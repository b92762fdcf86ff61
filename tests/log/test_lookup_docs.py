"""docs/log.md's Python example runs as written and prints what it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "log.md"


def test_the_python_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    exec(compile(block, str(DOC), "exec"), {})
    first, second = capsys.readouterr().out.splitlines()
    assert first == "True"
    assert "'name': 'connect-domain'" in second and second.endswith(" acc-1")
