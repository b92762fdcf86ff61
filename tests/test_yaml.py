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


@pytest.mark.parametrize(
    "text",
    [
        "a: yes\nb: No\nc: ~\nd: 010\ne: 0x1F\nf: 1_000\ng: .inf\nh: -.Inf\ni: 1e3\n",
        "when: 2024-02-29\nat: 2024-02-29 10:20:30.5+01:00\n"
        "bin: !!binary aGk=\nset: !!set {a, b}\n",
        "text: |\n  one\n   two\n\nfold: >-\n  one\n  two\nq: 'it''s'\nd: \"\\u00e9\\t\"\n",
        "base: &b {x: [1, 2]}\nuse:\n  <<: *b\n  y: 2\n? long key\n: complex\n",
    ],
)
def test_values_and_lines_are_the_pure_python_loaders(text: str) -> None:
    """The reader may use libyaml's parser: what it gives is what PyYAML's own would."""
    import yaml

    data, node = parse_yaml(text, "f.yaml", unique_keys=False)
    reference = yaml.SafeLoader(text)
    try:
        expected = reference.get_single_node()
        assert data == reference.construct_document(expected)
    finally:
        reference.dispose()
    assert node is not None and expected is not None
    mine = [(k.start_mark.line, k.value) for k, _ in node.value]
    theirs = [(k.start_mark.line, k.value) for k, _ in expected.value]
    assert mine == theirs
