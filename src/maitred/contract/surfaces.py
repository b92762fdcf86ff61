"""What an MCP server offers besides tools, as contracts name it: the families of surfaces and
one sidecar entry (:class:`Surface`).

Data only: the verdicts over them are :mod:`maitred.gate.surfaces`'s, asked through a
:class:`~maitred.conversation.Conversation`; a front end builds these entries from its config
(an upstream's sidecar ``resources:`` / ``prompts:`` keys, a skill folder's ``maitred.yaml``)
and hands them to the engines that decide (:meth:`Engines.govern
<maitred.conversation.engines.Engines.govern>`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from maitred.contract.model import Contract

#: what a listing is of: concrete resources, resource templates, prompts, and the gateway's
#: own skills (keyed by the URI of their ``SKILL.md``)
Family = Literal["resources", "templates", "prompts", "skills"]
FAMILIES: tuple[Family, ...] = ("resources", "templates", "prompts", "skills")
#: what one item of each family is called, in messages
NOUN: Mapping[Family, str] = {
    "resources": "resource",
    "templates": "resource",
    "prompts": "prompt",
    "skills": "skill",
}


@dataclass(frozen=True)
class Surface:
    """One sidecar entry for something an upstream lists besides tools.

    Attributes:
        family: ``resources`` (one URI), ``templates`` (a URI template) or ``prompts``.
        key: the URI, URI template or prompt name, exactly as listed.
        upstream: the upstream whose sidecar declares it.
        contract: its contract (exit predicates).
        files: for a skill the gateway serves itself (family ``skills``): the paths of its
            files inside its folder, as its manifest lists them.
    """

    family: Family
    key: str
    upstream: str
    contract: Contract
    files: frozenset[str] = frozenset()

    def describe(self) -> str:
        if self.family == "skills":
            return f"skill {self.key!r} ({self.upstream})"
        noun = {"resources": "resource", "templates": "template", "prompts": "prompt"}
        return f"{noun[self.family]} {self.key!r} (upstream {self.upstream!r})"


__all__ = ["FAMILIES", "NOUN", "Family", "Surface"]
