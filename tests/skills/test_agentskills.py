"""Agent Skills fields: every strict rule, its lenient warning, and loading a real folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from maitred.errors import ContractError, SkillParseError
from maitred.skills import load_skill, name_rule_violations, parse_skill_md

from .conftest import PDF_BODY, WriteSkill

LONG = "x" * 1025


def fm(**fields: str) -> str:
    """A frontmatter file: ``name: demo`` and a description unless overridden; ``""`` drops."""
    values = {"name": "demo", "description": "A demo skill. Use it for demos."} | fields
    yaml_text = "".join(f"{k}: {v}\n" for k, v in values.items() if v != "")
    return f"---\n{yaml_text}---\nbody\n"


# (case id, file text, field at fault, fragment of the message)
DEVIATIONS = [
    ("name-uppercase", fm(name="Demo"), "name", "only lowercase letters"),
    ("name-underscore", fm(name="de_mo"), "name", "only lowercase letters"),
    ("name-too-long", fm(name="a" * 65), "name", "at most 64"),
    ("name-leading-hyphen", fm(name="-demo"), "name", "starts or ends with a hyphen"),
    ("name-trailing-hyphen", fm(name="demo-"), "name", "starts or ends with a hyphen"),
    ("name-double-hyphen", fm(name="de--mo"), "name", "consecutive hyphens"),
    ("name-folder-mismatch", fm(name="other"), "name", "does not match its folder 'demo'"),
    ("name-missing", fm(name=""), "name", "is missing"),
    ("name-empty", fm(name='""'), "name", "must be non-empty text"),
    ("name-not-text", fm(name="42"), "name", "must be a string"),
    ("description-too-long", fm(description=LONG), "description", "at most 1024"),
    ("description-number", fm(description="3.14"), "description", "must be a string"),
    ("license-not-text", fm(license="[MIT, BSD]"), "license", "must be a string"),
    ("compatibility-empty", fm(compatibility='""'), "compatibility", "is empty"),
    ("compatibility-too-long", fm(compatibility="y" * 501), "compatibility", "at most 500"),
    ("compatibility-not-text", fm(compatibility="3"), "compatibility", "must be a string"),
    ("metadata-not-map", fm(metadata="[a, b]"), "metadata", "must be a mapping, got list"),
    ("metadata-value", fm(metadata="{version: 1.0}"), "metadata.version", "must be a string"),
    ("metadata-key", fm(metadata="{1: one}"), "metadata.1", "key 1 must be a string"),
    ("allowed-tools-list", fm(**{"allowed-tools": "[Read, Grep]"}), "allowed-tools", "got a list"),
    ("unknown-field", fm(version="2"), "version", "unknown field 'version'"),
    ("misspelt-field", fm(allowed_tools="Read"), "allowed_tools", "did you mean `allowed-tools`"),
]


@pytest.mark.parametrize(
    ("text", "field", "fragment"), [c[1:] for c in DEVIATIONS], ids=[c[0] for c in DEVIATIONS]
)
def test_strict_mode_raises_on_each_rule(text: str, field: str, fragment: str) -> None:
    with pytest.raises(SkillParseError) as info:
        parse_skill_md(text, path="demo/SKILL.md", folder_name="demo", strict=True)
    assert info.value.field == field
    assert fragment in info.value.detail
    assert info.value.line is not None or field == "name"


@pytest.mark.parametrize(
    ("text", "field", "fragment"), [c[1:] for c in DEVIATIONS], ids=[c[0] for c in DEVIATIONS]
)
def test_lenient_mode_loads_with_a_warning_naming_file_field_and_rule(
    text: str, field: str, fragment: str
) -> None:
    md, warnings = parse_skill_md(text, path="demo/SKILL.md", folder_name="demo")
    assert md.description
    matching = [w for w in warnings if w.field == field and fragment in w.message]
    assert matching, [w.message for w in warnings]
    assert all(w.path == "demo/SKILL.md" for w in warnings)
    assert "rule" in matching[0].message


def test_lenient_values_are_what_a_reader_expects() -> None:
    md, _ = parse_skill_md(fm(name=""), folder_name="demo")
    assert md.name == "demo"  # missing name -> the folder name
    md, _ = parse_skill_md(fm(name="Other_Name"), folder_name="demo")
    assert md.name == "Other_Name"  # a declared name is kept as written
    md, _ = parse_skill_md(fm(metadata="{version: 1.10, beta: true, n: null, d: 2024-01-02}"))
    assert md.metadata == {"version": "1.10", "beta": "true", "n": "", "d": "2024-01-02"}
    md, _ = parse_skill_md(fm(**{"allowed-tools": "[Read, Bash]"}))
    assert md.allowed_tools == "Read Bash"
    md, _ = parse_skill_md(fm(compatibility='""'))
    assert md.compatibility is None
    md, _ = parse_skill_md(fm(description=LONG))
    assert md.description == LONG


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (fm(description=""), "`description` is missing"),
        (fm(description='""'), "`description` is empty"),
        (fm(description='"   "'), "`description` is empty"),
        (fm(description="[a, b]"), "must be text, got a list"),
        (fm(description="{a: b}"), "must be text, got a dict"),
    ],
)
def test_missing_or_unusable_description_is_an_error_in_both_modes(
    text: str, fragment: str, strict: bool
) -> None:
    with pytest.raises(SkillParseError, match=fragment) as info:
        parse_skill_md(text, folder_name="demo", strict=strict)
    assert info.value.field == "description"


def test_missing_name_without_a_folder_is_an_error() -> None:
    with pytest.raises(SkillParseError, match="`name` is missing"):
        parse_skill_md(fm(name=""))


def test_valid_name_rules() -> None:
    for good in ("pdf", "pdf-processing", "a1-b2-c3", "1password", "a" * 64):
        assert name_rule_violations(good) == [], good
    assert len(name_rule_violations("-Bad--Name_")) == 3


def test_valid_full_skill_has_no_warnings_in_strict_mode(pdf_skill: Path) -> None:
    skill, warnings = load_skill(pdf_skill, strict=True)
    assert warnings == ()
    assert skill.name == "pdf-processing"
    assert skill.kind == "skill"
    assert skill.description.startswith("Extract text and tables")
    assert skill.license == "Apache-2.0"
    assert skill.compatibility == "Needs poppler-utils and network access"
    assert skill.metadata == {"author": "docs-team", "version": "1.2"}
    assert skill.allowed_tools == "Bash(pdftotext:*) Read"
    assert skill.body == PDF_BODY
    assert skill.path == str(pdf_skill)
    assert skill.family is None
    assert skill.resources == (
        "assets/template.docx",
        "references/forms.md",
        "scripts/extract.py",
        "scripts/lib/util.py",
    )


def test_family_comes_from_sidecar_then_metadata_then_parent(write_skill: WriteSkill) -> None:
    meta = "name: billing\ndescription: Pay invoices.\nmetadata:\n  family: money\n"
    folder = write_skill("billing", meta)
    assert load_skill(folder)[0].family == "money"
    (folder / "maitred.yaml").write_text("family: accounts\ncost: 2.5\nmutates: true\n")
    skill = load_skill(folder)[0]
    assert skill.family == "accounts"
    assert (skill.contract.cost, skill.contract.mutates) == (2.5, True)
    assert skill.contract.source == str(folder / "maitred.yaml")
    plain = write_skill("search", "name: search\ndescription: Find things.\n")
    assert load_skill(plain)[0].family is None
    assert load_skill(plain, family_from_parent=True)[0].family == "skills"


def test_sidecar_errors_propagate_naming_the_sidecar(write_skill: WriteSkill) -> None:
    folder = write_skill("demo", "name: demo\ndescription: d\n")
    (folder / "maitred.yaml").write_text("cost: -1\n")
    with pytest.raises(ContractError, match=r"maitred\.yaml"):
        load_skill(folder)


def test_unreadable_skill_md_is_a_parse_error(tmp_path: Path) -> None:
    with pytest.raises(SkillParseError, match="cannot be read"):
        load_skill(tmp_path / "nowhere")
