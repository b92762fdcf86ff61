"""The texts of a skill, field by field, as recall indexes them.

A word in a skill's *name* is stronger evidence than the same word deep in its body, so every
recaller sees four fields and weights them itself (only the ``bm25-plain`` baseline joins them
into one blob, to show what the weighting is worth).

- ``name``: the name split into words (``get_weather``, ``get-weather`` and ``getWeather`` all
  become ``"get weather"``), so that a query's words can meet it.
- ``description``: the description as written.
- ``body``: the markdown body (or a tool's long description) with markup stripped (code fences,
  links, emphasis, headings, tables, HTML tags) and truncated at a word boundary to
  :data:`BODY_CHARS` characters: bodies can be long and their tail is rarely about *when* to use
  the skill.
- ``params``: every parameter name (split into words) and description in ``Skill.parameters``'
  JSON schema, nested objects and array items included.

The functions are pure and deterministic: same skill, same texts. Changing them changes what a
persisted index means, so :data:`FIELDS_VERSION` is part of every index key (see
:mod:`maitred.recall.store`); bump it with any change here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, Literal, get_args

from maitred.skills.model import Skill

Field = Literal["name", "description", "body", "params"]
"""The name of one indexed field."""

FIELDS: Final[tuple[Field, ...]] = get_args(Field)
"""Every field, in a fixed order."""

FIELDS_VERSION: Final = "f1"
"""Bumped with any change to how field texts are made (persisted indexes depend on it)."""

BODY_CHARS: Final = 2000
"""Characters of stripped body kept by default."""

_CAMEL_1 = re.compile(r"([a-z0-9])([A-Z])")
_CAMEL_2 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_SEPARATORS = re.compile(r"[_\-./:]+")
_SPACES = re.compile(r"\s+")

_FENCE = re.compile(r"^\s*(```|~~~).*$", re.MULTILINE)
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_HTML = re.compile(r"<[^>\n]+>")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s*", re.MULTILINE)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+", re.MULTILINE)
_QUOTE = re.compile(r"^\s*>\s?", re.MULTILINE)
_RULE = re.compile(r"^\s*(?:[-*_]\s*){3,}$", re.MULTILINE)
_MARKS = re.compile(r"[*_`|]+")


def split_identifier(text: str) -> str:
    """Split identifiers into words: underscores, hyphens, dots and camelCase become spaces.

    ``"getWeatherForecast"`` -> ``"get Weather Forecast"``, ``"PDF&URLTool"`` ->
    ``"PDF&URL Tool"``, ``"web_scraper"`` -> ``"web scraper"``. Case is kept (tokenisers lower it).

    Args:
        text: a name or any text holding identifiers.

    Returns:
        The text with identifier boundaries turned into single spaces.
    """
    out = _SEPARATORS.sub(" ", text)
    out = _CAMEL_2.sub(r"\1 \2", out)
    out = _CAMEL_1.sub(r"\1 \2", out)
    return _SPACES.sub(" ", out).strip()


def strip_markdown(text: str) -> str:
    """Remove markdown markup, keeping the words a reader would read.

    Code fence lines go (their contents stay: commands and identifiers are useful terms), links
    and images keep their text, headings, bullets, quotes, rules, emphasis and table bars go.

    Args:
        text: markdown.

    Returns:
        Plain text with whitespace collapsed to single spaces.
    """
    out = _FENCE.sub(" ", text)
    out = _IMAGE.sub(r"\1", out)
    out = _LINK.sub(r"\1", out)
    out = _HTML.sub(" ", out)
    out = _RULE.sub(" ", out)
    out = _HEADING.sub("", out)
    out = _BULLET.sub("", out)
    out = _QUOTE.sub("", out)
    out = _MARKS.sub(" ", out)
    return _SPACES.sub(" ", out).strip()


def truncate(text: str, limit: int) -> str:
    """Cut ``text`` to at most ``limit`` characters, at a word boundary where there is one."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return cut[:space] if space > limit // 2 else cut


def flatten_params(schema: Mapping[str, Any] | None) -> str:
    """Parameter names (split into words) and descriptions from a JSON schema, as one text.

    Walks ``properties`` recursively (nested objects, array ``items``, ``anyOf``/``oneOf``/
    ``allOf`` branches) in schema order; enum values are kept too, as they are often the words
    a user types.

    Args:
        schema: a JSON schema of arguments, or ``None``.

    Returns:
        ``"city: the city to look up. units: metric or imperial ..."``-style text, or ``""``.
    """
    parts: list[str] = []
    if schema:
        _walk_schema(schema, parts, depth=0)
    return " ".join(p for p in parts if p)


def _walk_schema(node: Mapping[str, Any], parts: list[str], depth: int) -> None:
    if depth > 8:  # schemas can be recursive through $ref-like tricks; words this deep add noise
        return
    props = node.get("properties")
    if isinstance(props, Mapping):
        for pname, pnode in props.items():
            words = split_identifier(str(pname))
            desc = pnode.get("description", "") if isinstance(pnode, Mapping) else ""
            parts.append(f"{words}: {desc}".strip() if desc else words)
            if isinstance(pnode, Mapping):
                enum = pnode.get("enum")
                if isinstance(enum, list):
                    parts.append(" ".join(str(v) for v in enum))
                _walk_schema(pnode, parts, depth + 1)
    items = node.get("items")
    if isinstance(items, Mapping):
        _walk_schema(items, parts, depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        branches = node.get(key)
        if isinstance(branches, list):
            for branch in branches:
                if isinstance(branch, Mapping):
                    _walk_schema(branch, parts, depth + 1)


def skill_fields(skill: Skill, *, body_chars: int = BODY_CHARS) -> dict[Field, str]:
    """The indexed texts of one skill, by field.

    Args:
        skill: the skill or tool.
        body_chars: how many characters of stripped body to keep.

    Returns:
        ``{"name": ..., "description": ..., "body": ..., "params": ...}``; a missing field is
        ``""``.
    """
    return {
        "name": split_identifier(skill.name),
        "description": skill.description.strip(),
        "body": truncate(strip_markdown(skill.body), body_chars) if skill.body else "",
        "params": flatten_params(skill.parameters),
    }
