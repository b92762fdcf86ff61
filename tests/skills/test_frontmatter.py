"""SKILL.md structure: delimiters as whole lines, BOM and CRLF, YAML errors on file lines."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maitred.errors import SkillParseError
from maitred.skills import parse_skill_md

GOOD = "---\nname: demo\ndescription: A demo skill.\n---\n# Demo\n"


def test_minimal_file_parses() -> None:
    md, warnings = parse_skill_md(GOOD, folder_name="demo", strict=True)
    assert (md.name, md.description, md.body) == ("demo", "A demo skill.", "# Demo\n")
    assert warnings == ()


def test_crlf_file_parses_like_lf() -> None:
    crlf = GOOD.replace("\n", "\r\n").encode()
    md, _ = parse_skill_md(crlf, folder_name="demo", strict=True)
    assert md == parse_skill_md(GOOD, folder_name="demo", strict=True)[0]
    assert "\r" not in md.body


def test_utf8_bom_is_allowed() -> None:
    md, _ = parse_skill_md(b"\xef\xbb\xbf" + GOOD.encode(), folder_name="demo", strict=True)
    assert md.name == "demo"


def test_dashes_inside_block_scalar_do_not_close_frontmatter() -> None:
    text = (
        "---\nname: demo\ndescription: |\n  First part.\n  ---\n  Second part.\n"
        "---\n# Body\n---\nnot frontmatter\n"
    )
    md, _ = parse_skill_md(text, folder_name="demo", strict=True)
    assert md.description == "First part.\n---\nSecond part."
    assert md.body == "# Body\n---\nnot frontmatter\n"


def test_longer_rule_and_inline_dashes_do_not_close_frontmatter() -> None:
    text = "---\nname: demo\ndescription: a --- b\n----\n"
    with pytest.raises(SkillParseError, match="never closed") as info:
        parse_skill_md(text, folder_name="demo")
    assert info.value.line == 1


def test_closing_delimiter_at_end_of_file_without_newline() -> None:
    md, _ = parse_skill_md("---\nname: demo\ndescription: d\n---", folder_name="demo")
    assert md.body == ""


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "the file is empty"),
        ("# Just markdown\n", "first line must be exactly `---`"),
        ("\n---\nname: demo\ndescription: d\n---\n", "first line must be exactly `---`"),
        ("--- \nname: demo\ndescription: d\n---\n", "spaces around"),
    ],
)
def test_missing_frontmatter_is_an_error_in_both_modes(
    text: str, fragment: str, strict: bool
) -> None:
    with pytest.raises(SkillParseError, match=fragment) as info:
        parse_skill_md(text, path="x/SKILL.md", folder_name="demo", strict=strict)
    assert info.value.path == "x/SKILL.md"
    assert info.value.line == 1


@pytest.mark.parametrize("strict", [True, False])
def test_unclosed_frontmatter_is_an_error(strict: bool) -> None:
    with pytest.raises(SkillParseError, match="never closed"):
        parse_skill_md("---\nname: demo\ndescription: d\n", strict=strict)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        # line 4 of the file is the bad mapping value
        ("---\nname: demo\ndescription: ok\nlicense: a: b\n---\n", 4),
        ("---\nname: demo\ndescription: [unclosed\nlicense: x\n---\n", 4),
        ("---\n\n\n\nname: demo\n  bad: indent\n---\n", 6),
    ],
)
def test_yaml_error_names_the_line_of_skill_md(text: str, line: int) -> None:
    for source in (text, text.replace("\n", "\r\n")):
        with pytest.raises(SkillParseError, match="not valid YAML") as info:
            parse_skill_md(source, path="SKILL.md", folder_name="demo")
        assert info.value.line == line
        assert str(info.value).startswith(f"SKILL.md:{line}:")


def test_unprintable_character_names_its_line() -> None:
    with pytest.raises(SkillParseError, match="character #x0007 is not allowed in YAML") as info:
        parse_skill_md("---\nname: demo\ndescription: a\x07b\n---\n", folder_name="demo")
    assert info.value.line == 3


def test_impossible_date_is_a_yaml_error() -> None:
    with pytest.raises(SkillParseError, match="cannot be loaded as YAML"):
        parse_skill_md("---\nname: demo\ndescription: d\nlicense: 2024-13-45\n---\n")


@pytest.mark.parametrize("yaml_text", ["", "- a\n- b\n", "just text\n", "42\n"])
def test_frontmatter_must_be_a_mapping(yaml_text: str) -> None:
    with pytest.raises(SkillParseError, match="must be a YAML mapping") as info:
        parse_skill_md(f"---\n{yaml_text}---\n", folder_name="demo")
    assert info.value.line == 2


def test_non_utf8_file_names_line() -> None:
    raw = b"---\nname: demo\ndescription: caf\xe9\n---\n"
    with pytest.raises(SkillParseError, match="not UTF-8") as info:
        parse_skill_md(raw, folder_name="demo")
    assert info.value.line == 3


def test_repeated_field_warns_lenient_and_raises_strict() -> None:
    text = "---\nname: demo\ndescription: one\ndescription: two\n---\n"
    md, warnings = parse_skill_md(text, folder_name="demo")
    assert md.description == "two"
    assert [(w.field, w.line) for w in warnings] == [("description", 4)]
    assert "given twice (lines 3 and 4" in warnings[0].message
    with pytest.raises(SkillParseError, match="given twice"):
        parse_skill_md(text, folder_name="demo", strict=True)


@settings(max_examples=300, deadline=None)
@given(
    source=st.one_of(
        st.binary(max_size=300),
        st.text(max_size=300).map(lambda t: f"---\n{t}\n---\n"),
        st.text(alphabet="-:{}[]|>&*!?#\n \t'\"abc1", max_size=200).map(
            lambda t: f"---\nname: demo\ndescription: d\n{t}\n---\n"
        ),
    ),
    strict=st.booleans(),
)
def test_parser_only_ever_raises_skill_parse_error(source: str | bytes, strict: bool) -> None:
    try:
        md, warnings = parse_skill_md(source, folder_name="demo", strict=strict)
    except SkillParseError as exc:
        assert exc.path == "SKILL.md"
        assert exc.line is None or exc.line >= 1
    else:
        assert md.description.strip()
        assert not (strict and warnings)
