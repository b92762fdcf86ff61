"""`validate`: the spec's rules are errors for a validator, advice stays a warning, every
problem of a file is reported once, with its line (issue 12, item 13)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from maitred.skills import load_catalog_report, validate
from maitred.skills.agentskills import BODY_MAX_LINES

from .conftest import WriteSkill

GOOD = "description: Does a thing. Use it when asked.\n"


def _messages(report: dict[str, Any], kind: str) -> list[str]:
    return [f"{p['path']} {p['field']} {p['message']}" for p in report[kind]]


@pytest.mark.parametrize(
    ("folder", "frontmatter", "fragment"),
    [
        ("demo", GOOD, "`name` is missing"),
        ("demo", f"name: Demo_Skill\n{GOOD}", "lowercase letters"),
        ("a" * 65, f"name: {'a' * 65}\n{GOOD}", "at most 64"),
        ("demo", f"name: demo--skill\n{GOOD}", "consecutive hyphens"),
        ("demo", f"name: other\n{GOOD}", "does not match its folder"),
        ("demo", f"name: demo\ndescription: {'x' * 1025}\n", "at most 1024"),
    ],
)
def test_each_spec_rule_is_an_error_unless_lenient(
    tmp_path: Path, write_skill: WriteSkill, folder: str, frontmatter: str, fragment: str
) -> None:
    """Regression: these were only warnings, and `validate` exited 0."""
    write_skill(folder, frontmatter)
    checked = validate(tmp_path / "skills")
    assert checked["valid"] == 0 and checked["warnings"] == []
    assert any(fragment in m for m in _messages(checked, "errors")), checked["errors"]
    if "missing" not in fragment:  # the line of the field at fault
        assert all(re.search(r"SKILL\.md:[23]$", e["path"]) for e in checked["errors"])
    lenient = validate(tmp_path / "skills", lenient=True)
    assert lenient["valid"] == 1 and lenient["errors"] == []
    assert any(fragment in m for m in _messages(lenient, "warnings"))


def test_loading_for_routing_stays_lenient(tmp_path: Path, write_skill: WriteSkill) -> None:
    write_skill("demo", f"name: Demo_Skill\n{GOOD}")
    catalog, report = load_catalog_report(tmp_path / "skills")
    assert catalog is not None and "Demo_Skill" in catalog
    assert report.errors == () and report.warnings


def test_a_body_longer_than_the_spec_recommends_is_a_warning_in_every_mode(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    """Regression: a 10 MB SKILL.md passed with no warning."""
    write_skill("long", f"name: long\n{GOOD}", body="step\n" * (BODY_MAX_LINES + 1))
    write_skill("wide", f"name: wide\n{GOOD}", body="x" * 10_000_000)
    write_skill("fine", f"name: fine\n{GOOD}", body="step\n" * (BODY_MAX_LINES - 2))
    for lenient in (False, True):
        report = validate(tmp_path / "skills", lenient=lenient)
        assert report["valid"] == 3 and report["errors"] == []
        warned = sorted(w["path"].rsplit("/", 2)[-2] for w in report["warnings"])
        assert warned == ["long", "wide"]
    wide = next(w for w in report["warnings"] if "/wide/" in w["path"])
    assert "about 2500000 tokens" in wide["message"] and "references/" in wide["message"]


def test_an_error_is_not_followed_by_a_generic_nothing_found(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    """Regression: every error came with a second "no skills or tools found" error."""
    write_skill("broken", "name: broken\ndescription: [unclosed\n")
    report = validate(tmp_path / "skills")
    assert len(report["errors"]) == 1
    assert "not valid YAML" in report["errors"][0]["message"]
    empty = tmp_path / "empty"
    empty.mkdir()
    (nothing,) = validate(empty)["errors"]  # with no other error, nothing found is the error
    assert "no skills or tools found" in nothing["message"]


def test_every_sidecar_problem_is_reported_with_its_line(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    """Regression: only the first maitred.yaml error was shown, with no line number."""
    folder = write_skill("gated", f"name: gated\n{GOOD}")
    (folder / "maitred.yaml").write_text(
        "cost: 0\n"
        "exit_predicates:\n"
        "  - name: domains\n"
        "    expr: size(account.domains)\n"
        "    reads: [account.domains]\n"
        "  - name: typo\n"
        "    expr: account.plan = 'free'\n"
        "    reads: [account.plan]\n",
        encoding="utf-8",
    )
    report = validate(tmp_path / "skills")
    sidecar = str(folder / "maitred.yaml")
    assert [e["path"] for e in report["errors"]] == [f"{sidecar}:1", f"{sidecar}:4", f"{sidecar}:7"]
    cost, domains, typo = (e["message"] for e in report["errors"])
    assert "`cost` must be a positive number" in cost
    assert "gives int, never a bool" in domains  # caught at load, not on the first turn
    assert "does not compile" in typo
    assert report["valid"] == 0


def test_a_sidecar_yaml_error_names_the_file(tmp_path: Path, write_skill: WriteSkill) -> None:
    """Regression: the message named `<unicode string>`."""
    folder = write_skill("gated", f"name: gated\n{GOOD}")
    (folder / "maitred.yaml").write_text("cost: 1\nmutates: [yes\n", encoding="utf-8")
    (error,) = validate(tmp_path / "skills")["errors"]
    assert error["path"] == f"{folder / 'maitred.yaml'}:3"
    assert "<unicode string>" not in error["message"]
    assert error["message"].startswith("not valid YAML")


def test_a_skill_with_a_broken_sidecar_still_reports_its_skill_md_problems(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    folder = write_skill("gated", f"name: Gated\n{GOOD}")
    (folder / "maitred.yaml").write_text("cost: 0\n", encoding="utf-8")
    report = validate(tmp_path / "skills")
    paths = [e["path"].rsplit("/", 1)[-1] for e in report["errors"]]
    assert paths == ["SKILL.md:2", "SKILL.md:2", "maitred.yaml:1"]  # bad characters, folder
    lenient = validate(tmp_path / "skills", lenient=True)
    assert [e["path"].rsplit("/", 1)[-1] for e in lenient["errors"]] == ["maitred.yaml:1"]
    assert len(lenient["warnings"]) == 2
