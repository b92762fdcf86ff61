"""Split a ``SKILL.md`` into YAML frontmatter and markdown body, and load the YAML.

The rules, exactly::

    \\ufeff---            line 1: exactly ``---``; a UTF-8 BOM before it and a ``\\r`` after it
    name: my-skill        are allowed, nothing else (no spaces, no blank lines before it)
    description: |
      ---                 an indented ``---`` is YAML text, not a delimiter
    ---                   the first later line that is exactly ``---`` closes the frontmatter
    # Body                everything after it is the body (``\\n`` line endings)

A ``----`` rule or ``--- x`` never closes the frontmatter: delimiters are whole lines. The YAML
is loaded with PyYAML's safe loader; its node tree is kept so that every error and warning can
name a line of ``SKILL.md`` (YAML counts lines of the fragment from 0; the fragment starts on
line 2 of the file, so a file line is the YAML line plus :data:`LINE_OFFSET`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from maitred._yaml import YamlProblem, parse_yaml
from maitred.errors import SkillParseError
from maitred.skills.report import Diagnostics

DELIMITER = "---"
LINE_OFFSET = 2
"""Add to a 0-based YAML line to get the 1-based line of ``SKILL.md``."""

_BOM = "\ufeff"
_FIX_YAML = "fix the YAML (quote a value that contains ': ' or starts with a special character)"


@dataclass(frozen=True)
class Frontmatter:
    """A ``SKILL.md`` split and loaded.

    Attributes:
        data: the frontmatter mapping, as ``yaml.safe_load`` would return it.
        nodes: top-level key -> YAML value node (positions and scalars as written).
        body: the markdown after the closing delimiter.
    """

    data: Mapping[Any, Any]
    nodes: Mapping[str, yaml.Node]
    body: str

    def line(self, key: str) -> int | None:
        """The ``SKILL.md`` line of top-level field ``key``'s value, if present."""
        node = self.nodes.get(key)
        return node_line(node) if node is not None else None


def read_frontmatter(source: str | bytes, path: str, diag: Diagnostics) -> Frontmatter:
    """Decode, split and load a ``SKILL.md``.

    Args:
        source: the file's bytes (must be UTF-8) or text.
        path: the file name used in errors.
        diag: receives deviations (a field given twice).

    Raises:
        SkillParseError: not UTF-8, no or unclosed frontmatter, invalid YAML, or frontmatter
            that is not a mapping.
    """
    frontmatter, body = split(decode(source, path), path)
    data, node = _load_yaml(frontmatter, path)
    _check_repeated(node, path, diag)
    return Frontmatter(data, key_nodes(node), body)


def decode(source: str | bytes, path: str) -> str:
    """UTF-8 text without a leading byte-order mark.

    Raises:
        SkillParseError: the bytes are not UTF-8 (names the line and byte offset).
    """
    if isinstance(source, str):
        return source.removeprefix(_BOM)
    try:
        return source.decode("utf-8").removeprefix(_BOM)
    except UnicodeDecodeError as exc:
        line = source.count(b"\n", 0, exc.start) + 1
        byte = source[exc.start : exc.start + 1].hex()
        raise SkillParseError(
            path,
            f"is not UTF-8 text (byte 0x{byte} at offset {exc.start}): save the file as UTF-8",
            line=line,
        ) from None


def split(text: str, path: str) -> tuple[str, str]:
    """Split ``SKILL.md`` text into (frontmatter YAML, body), both with ``\\n`` line endings.

    Raises:
        SkillParseError: line 1 is not ``---``, or no later line is.
    """
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if lines[0] != DELIMITER:
        hint = ""
        if not text.strip():
            hint = " (the file is empty)"
        elif lines[0].strip() == DELIMITER:
            hint = " (the first line has spaces around `---`)"
        raise SkillParseError(
            path,
            f"has no frontmatter{hint}: the first line must be exactly `---`, followed by YAML "
            "with `name:` and `description:` and a closing `---` line",
            line=1,
        )
    for index in range(1, len(lines)):
        if lines[index] == DELIMITER:
            return "\n".join(lines[1:index]), "\n".join(lines[index + 1 :])
    raise SkillParseError(
        path,
        "frontmatter opened on line 1 is never closed: add a line that is exactly `---` after "
        "the YAML (an indented `---` or a `----` line does not close it)",
        line=1,
    )


def key_nodes(node: yaml.MappingNode) -> dict[str, yaml.Node]:
    """Key -> value node of a YAML mapping node (the last one wins, as in loading)."""
    return {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}


def node_line(node: yaml.Node) -> int:
    """The ``SKILL.md`` line where a frontmatter node starts."""
    return int(node.start_mark.line) + LINE_OFFSET


def _load_yaml(frontmatter: str, path: str) -> tuple[dict[Any, Any], yaml.MappingNode]:
    try:  # a repeated field is a deviation here (_check_repeated), not a refusal
        data, node = parse_yaml(frontmatter, path, first_line=LINE_OFFSET, unique_keys=False)
    except YamlProblem as exc:
        fix = "" if exc.kind == "character" else f"; {_FIX_YAML}"
        raise SkillParseError(path, f"frontmatter: {exc.detail}{fix}", line=exc.line) from None
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        got = "nothing" if data is None else f"a {type(data).__name__}"
        raise SkillParseError(
            path,
            "frontmatter must be a YAML mapping of fields (`name: ...`, `description: ...`), "
            f"got {got}",
            line=LINE_OFFSET,
        )
    return data, node


def _check_repeated(node: yaml.MappingNode, path: str, diag: Diagnostics) -> None:
    seen: dict[str, int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            continue
        key, line = str(key_node.value), node_line(key_node)
        if key in seen:
            diag.deviation(
                path,
                f"field {key!r} is given twice (lines {seen[key]} and {line}; rule: unique "
                "keys): remove one; the last one is used",
                field=key,
                line=line,
            )
        else:
            seen[key] = line
