"""Catalogs from folders and tools files: discovery, duplicates, emptiness, reports, validate."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import maitred.skills
from maitred.errors import ContractError, DuplicateSkillError, EmptyCatalogError, SkillParseError
from maitred.skills import load_catalog, load_catalog_report, validate

from .conftest import PDF_FRONTMATTER, WriteSkill, skill_text


def simple(name: str, description: str = "Does a thing. Use it when asked.") -> str:
    return f"name: {name}\ndescription: {description}\n"


@pytest.fixture
def library(tmp_path: Path, write_skill: WriteSkill) -> Path:
    """skills/{billing/{pay-invoice,refund},search,.hidden/secret} + a nested example."""
    root = tmp_path / "skills"
    write_skill("billing/pay-invoice", simple("pay-invoice"))
    write_skill("billing/refund", simple("refund"))
    search = write_skill("search", simple("search"))
    write_skill("references/example", simple("example"), root=search)  # inside a skill
    write_skill(".hidden/secret", simple("secret"))
    return root


def test_directory_is_walked_for_skill_folders(library: Path) -> None:
    catalog = load_catalog(library, strict=True)
    assert sorted(catalog.names) == ["pay-invoice", "refund", "search"]
    assert catalog["search"].resources == ("references/example/SKILL.md",)
    assert catalog["refund"].family is None


def test_family_from_parent(library: Path) -> None:
    catalog = load_catalog([library], family_from_parent=True)
    assert catalog.families() == {"billing": ("pay-invoice", "refund"), "skills": ("search",)}


def test_single_folder_skill_md_and_tools_files(tmp_path: Path, write_skill: WriteSkill) -> None:
    one = write_skill("pdf-processing", PDF_FRONTMATTER)
    two = write_skill("lint", simple("lint"))
    tools = tmp_path / "tools.jsonl"
    tools.write_text(json.dumps({"name": "get_weather", "description": "Weather."}) + "\n")
    listing = tmp_path / "mcp.json"
    listing.write_text(
        json.dumps({"result": {"tools": [{"name": "ping", "description": "Ping."}]}})
    )
    catalog = load_catalog([str(one), two / "SKILL.md", tools, listing], strict=True)
    assert catalog.names == ("pdf-processing", "lint", "get_weather", "ping")
    assert [s.kind for s in catalog] == ["skill", "skill", "tool", "tool"]


def test_duplicate_names_name_both_paths(tmp_path: Path, write_skill: WriteSkill) -> None:
    first = write_skill("a/search", simple("search"))
    second = write_skill("b/search", simple("search"))
    with pytest.raises(DuplicateSkillError) as info:
        load_catalog(tmp_path / "skills")
    assert info.value.paths == (str(first), str(second))
    catalog, report = load_catalog_report(tmp_path / "skills")
    assert catalog is None
    (error,) = report.errors
    assert (error.path, error.field) == (str(second), "name")
    assert str(first) in error.message and str(second) in error.message


def test_a_tool_and_a_skill_with_one_name_are_duplicates(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    folder = write_skill("search", simple("search"))
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": "search", "description": "Search."}]))
    with pytest.raises(DuplicateSkillError, match="search"):
        load_catalog([folder, tools])


def test_empty_catalog_says_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(EmptyCatalogError, match=r"<name>/SKILL.md.*\.json/\.jsonl") as info:
        load_catalog(tmp_path / "empty")
    assert str(tmp_path / "empty") in str(info.value)
    catalog, report = load_catalog_report(tmp_path / "empty")
    assert catalog is None
    assert any("holds no SKILL.md" in w.message for w in report.warnings)
    assert "no skills or tools found" in report.errors[-1].message
    with pytest.raises(EmptyCatalogError):
        load_catalog([])


def test_missing_path_and_unknown_file_are_errors(tmp_path: Path, library: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    catalog, report = load_catalog_report([library, tmp_path / "nope", tmp_path / "notes.txt"])
    assert catalog is not None and len(catalog) == 3
    messages = [(e.path, e.message) for e in report.errors]
    assert messages[0][0] == str(tmp_path / "nope") and "does not exist" in messages[0][1]
    assert "is not a skill folder" in messages[1][1]
    with pytest.raises(SkillParseError, match="does not exist"):
        load_catalog([library, tmp_path / "nope"], strict=True)


def test_lenient_skips_a_broken_skill_and_logs_it(
    library: Path, write_skill: WriteSkill, caplog: pytest.LogCaptureFixture
) -> None:
    broken = write_skill("broken", "name: broken\n")  # no description
    write_skill("Loose_Name", simple("Loose_Name"))
    with caplog.at_level(logging.WARNING, logger="maitred.skills.catalog"):
        catalog = load_catalog(library)
    assert "broken" not in catalog and "Loose_Name" in catalog
    logged = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert (
        "ERROR",
        f"{broken / 'SKILL.md'}: `description` is missing: add `description:` "
        "saying what the skill does and when to use it (1-1024 characters) (skipped)",
    ) in logged
    assert any(level == "WARNING" and "Loose_Name" in msg for level, msg in logged)


def test_strict_refuses_the_catalog_on_any_error(library: Path, write_skill: WriteSkill) -> None:
    write_skill("Loose_Name", simple("Loose_Name"))
    with pytest.raises(SkillParseError, match="only lowercase letters") as info:
        load_catalog(library, strict=True)
    assert info.value.field == "name"
    catalog, report = load_catalog_report(library, strict=True)
    assert catalog is None
    assert report.examined == 4 and report.loaded == 3 and report.warnings == ()


def test_contract_errors_name_the_sidecar(library: Path) -> None:
    sidecar = library / "search" / "maitred.yaml"
    sidecar.write_text("cost: free\n")
    catalog, report = load_catalog_report(library)
    assert catalog is not None and "search" not in catalog
    (error,) = report.errors
    assert error.path == str(sidecar)
    assert "`cost` must be a positive number" in error.message
    with pytest.raises(ContractError, match=r"maitred\.yaml"):
        load_catalog(library, strict=True)
    sidecar.write_bytes(b"cost: \xff\n")
    _, report = load_catalog_report(library)
    assert report.errors[0].path == str(sidecar)


def test_bad_tool_line_skipped_in_a_catalog(tmp_path: Path, library: Path) -> None:
    tools = tmp_path / "tools.jsonl"
    tools.write_text('{"name": "ok", "description": "Fine."}\n{oops\n')
    catalog, report = load_catalog_report([library, tools])
    assert catalog is not None and "ok" in catalog
    assert report.as_dict()["errors"][0]["path"] == f"{tools}:2"


def test_version_changes_with_description_and_is_stable_otherwise(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill("search", simple("search", "Find documents."))
    write_skill("refund", simple("refund"))
    root = tmp_path / "skills"
    first = load_catalog(root).version
    assert load_catalog(root).version == first
    assert load_catalog([root / "refund", root / "search"]).version == first  # order-free
    (root / "search" / "SKILL.md").write_bytes(
        skill_text(simple("search", "Find documents."), newline="\r\n")
    )
    (root / "search" / "scripts").mkdir()
    (root / "search" / "scripts" / "run.py").write_text("print()")
    assert load_catalog(root).version == first  # line endings and resources do not count
    write_skill("search", simple("search", "Find documents and pages."))
    changed = load_catalog(root).version
    assert changed != first and changed.startswith("c1:")


def test_validate_shape(library: Path, write_skill: WriteSkill) -> None:
    write_skill("Loose_Name", simple("Loose_Name"))
    write_skill("broken", "name: broken\n")
    result = validate(library, lenient=True)
    assert set(result) == {"skills", "valid", "warnings", "errors"}
    assert (result["skills"], result["valid"]) == (5, 4)
    for record in result["warnings"] + result["errors"]:
        assert set(record) == {"path", "field", "message"}
    assert json.loads(json.dumps(result)) == result
    # by default a validator reports every broken rule of Loose_Name as an error
    checked = validate(library)
    assert (checked["valid"], checked["warnings"]) == (3, [])
    loose = [e["message"] for e in checked["errors"] if "Loose_Name" in e["path"]]
    assert len(loose) == 1 and "contains" in loose[0]


def test_validate_survives_symlink_loops_and_odd_files(tmp_path: Path, library: Path) -> None:
    (library / "billing" / "loop").symlink_to(library)
    (library / "self").symlink_to(library / "self")
    (library / "dangling").mkdir()
    (library / "dangling" / "SKILL.md").symlink_to(tmp_path / "missing.md")
    (library / "dir-skill" / "SKILL.md").mkdir(parents=True)
    result = validate([library, tmp_path / "missing.json"])
    assert result["valid"] == 3
    paths = [e["path"] for e in result["errors"]]
    assert str(library / "dangling" / "SKILL.md") in paths
    assert str(tmp_path / "missing.json") in paths


def test_unreadable_folder_is_reported(library: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_walk = os.walk
    calls: list[str] = []

    def walk(top: str, *args: object, **kw: object):  # type: ignore[no-untyped-def]
        onerror = kw.get("onerror")
        if callable(onerror) and not calls:  # the catalog's own call, not os.walk recursing
            calls.append(top)
            onerror(PermissionError(13, "Permission denied", str(library / "locked")))
        yield from real_walk(top, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "walk", walk)
    result = validate(library)
    assert result["valid"] == 3
    assert result["errors"][0]["path"] == str(library / "locked")
    assert "Permission denied" in result["errors"][0]["message"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads folders whatever their permissions")
def test_folder_without_permissions_is_reported(library: Path) -> None:
    locked = library / "billing"
    locked.chmod(0)
    try:
        result = validate(library)
    finally:
        locked.chmod(0o755)
    assert result["valid"] == 1
    assert any(e["path"] == str(locked) for e in result["errors"])


def test_validate_never_raises_on_nonsense_arguments() -> None:
    result = validate(None)  # type: ignore[arg-type]
    assert result["errors"] and result["skills"] == 0


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.one_of(
        st.binary(max_size=400),
        st.binary(max_size=300).map(lambda b: b"---\n" + b + b"\n---\nbody"),
        st.text(max_size=300).map(
            lambda t: f"---\nname: demo\n{t}\n---\n".encode("utf-8", "replace")
        ),
    ),
    lenient=st.booleans(),
)
def test_validate_never_raises_on_arbitrary_skill_md(
    tmp_path: Path, data: bytes, lenient: bool
) -> None:
    folder = tmp_path / "demo"
    folder.mkdir(exist_ok=True)
    (folder / "SKILL.md").write_bytes(data)
    result = validate(tmp_path, lenient=lenient)
    assert result["skills"] == 1
    assert result["valid"] + len(result["errors"]) >= 1
    json.dumps(result)


def test_public_names_are_exported_alphabetically() -> None:
    names = maitred.skills.__all__
    assert names == sorted(names)
    for name in names:
        assert getattr(maitred.skills, name) is not None
    assert {
        "Catalog",
        "Skill",
        "LoadReport",
        "load_catalog",
        "load_catalog_report",
        "validate",
    } <= set(names)


def test_lenient_raises_the_catalog_level_error_not_a_skipped_one(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill("a/broken", "name: broken\n")
    write_skill("b/search", simple("search"))
    write_skill("c/search", simple("search"))
    with pytest.raises(DuplicateSkillError):
        load_catalog(tmp_path / "skills")
    only_broken = write_skill("broken", "name: broken\n", root=tmp_path / "other")
    with pytest.raises(EmptyCatalogError, match="1 could not be loaded") as info:
        load_catalog(only_broken)
    assert str(only_broken / "SKILL.md") in str(info.value)
