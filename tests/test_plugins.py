"""One registration mechanism per kind (ARCHITECTURE.md, "Dependency rules": a registry finds
its plugins by name, never by importing them): maitred's own parts are listed in code
(:data:`maitred.plugins.BUILTINS`), so they are found without installed package metadata, and a
third party's parts come from entry points."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

import maitred
from maitred import plugins
from maitred.errors import ConfigError
from maitred.recall.registry import recaller_names, register_recaller

ROOT = Path(maitred.__file__).parents[2]


@pytest.fixture
def no_metadata(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As if maitred ran from its source tree, with no entry point installed at all."""
    monkeypatch.setattr(plugins, "entry_points", lambda group: ())
    plugins._entries.cache_clear()
    yield
    plugins._entries.cache_clear()


def test_every_built_in_resolves_to_an_object() -> None:
    for kind, parts in plugins.BUILTINS.items():
        for name, value in parts.items():
            if "[" in value:  # needs an extra (native: torch); its module may be absent
                continue
            assert plugins.load(kind, name) is not None, (kind, name)


def test_built_ins_need_no_installed_metadata(no_metadata: None) -> None:
    assert {"bm25", "fused", "dense", "native"} <= set(recaller_names())
    assert plugins.names("state") == ["json", "postgres", "postgresql", "sqlite"]
    assert "camdf" in plugins.names("depth")
    assert plugins.load("packs", "tau2-airline").name == "tau2-airline"


def test_built_ins_are_not_declared_twice_in_pyproject() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert not data["project"].get("entry-points"), (
        "built-ins are listed in maitred.plugins.BUILTINS; entry points are for third parties"
    )


def test_a_third_party_entry_point_adds_a_name_but_cannot_replace_a_built_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    group = plugins.GROUPS["depth"]
    theirs = [
        EntryPoint("their_rule", "maitred.depth.rules:FixedK", group),
        EntryPoint("full", "maitred.depth.rules:FixedK", group),
    ]
    monkeypatch.setattr(plugins, "entry_points", lambda group: theirs)
    plugins._entries.cache_clear()
    try:
        assert "their_rule" in plugins.names("depth")
        from maitred.depth.rules import ExposeAll

        assert plugins.load("depth", "full") is ExposeAll
    finally:
        plugins._entries.cache_clear()


def test_register_recaller_refuses_a_built_in_name() -> None:
    with pytest.raises(ConfigError, match="already registered"):
        register_recaller("bm25")(lambda catalog, **kw: None)  # type: ignore[arg-type,return-value]


def test_the_cli_runs_from_the_source_tree_without_metadata(tmp_path: Path) -> None:
    """``PYTHONPATH=src`` with maitred's own distribution hidden still lists every method."""
    script = (
        "import importlib.metadata as md\n"
        "real = md.entry_points\n"
        "md.entry_points = lambda **kw: [\n"
        "    e for e in real(**kw) if not e.group.startswith('maitred.')]\n"
        "from maitred.recall.registry import recaller_names\n"
        "print(','.join(recaller_names()))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert {"bm25", "fused", "hybrid"} <= set(out.stdout.strip().split(","))
