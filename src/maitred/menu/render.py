"""Stage 4, the menu: render exposed skills in the form a model consumes, and price them.

Formats, registered by name in :data:`RENDERERS`:

* ``openai`` -- Chat Completions / Responses ``tools`` entries (``{"type": "function", ...}``);
* ``anthropic`` -- Messages API ``tools`` entries (``{"name", "description", "input_schema"}``);
* ``mcp`` -- MCP ``tools/list`` entries (``inputSchema`` and read-only/destructive hints);
* ``agentskills`` -- the Agent Skills metadata block a host puts in the system prompt (name,
  description and location of each SKILL.md; the body is loaded only on activation).

Each skill's entry and its token cost are computed once per catalog and cached, so rendering a
turn's menu is a lookup. Token counts use tiktoken ``o200k_base`` (:mod:`maitred.menu.tokens`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from html import escape
from typing import Any, Literal

from maitred.errors import ConfigError
from maitred.menu.tokens import count_tokens_memo
from maitred.skills.model import Catalog, Skill

Format = Literal["openai", "anthropic", "mcp", "agentskills"]
_EMPTY_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}


def _schema(skill: Skill) -> dict[str, Any]:
    return dict(skill.parameters) if skill.parameters else dict(_EMPTY_SCHEMA)


def _openai(skill: Skill) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": skill.name,
            "description": skill.description,
            "parameters": _schema(skill),
        },
    }


def _anthropic(skill: Skill) -> dict[str, Any]:
    return {"name": skill.name, "description": skill.description, "input_schema": _schema(skill)}


def _mcp(skill: Skill) -> dict[str, Any]:
    return {
        "name": skill.name,
        "description": skill.description,
        "inputSchema": _schema(skill),
        "annotations": {
            "readOnlyHint": not skill.contract.mutates,
            "destructiveHint": skill.contract.mutates,
        },
    }


def _agentskills(skill: Skill) -> str:
    location = f"{skill.path}/SKILL.md" if skill.kind == "skill" and skill.path else skill.path
    return (
        "<skill>\n"
        f"<name>{escape(skill.name)}</name>\n"
        f"<description>{escape(skill.description)}</description>\n"
        f"<location>{escape(location)}</location>\n"
        "</skill>"
    )


RENDERERS: dict[str, Callable[[Skill], Any]] = {
    "agentskills": _agentskills,
    "anthropic": _anthropic,
    "mcp": _mcp,
    "openai": _openai,
}


def _entry_text(entry: Any) -> str:
    if isinstance(entry, str):
        return entry
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Menu:
    """A rendered menu.

    Attributes:
        format: the renderer used.
        skills: the exposed skills, in order.
        entries: one rendered entry per skill (dicts for tool formats, text for agentskills).
        tokens: total o200k_base tokens of the entries.
        per_skill: skill -> tokens of its entry.
    """

    format: str
    skills: tuple[str, ...]
    entries: tuple[Any, ...]
    tokens: int
    per_skill: Mapping[str, int]

    def payload(self) -> Any:
        """What to hand the model: a list of tool objects, or the skills block as text."""
        if self.format == "agentskills":
            return "<available_skills>\n" + "\n".join(self.entries) + "\n</available_skills>"
        return list(self.entries)


class MenuRenderer:
    """Renders menus for one catalog in one format, with per-skill entries and costs cached."""

    def __init__(self, catalog: Catalog, fmt: str = "openai") -> None:
        if fmt not in RENDERERS:
            raise ConfigError(f"unknown menu format {fmt!r}; choose one of {sorted(RENDERERS)}")
        self.catalog = catalog
        self.format = fmt
        self._render = RENDERERS[fmt]
        self._cache: dict[str, tuple[Any, int]] = {}

    def entry(self, name: str) -> tuple[Any, int]:
        """(rendered entry, tokens) for one skill."""
        hit = self._cache.get(name)
        if hit is None:
            entry = self._render(self.catalog[name])
            hit = (entry, count_tokens_memo(_entry_text(entry)))
            self._cache[name] = hit
        return hit

    def tokens(self, name: str) -> int:
        """The description tokens one skill costs in this format."""
        return self.entry(name)[1]

    def total_tokens(self) -> int:
        """Tokens of the whole catalog: the cost of exposing every skill to every message."""
        return sum(self.tokens(s.name) for s in self.catalog)

    def render(self, names: Iterable[str]) -> Menu:
        """The menu for ``names``, in order."""
        skills = tuple(names)
        pairs = [self.entry(n) for n in skills]
        per_skill = {n: t for n, (_, t) in zip(skills, pairs, strict=True)}
        return Menu(
            self.format, skills, tuple(e for e, _ in pairs), sum(per_skill.values()), per_skill
        )
