"""The upstreams' tools as one catalog, each upstream's sidecar contracts and shadow rules
applied to its own tools.

The upstream's tools become a catalog in memory (:func:`catalog_from_tools`): the sidecar named
``time.maitred.yaml`` is read as the contracts of a tools file ``time.json`` beside it, so the
same reader, the same errors and the same contract model serve a tools file and an upstream.
Nothing here imports an MCP library.

**Names across upstreams.** Tools keep the names their upstream gives them (the names its
sidecar, its documentation and the model's prompts use); two upstreams listing the same name
is refused with a :class:`~maitred.errors.ConfigError` naming both, rather than renamed
silently, because a prefix would change what every sidecar, prompt and log row says.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from maitred.contract.tool_sidecar import (
    SUFFIX,
    SurfaceNames,
    ToolContracts,
    load_tool_contracts,
)
from maitred.conversation.finding import FIND_TOOLS
from maitred.errors import ConfigError
from maitred.gateway.config import GatewayConfig, Upstream
from maitred.skills.model import Catalog, Skill
from maitred.skills.tools import parse_tools


def catalog_from_tools(
    tools: Sequence[Mapping[str, Any]], upstream: Upstream, settings: Mapping[str, Any]
) -> Catalog:
    """The upstream's ``tools/list`` entries as a catalog, with the sidecar's contracts.

    A tool whose definition cannot be read is left out (so it is never listed and a call to it
    is ``TOOL_UNKNOWN``) and named on stderr.

    Raises:
        ContractError: the sidecar is invalid or names a tool the upstream does not list (the
            message names the sidecar file and the entry).
        ConfigError: the upstream lists no usable tool at all.
    """
    return _catalog_and_sidecar(tools, upstream, settings, None)[0]


def _catalog_and_sidecar(
    tools: Sequence[Mapping[str, Any]],
    upstream: Upstream,
    settings: Mapping[str, Any],
    listed: SurfaceNames | None,
) -> tuple[Catalog, ToolContracts]:
    """:func:`catalog_from_tools`, and the sidecar it read (its resources' and prompts'
    contracts too, checked against ``listed`` when given: the sidecar is read once)."""
    skills, report = parse_tools({"tools": list(tools)}, source=f"upstream {upstream.name!r}")
    # each tool's server is the upstream that lists it, for ``+servers`` recall in find_tools
    skills = tuple(s if s.server else replace(s, server=upstream.name) for s in skills)
    for problem in report.errors:
        print(f"maitred mcp: tool left out: {problem}", file=sys.stderr)
    if not skills:
        raise ConfigError(
            f"upstream {upstream.name!r} ({upstream.where}) lists no usable tool; check that "
            "it is the MCP server you meant"
        )
    found = ToolContracts({}, {}, {})
    if upstream.contracts:
        as_tools_file = Path(upstream.contracts[: -len(SUFFIX)] + ".json")
        found = load_tool_contracts(
            as_tools_file, [s.name for s in skills], settings, surfaces=listed
        )
        skills = tuple(
            replace(
                s,
                contract=found.contracts.get(s.name, s.contract),
                family=found.families.get(s.name, s.family),
            )
            for s in skills
        )
    return Catalog(tuple(skills)), found


def without_rules(catalog: Catalog, names: Sequence[str], source: str = "") -> Catalog:
    """``catalog`` without the exit predicates and call policies named ``names``.

    Raises:
        ConfigError: a name is no rule of the catalog (naming ``source`` and the known rules).
    """
    known = {p.name for s in catalog for p in s.contract.exit_predicates}
    known |= {p.name for s in catalog for p in s.contract.policies}
    unknown = sorted(set(names) - known)
    if unknown:
        raise ConfigError(
            f"{source}: field 'shadow' names {unknown}, which no tool's contract declares; "
            f"choose from {sorted(known)}"
        )
    drop = set(names)
    return Catalog(
        tuple(
            replace(
                s,
                contract=replace(
                    s.contract,
                    exit_predicates=tuple(
                        p for p in s.contract.exit_predicates if p.name not in drop
                    ),
                    policies=tuple(p for p in s.contract.policies if p.name not in drop),
                ),
            )
            for s in catalog
        )
    )


def join_upstreams(
    config: GatewayConfig,
    tools: Mapping[str, Sequence[Mapping[str, Any]]],
    listed: Mapping[str, SurfaceNames] | None = None,
) -> tuple[Catalog, Catalog, dict[str, str], dict[str, ToolContracts]]:
    """Every upstream's tools as one catalog with full contracts and one without the shadowed
    rules (each upstream's sidecar and shadow list applied to its own tools), the owner of
    each tool, and each upstream's sidecar as read; in the config's order, over the upstreams
    ``tools`` has a listing for."""
    full: list[Skill] = []
    enforced: list[Skill] = []
    owners: dict[str, str] = {}
    sidecars: dict[str, ToolContracts] = {}
    for i, up in enumerate(config.upstreams):
        if up.name not in tools:  # not serving (yet): its tools join when it answers
            continue
        catalog, sidecars[up.name] = _catalog_and_sidecar(
            tools[up.name],
            up,
            config.settings,
            None if listed is None else listed.get(up.name, SurfaceNames()),
        )
        for skill in catalog:
            if skill.name in owners:
                raise ConfigError(
                    f"{config.source}: upstreams {owners[skill.name]!r} and {up.name!r} both "
                    f"list a tool named {skill.name!r}; a client could not tell them apart. "
                    "Put them behind separate gateways, or rename the tool in one server"
                )
            if skill.name == FIND_TOOLS and config.disclosure == "find_tools":
                raise ConfigError(
                    f"{config.source}: upstream {up.name!r} lists a tool named {FIND_TOOLS!r}, "
                    "the name of the gateway's own tool with 'disclosure: find_tools'; use "
                    "'disclosure: all'"
                )
            if skill.name == config.find.call_tool and config.disclosure == "find_tools":
                raise ConfigError(
                    f"{config.source}: upstream {up.name!r} lists a tool named "
                    f"{skill.name!r}, the name of the gateway's own tool that runs a found "
                    "tool with 'disclosure: find_tools'; give the gateway's another name "
                    "(find: {call_tool: <name>})"
                )
            owners[skill.name] = up.name
        full += catalog.skills
        where = f"{config.source}: upstreams[{i}]"
        enforced += (without_rules(catalog, up.shadow, where) if up.shadow else catalog).skills
    return Catalog(tuple(full)), Catalog(tuple(enforced)), owners, sidecars
