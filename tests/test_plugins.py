"""Built-ins are declared the way a third party's parts are (ARCHITECTURE.md, "Dependency
rules": a registry finds its plugins through entry points): every recall method the core
registers is also an entry point of ``pyproject.toml``, pointing at that very factory."""

from __future__ import annotations

import tomllib
from importlib import import_module
from pathlib import Path

import maitred
from maitred.plugins import GROUPS
from maitred.recall import registry

PYPROJECT = Path(maitred.__file__).parents[2] / "pyproject.toml"


def _declared(kind: str) -> dict[str, str]:
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    return dict(data["project"]["entry-points"][GROUPS[kind]])


def test_every_built_in_recall_method_is_an_entry_point_of_its_factory() -> None:
    declared = _declared("recall")
    for name, factory in registry._REGISTRY.items():
        assert name in declared, f"declare {name!r} in pyproject.toml ({GROUPS['recall']})"
        module, _, attr = declared[name].partition(":")
        assert getattr(import_module(module), attr.split()[0]) is factory, name
