"""The sitecare skill folders: real Agent Skills metadata and a loadable maitred contract."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from maitred.contract import CelPredicate, PythonPredicate, load_sidecar
from maitred.lab.domains.sitecare import skills_dir

SKILLS = sorted(p for p in skills_dir().iterdir() if p.is_dir())
NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def frontmatter(path: Path) -> tuple[dict[str, Any], str]:
    """Split SKILL.md into (frontmatter mapping, markdown body), minimally."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{path}: must open with a '---' line"
    head, sep, body = text[4:].partition("\n---\n")
    assert sep, f"{path}: frontmatter is not closed by a '---' line"
    data = yaml.safe_load(head)
    assert isinstance(data, dict), f"{path}: frontmatter must be a mapping"
    return data, body


def test_at_least_ten_skills() -> None:
    assert len(SKILLS) >= 10


@pytest.mark.parametrize("folder", SKILLS, ids=lambda p: p.name)
def test_skill_md_frontmatter(folder: Path) -> None:
    meta, body = frontmatter(folder / "SKILL.md")
    assert meta["name"] == folder.name
    assert NAME.match(meta["name"]) and len(meta["name"]) <= 64
    description = meta["description"]
    assert isinstance(description, str) and 0 < len(description) <= 1024
    assert "Use when" in description  # says when to use it, not only what it does
    assert meta.get("license") == "Apache-2.0"
    metadata = meta.get("metadata", {})
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    assert set(meta) <= {
        "name",
        "description",
        "license",
        "compatibility",
        "metadata",
        "allowed-tools",
    }
    assert "## Steps" in body and len(body.strip()) > 300


@pytest.mark.parametrize("folder", SKILLS, ids=lambda p: p.name)
def test_sidecar_loads(folder: Path) -> None:
    contract, family = load_sidecar(folder, folder.name)
    assert family == "sitecare"
    assert contract.mutates and contract.cost > 0
    assert 2 <= len(contract.exit_predicates) <= 5
    assert contract.procedure is not None
    for predicate in contract.exit_predicates:
        assert predicate.reads and predicate.message, predicate.name


@pytest.mark.parametrize("folder", SKILLS, ids=lambda p: p.name)
def test_procedure_checks_every_predicate(folder: Path) -> None:
    """Each declared exit predicate is checked by name in the skill's own procedure."""
    contract, _ = load_sidecar(folder, folder.name)
    source = (folder / "scripts" / "procedure.py").read_text(encoding="utf-8")
    for predicate in contract.exit_predicates:
        assert source.count(f'ctx.exit_if("{predicate.name}")') == 1, predicate.name


def test_both_predicate_kinds_are_used() -> None:
    kinds = [
        type(p) for folder in SKILLS for p in load_sidecar(folder, folder.name)[0].exit_predicates
    ]
    assert kinds.count(PythonPredicate) >= 3
    assert kinds.count(CelPredicate) > kinds.count(PythonPredicate)
