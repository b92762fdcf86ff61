"""Small skill folders written per test: a SKILL.md, a maitred.yaml and, maybe, a procedure."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from maitred.skills import Catalog, load_catalog


def write_skill(root: Path, name: str, sidecar: str, procedure: str | None = None) -> Path:
    """Write ``root/name/`` with a valid SKILL.md, ``sidecar`` and an optional procedure."""
    folder = root / name
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: A test skill for the parity audit.\n---\n\n# {name}\n",
        encoding="utf-8",
    )
    (folder / "maitred.yaml").write_text(textwrap.dedent(sidecar), encoding="utf-8")
    if procedure is not None:
        (folder / "scripts" / "procedure.py").write_text(
            textwrap.dedent(procedure), encoding="utf-8"
        )
    return folder


@pytest.fixture
def skill_root(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    root.mkdir()
    return root


def catalog_of(root: Path) -> Catalog:
    return load_catalog(root)
