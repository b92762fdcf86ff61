"""The public surface of maitred.log and maitred.analytics stays curated and importable."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize("package", ["maitred.log", "maitred.analytics"])
def test_all_is_sorted_and_importable(package: str) -> None:
    module = importlib.import_module(package)
    names = list(module.__all__)
    constants = [n for n in names if n.isupper()]
    classes = [n for n in names if not n.isupper() and n[0].isupper()]
    functions = [n for n in names if n[0].islower()]
    assert names == sorted(constants) + sorted(classes) + sorted(functions)
    for name in names:
        assert getattr(module, name) is not None, name


def test_importing_the_log_does_not_import_the_postgres_driver() -> None:
    import subprocess
    import sys

    code = "import sys, maitred.log, maitred.analytics; print('psycopg' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
