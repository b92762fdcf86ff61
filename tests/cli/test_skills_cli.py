"""`maitred skills validate`: the report's shape, and broken folders reported, never crashed on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import Invoke, Sitecare, ok

REPORT_KEYS = {"skills", "valid", "warnings", "errors"}


def _skill(root: Path, folder: str, frontmatter: str, sidecar: str | None = None) -> Path:
    where = root / folder
    where.mkdir(parents=True)
    (where / "SKILL.md").write_text(f"---\n{frontmatter}---\n# {folder}\n", encoding="utf-8")
    if sidecar is not None:
        (where / "maitred.yaml").write_text(sidecar, encoding="utf-8")
    return where


@pytest.fixture
def broken_catalog(tmp_path: Path) -> Path:
    """One good skill, a malformed SKILL.md, two skills named alike, a CEL syntax error."""
    root = tmp_path / "skills"
    _skill(root, "good-one", "name: good-one\ndescription: Fine. Use when testing.\n")
    _skill(root, "broken", "name: broken\ndescription: [unclosed\n")
    _skill(root, "twin", "name: twin\ndescription: First twin. Use when testing.\n")
    _skill(root, "twin-copy", "name: twin\ndescription: Second twin. Use when testing.\n")
    _skill(
        root,
        "bad-cel",
        "name: bad-cel\ndescription: Gated. Use when testing.\n",
        sidecar=(
            "exit_predicates:\n"
            "  - name: plan_is_free\n"
            '    expr: account.plan == == "free"\n'
            "    reads: [account.plan]\n"
        ),
    )
    return root


def test_validate_sitecare_json_has_exactly_the_report_keys(invoke: Invoke, site: Sitecare):
    report = json.loads(ok(invoke("skills", "validate", str(site.skills), "--json")).stdout)
    assert set(report) == REPORT_KEYS
    assert report["skills"] == report["valid"] == 11
    assert report["errors"] == []
    assert report["warnings"] == []


def test_validate_broken_folder_exits_1_and_names_each_file(invoke: Invoke, broken_catalog: Path):
    result = invoke("skills", "validate", str(broken_catalog), "--json")
    assert result.exit_code == 1, result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert set(report) == REPORT_KEYS
    assert report["skills"] == 5
    # good-one and the first twin are valid; the malformed one, the CEL one and the
    # misnamed twin-copy are not
    errors = report["errors"]
    assert all(set(e) == {"path", "field", "message"} for e in errors)

    malformed = [e for e in errors if "broken/SKILL.md" in e["path"]]
    assert len(malformed) == 1
    assert malformed[0]["path"].endswith("broken/SKILL.md:3")  # the line of the bad value
    assert "YAML" in malformed[0]["message"]

    cel = [e for e in errors if "bad-cel/maitred.yaml" in e["path"]]
    assert len(cel) == 1
    assert "plan_is_free" in cel[0]["message"]
    assert "exit_predicates[0]" in cel[0]["message"]
    assert "does not compile" in cel[0]["message"]

    duplicate = [e for e in errors if "used more than once" in e["message"]]
    assert len(duplicate) == 1
    assert duplicate[0]["field"] == "name"
    assert "'twin'" in duplicate[0]["message"]
    assert "twin-copy" in duplicate[0]["message"]
    assert str(broken_catalog / "twin") in duplicate[0]["message"]
    # twin-copy's name is not its folder's: a spec rule, so an error for a validator
    mismatch = [e for e in errors if "does not match its folder" in e["message"]]
    assert [e["path"] for e in mismatch] == [f"{broken_catalog / 'twin-copy'}/SKILL.md:2"]
    assert len(errors) == 4
    assert report["valid"] == 2 and report["warnings"] == []


def test_validate_text_output_keeps_field_names(invoke: Invoke, broken_catalog: Path):
    """The human report shows `[name]` (it used to vanish as rich markup)."""
    result = invoke("skills", "validate", str(broken_catalog), "--lenient")
    assert result.exit_code == 1
    assert "Traceback" not in result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "3/5 valid, 1 warnings, 3 errors"
    warnings = [line for line in lines if line.startswith("  warning: ")]
    errors = [line for line in lines if line.startswith("  error: ")]
    assert len(warnings) == 1
    assert len(errors) == 3
    # one line per problem, with the file and the field in brackets
    twin = str(broken_catalog / "twin-copy")
    assert warnings[0].startswith(f"  warning: {twin}/SKILL.md:2 [name]: ")
    assert any(line.startswith(f"  error: {twin} [name]: ") for line in errors)


def test_validate_a_missing_path_is_an_error_not_a_crash(invoke: Invoke, tmp_path: Path):
    missing = tmp_path / "nowhere"
    result = invoke("skills", "validate", str(missing), "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["skills"] == report["valid"] == 0
    assert report["errors"]
    assert all(e["path"] == str(missing) for e in report["errors"])


# -- --state: the load-time checks against a real store (typed state, issue 16) -----------


def _repo_catalog(tmp_path: Path, column_type: str) -> tuple[Path, str]:
    import sqlite3

    skills = tmp_path / "skills"
    _skill(
        skills,
        "push-code",
        "name: push-code\ndescription: Push commits. Use when pushing code.\n",
        sidecar=(
            "mutates: true\n"
            "exit_predicates:\n"
            "  - name: repo_frozen\n"
            "    expr: repo.frozen == true\n"
            "    reads: [repo.frozen]\n"
        ),
    )
    db = tmp_path / "state.db"
    with sqlite3.connect(db) as conn:
        conn.execute(f"CREATE TABLE repos (account_id TEXT PRIMARY KEY, frozen {column_type})")
    conn.close()
    (tmp_path / "tables.json").write_text('{"repo": "repos"}', encoding="utf-8")
    return skills, f"sqlite:///{db}"


def test_validate_with_state_accepts_a_predicate_that_fits_its_column(
    invoke: Invoke, tmp_path: Path
):
    skills, url = _repo_catalog(tmp_path, "BOOLEAN")
    result = invoke(
        "skills", "validate", str(skills), "--state", url, "--tables", str(tmp_path / "tables.json")
    )
    assert result.exit_code == 0, result.stdout


def test_validate_with_state_refuses_a_predicate_that_cannot_fire(invoke: Invoke, tmp_path: Path):
    """Regression: `repo.frozen == true` over an INTEGER column was called valid."""
    skills, url = _repo_catalog(tmp_path, "INTEGER")
    tables = str(tmp_path / "tables.json")
    result = invoke("skills", "validate", str(skills), "--state", url, "--tables", tables, "--json")
    assert result.exit_code == 1
    (error,) = json.loads(result.stdout)["errors"]
    assert error["path"] == url
    assert f"{skills / 'push-code' / 'maitred.yaml'}:4" in error["message"]
    assert "repo_frozen" in error["message"] and "(int, bool)" in error["message"]
