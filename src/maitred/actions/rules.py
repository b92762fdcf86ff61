"""The action gate's rulebook: the tools it knows and the call policies attached to each.

A :class:`Rulebook` is built from a catalog (:meth:`Rulebook.from_catalog`): every entry, its
argument schema and its contract (``mutates``, exit predicates, call policies, records). The
policy predicates themselves -- named, versioned rules over ``args.*``, ``state.*`` and
``session.*`` -- are part of the contract model (:mod:`maitred.contract.policy`); they are
re-exported here because rule packs write them.

Every predicate on a *mutating* tool must fail closed (``on_missing`` and ``on_stale`` are
``"block"``): a rulebook refuses anything else, so a silent wrong state cannot come from a
missing key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from maitred._canonical import content_hash
from maitred.contract.policy import (
    ROOTS,
    PolicyPredicate,
    Rule,
    Violation,
    cel_rule,
    policy_rule,
)
from maitred.contract.predicate import Predicate
from maitred.errors import ContractError
from maitred.skills.model import Catalog, Skill


@dataclass(frozen=True)
class Tracking:
    """How a session learns what was read: read tool -> id argument; creating tool ->
    (read tool it counts as, result key holding the new record's id). Derived from the tools'
    :class:`~maitred.contract.model.Records` by :meth:`Rulebook.from_catalog`."""

    reads: Mapping[str, str] = field(default_factory=dict)
    creates: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, tools: Iterable[Skill]) -> Tracking:
        """The tracking the tools' contracts declare."""
        reads: dict[str, str] = {}
        creates: dict[str, tuple[str, str]] = {}
        for tool in tools:
            if tool.contract.records.reads:
                reads[tool.name] = tool.contract.records.reads
            if tool.contract.records.creates:
                creates[tool.name] = tool.contract.records.creates
        return cls(reads, creates)


@dataclass(frozen=True)
class ToolRules:
    """One tool (a catalog entry, with its contract) and the policy predicates attached to it,
    in evaluation order."""

    tool: Skill
    predicates: tuple[PolicyPredicate, ...] = ()

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def mutates(self) -> bool:
        return self.tool.contract.mutates

    @property
    def exit_predicates(self) -> tuple[Predicate, ...]:
        return self.tool.contract.exit_predicates

    @property
    def schema(self) -> Mapping[str, Any] | None:
        """The tool's JSON schema of its arguments, if it declared one."""
        return self.tool.parameters

    @property
    def required(self) -> tuple[str, ...]:
        """The arguments the schema marks required."""
        required = (self.tool.parameters or {}).get("required") or ()
        return tuple(str(r) for r in required)


@dataclass(frozen=True)
class Rulebook:
    """The tools an action gate knows and the policy predicates attached to each.

    Built from a catalog (:meth:`from_catalog`: each tool's contract carries its policies), or
    from tools and free-standing predicates that name their tools (:meth:`build`).

    Attributes:
        name: the rulebook's name (``tau2-airline``, or the catalog's).
        tools: tool name -> :class:`ToolRules`.
        tracking: what sessions record (see :class:`Tracking`).
        settings: the settings the rules were built with (``now`` ...).
        version: content hash of every tool's schema and every predicate's name, code and
            version, and the settings.
    """

    name: str
    tools: Mapping[str, ToolRules]
    tracking: Tracking = field(default_factory=Tracking)
    settings: Mapping[str, Any] = field(default_factory=dict)
    version: str = ""

    @classmethod
    def from_catalog(
        cls,
        catalog: Catalog,
        name: str = "",
        settings: Mapping[str, Any] | None = None,
    ) -> Rulebook:
        """Every entry of ``catalog`` with the policies its contract declares."""
        label = name or f"catalog-{catalog.version[:12]}"
        attached = {s.name: list(s.contract.policies) for s in catalog}
        return cls._assemble(label, list(catalog), attached, Tracking.of(catalog), settings)

    @classmethod
    def build(
        cls,
        name: str,
        tools: Iterable[Skill],
        predicates: Iterable[PolicyPredicate],
        tracking: Tracking | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> Rulebook:
        """Attach each predicate to the tools it names (plus what the tools' contracts hold)."""
        listed = list(tools)
        by_tool = {t.name: t for t in listed}
        attached = {t.name: list(t.contract.policies) for t in listed}
        for pred in predicates:
            if not pred.tools:
                raise ContractError(f"rulebook {name!r}: predicate {pred.name!r} names no tools")
            for tool in pred.tools:
                if tool not in by_tool:
                    raise ContractError(
                        f"rulebook {name!r}: predicate {pred.name!r} names tool {tool!r}, which "
                        f"the rulebook does not declare; choose one of {sorted(by_tool)}"
                    )
                attached[tool].append(pred)
        return cls._assemble(name, listed, attached, tracking or Tracking.of(listed), settings)

    @classmethod
    def _assemble(
        cls,
        name: str,
        tools: list[Skill],
        attached: Mapping[str, list[PolicyPredicate]],
        tracking: Tracking,
        settings: Mapping[str, Any] | None,
    ) -> Rulebook:
        """Refuse fail-open rules on writes, then freeze the rulebook and its version."""
        for tool in tools:
            for pred in attached[tool.name]:
                if tool.contract.mutates and "offer" in (
                    pred.predicate.on_missing,
                    pred.predicate.on_stale,
                ):
                    raise ContractError(
                        f"rulebook {name!r}: predicate {pred.name!r} fails open on the mutating "
                        f"tool {tool.name!r}; mutating calls fail closed: set on_missing and "
                        "on_stale to 'block'"
                    )
        table = {t.name: ToolRules(t, tuple(attached[t.name])) for t in tools}
        signature: list[Any] = [
            [t, table[t].mutates, table[t].schema, p.name, p.code, p.version]
            for t in sorted(table)
            for p in table[t].predicates
        ]
        signature.append(sorted([t, table[t].mutates, table[t].schema] for t in table))
        signature.append(dict(settings or {}))
        return cls(name, table, tracking, dict(settings or {}), content_hash(signature))

    def with_exit_predicates(self, tool: str, predicates: Iterable[Predicate]) -> Rulebook:
        """A copy in which ``tool`` also re-checks these executability predicates per call."""
        if tool not in self.tools:
            raise ContractError(
                f"rulebook {self.name!r} has no tool {tool!r}; choose one of {sorted(self.tools)}"
            )
        current = self.tools[tool]
        contract = replace(current.tool.contract, exit_predicates=tuple(predicates))
        entry = replace(current, tool=replace(current.tool, contract=contract))
        return replace(self, tools={**self.tools, tool: entry})


__all__ = [
    "ROOTS",
    "PolicyPredicate",
    "Rule",
    "Rulebook",
    "ToolRules",
    "Tracking",
    "Violation",
    "cel_rule",
    "policy_rule",
]
