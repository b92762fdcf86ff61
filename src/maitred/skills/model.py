"""The skill and tool model, and the catalog that holds them.

A :class:`Skill` is one routable unit: an Agent Skills folder (``kind="skill"``) or a tool
definition (``kind="tool"``: MCP ``tools/list`` entry, OpenAI/Anthropic function). Both carry a
name, a description, the texts recall indexes, and maitred's :class:`~maitred.contract.Contract`.

A :class:`Catalog` is an immutable, name-keyed collection with a content hash (its version):
any change to a skill's text, parameters or contract changes the version, which is how persisted
indexes and decision logs know what they were built from.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from maitred._canonical import content_hash
from maitred.contract.model import Contract

Kind = Literal["skill", "tool"]


@dataclass(frozen=True)
class Skill:
    """One skill or tool.

    Attributes:
        name: unique name (for skills: 1-64 lowercase letters, digits, single hyphens).
        description: what it does and when to use it (1-1024 characters for skills).
        kind: ``"skill"`` or ``"tool"``.
        body: the SKILL.md markdown body, or a tool's long description.
        parameters: JSON schema of the arguments (tools), if any.
        path: where it came from (folder, or file#line for tools).
        family: the group it belongs to (parent folder or ``metadata.family``), if any.
        license, compatibility, metadata, allowed_tools: Agent Skills frontmatter fields.
        resources: relative paths of files under ``scripts/``, ``references/``, ``assets/``.
        contract: maitred's contract (cost, mutates, exit predicates, procedure).
        server: the MCP server a tool comes from (a tools file's ``server`` key), if known;
            ``+servers`` recall (:mod:`maitred.recall.servers`) reads it.
    """

    name: str
    description: str
    kind: Kind = "skill"
    body: str = ""
    parameters: Mapping[str, Any] | None = None
    path: str = ""
    family: str | None = None
    license: str | None = None
    compatibility: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    allowed_tools: str | None = None
    resources: tuple[str, ...] = ()
    contract: Contract = field(default_factory=Contract)
    server: str | None = None

    def fingerprint(self) -> dict[str, Any]:
        """Everything that defines the skill, as JSON (feeds the catalog version)."""
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "kind": self.kind,
            "body": self.body,
            "parameters": self.parameters,
            "family": self.family,
            "license": self.license,
            "compatibility": self.compatibility,
            "metadata": dict(self.metadata),
            "allowed_tools": self.allowed_tools,
            "cost": self.contract.cost,
            "mutates": self.contract.mutates,
            "predicates": [[p.name, p.version] for p in self.contract.exit_predicates],
        }
        if self.contract.policies:  # only when present, so catalogs without them keep versions
            out["policies"] = [[p.name, p.code, p.version] for p in self.contract.policies]
        if self.contract.scopes:  # likewise
            out["scopes"] = sorted(self.contract.scopes)
        if self.server:  # likewise
            out["server"] = self.server
        return out


@dataclass(frozen=True)
class Catalog:
    """An immutable collection of skills and tools with a content-hash version."""

    skills: tuple[Skill, ...]
    version: str = ""
    _by_name: Mapping[str, Skill] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name: dict[str, Skill] = {}
        for skill in self.skills:
            if skill.name in by_name:
                from maitred.errors import DuplicateSkillError

                raise DuplicateSkillError(skill.name, [by_name[skill.name].path, skill.path])
            by_name[skill.name] = skill
        object.__setattr__(self, "_by_name", by_name)
        if not self.version:
            object.__setattr__(
                self,
                "version",
                content_hash(
                    sorted((s.fingerprint() for s in self.skills), key=lambda f: f["name"])
                ),
            )

    def __len__(self) -> int:
        return len(self.skills)

    def __iter__(self) -> Iterator[Skill]:
        return iter(self.skills)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> Skill:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no skill named {name!r} in the catalog") from None

    def get(self, name: str) -> Skill | None:
        return self._by_name.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def families(self) -> dict[str, tuple[str, ...]]:
        """family -> member skill names (skills without a family are left out)."""
        out: dict[str, list[str]] = {}
        for s in self.skills:
            if s.family:
                out.setdefault(s.family, []).append(s.name)
        return {k: tuple(v) for k, v in out.items()}
