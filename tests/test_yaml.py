"""The one YAML reader (maitred/_yaml.py): safe, repeated keys refused, file and line named."""

from __future__ import annotations

from pathlib import Path

import pytest

from maitred._yaml import YamlProblem, parse_yaml, read_yaml
from maitred.errors import ConfigError


def test_a_repeated_key_is_refused_at_any_depth_with_both_lines() -> None:
    with pytest.raises(YamlProblem, match=r"^f\.yaml:4: key 'b' is given twice \(lines 3 and 4\)"):
        parse_yaml("a: 1\nn:\n  b: 2\n  b: 3\n", "f.yaml")
    with pytest.raises(YamlProblem) as info:
        parse_yaml("l:\n- {x: 1, x: 2}\n", "f.yaml")
    assert info.value.kind == "repeat" and info.value.line == 2
    data, _ = parse_yaml("a: 1\nb: 1\n", "f.yaml", unique_keys=False)
    assert data == {"a": 1, "b": 1}
    assert parse_yaml("a: 1\na: 2\n", "f.yaml", unique_keys=False)[0] == {"a": 2}


def test_merge_keys_aliases_and_keys_of_other_types_are_no_repeat() -> None:
    text = "base: &b {x: 1}\nuse:\n  <<: *b\n  y: 2\nagain: *b\nk: {1: a, '1': b}\n"
    data, _ = parse_yaml(text, "f.yaml")
    assert data["use"] == {"x": 1, "y": 2} and data["again"] == {"x": 1}
    assert data["k"] == {1: "a", "1": "b"}


@pytest.mark.parametrize(
    ("text", "kind", "line"),
    [
        ("a: [1\n", "syntax", 2),
        ("a: 1\nb: \x07\n", "character", 2),
        ("d: 2024-13-45\n", "load", None),
        ("x: !!python/object:os.system {}\n", "syntax", 1),  # the safe loader only
    ],
)
def test_every_failure_is_one_problem_naming_the_file(text: str, kind: str, line: int) -> None:
    with pytest.raises(YamlProblem) as info:
        parse_yaml(text, "conf.yaml", first_line=1)
    assert (info.value.kind, info.value.line) == (kind, line)
    assert isinstance(info.value, ConfigError)
    assert str(info.value).startswith("conf.yaml")
    assert "<unicode string>" not in str(info.value)


def test_first_line_shifts_every_line() -> None:
    with pytest.raises(YamlProblem) as info:
        parse_yaml("a: 1\na: 2\n", "SKILL.md", first_line=2)
    assert info.value.line == 3


def test_read_yaml_names_an_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(YamlProblem, match="cannot read the thing") as info:
        read_yaml(tmp_path / "absent.yaml", "the thing")
    assert info.value.kind == "read"
    assert read_yaml(_write(tmp_path / "ok.yaml", "a: [1, 2]\n"), "x") == {"a": [1, 2]}
    assert read_yaml(_write(tmp_path / "empty.yaml", ""), "x") is None


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
