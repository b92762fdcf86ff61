"""The suite collects on the core install alone: a test that needs an extra skips without it.

The rule every test module (or folder ``conftest.py``) follows: it calls
``pytest.importorskip(MODULE, reason="needs the X extra: pip install 'maitred[X]'")`` before
it imports anything of that extra (a test that needs one for a single step calls it right
before that step), so ``pip install maitred`` plus pytest and hypothesis collects and runs the
whole suite without an error, and each skipped test says what to install.

This test proves it without a second virtual environment: the suite is collected in a
subprocess whose imports of the extras' modules fail as they would where the extras are not
installed. Which modules those are comes from ``pyproject.toml`` and the installed packages'
metadata: every top-level module of a distribution that some extra (``dev`` included) brings
in and that neither the core requirements nor pytest and hypothesis do.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]

BLOCKER = '''\
import json, os, sys

BLOCKED = frozenset(json.loads(os.environ["MAITRED_TEST_BLOCKED_MODULES"]))


class _NotInstalled:
    """Refuse the extras' modules, as an environment without them would."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
'''


def _closure(requirements: Iterable[str]) -> set[str]:
    """The installed distributions these requirements pull in, transitively (canonical names)."""
    seen: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen:
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue  # not installed here: nothing of it can be imported anyway
        seen.add(name)
        for text in dist.requires or ():
            sub = Requirement(text)
            wanted = ("", *req.extras)
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in wanted):
                todo.append(sub)
    return seen


def extras_only_modules() -> set[str]:
    """Top-level modules that only the extras install (a module some core package also
    provides, such as a shared namespace, is left importable)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = _closure([*project["dependencies"], "pytest", "hypothesis"])
    extras = _closure(r for reqs in project["optional-dependencies"].values() for r in reqs)
    only = extras - core
    return {
        module
        for module, dists in metadata.packages_distributions().items()
        if dists and all(canonicalize_name(d) in only for d in dists)
    }


def test_the_blocked_modules_are_the_extras_not_the_core() -> None:
    blocked = extras_only_modules()
    # a module of each extra is blocked wherever that extra is installed (`make install`
    # installs them all), so a broken computation cannot pass unnoticed
    of_extras = ["starlette", "fastmcp", "limits", "opentelemetry", "psycopg", "duckdb", "torch"]
    assert {m for m in of_extras if importlib.util.find_spec(m)} <= blocked
    assert not {"numpy", "yaml", "bm25s", "onnxruntime", "typer", "pytest", "hypothesis"} & blocked


@pytest.mark.slow
def test_the_suite_collects_with_the_core_install_alone(tmp_path: Path) -> None:
    (tmp_path / "maitred_block_extras.py").write_text(BLOCKER, encoding="utf-8")
    env = {
        **os.environ,
        "MAITRED_TEST_BLOCKED_MODULES": json.dumps(sorted(extras_only_modules())),
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO / "src")]),
        # plugins that the extras install (xdist, anyio, schemathesis) would not be there
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            "-p",
            "maitred_block_extras",
            "-p",
            "_hypothesis_pytestplugin",
            "tests",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert re.search(r"^\d+ tests collected", out, re.M), out[-2000:]
    assert not re.search(r"\berrors?\b", out.splitlines()[-1]), out[-2000:]
    skipped = "\n".join(line for line in out.splitlines() if line.startswith("SKIPPED"))
    # the extras really were missing there: each of these folders or modules said so
    for where in ("tests/serve/conftest.py", "tests/mcp/conftest.py", "tests/test_tracing.py"):
        assert where in skipped, skipped
    assert "pip install 'maitred[serve]'" in skipped
