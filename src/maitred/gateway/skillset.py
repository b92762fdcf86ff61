"""Agent Skills served over MCP by the gateway itself, gated like its tools.

The skills extension (``io.modelcontextprotocol/skills``, SEP-2640) lets a server publish
Agent Skills folders beside its tools: each file of a skill is a resource under ``skill://``
(``skill://pdf-processing/SKILL.md``, ``skill://pdf-processing/references/FORMS.md``), read with
``resources/read``; ``skills/list`` enumerates the skills, each as an entry carrying its
``SKILL.md`` frontmatter verbatim and a manifest of its files (URI, SHA-256 digest, size); and
``skills/get`` returns one entry by the URI of its ``SKILL.md`` (``-32602`` for a URI that is
no skill the server serves). The two methods exist on 2026-07-28 connections only; to a
handshake-era client the files are ordinary resources.

``skills:`` in the gateway config names the folders to serve (a skill folder, or a folder of
them), read as maitred reads any skill folder (:mod:`maitred.skills.agentskills`): the
``maitred.yaml`` beside a ``SKILL.md`` is the skill's contract, its exit predicates over the
account's state the same as a tool's. The sidecar is maitred's, not the skill's: it is not
served, nor in the manifest.

**One mechanism with resources and prompts.** Each skill becomes a
:class:`~maitred.contract.surfaces.Surface` of the family ``skills`` that the gateway's
engines govern (:meth:`Engines.govern <maitred.conversation.engines.Engines.govern>`), keyed
by the URI of its ``SKILL.md``, and governs every file under its folder's URI. So the one
kernel decides all of it, per session, on state read afresh, asked of the caller's
:class:`~maitred.conversation.Conversation`:

* ``skills/list`` offers only the skills whose contract is executable for the caller's account
  now (:meth:`Conversation.offer <maitred.conversation.Conversation.offer>`; what it offered is
  remembered like a resource listing, and the state watch and a write
  re-decide it: a change is announced as ``notifications/resources/list_changed``, since the
  extension has no list notification of its own);
* ``skills/get`` is decided and written to the decision log as an action decision
  (``skills/get {"uri": ...}``, :meth:`Conversation.read
  <maitred.conversation.Conversation.read>`), flushed before it is answered; a refused one is
  ``-32602`` with the one model-facing :class:`~maitred.actions.refusals.Rejection` as ``data``
  (``SKILL_NOT_AVAILABLE``), which names nothing the session was not shown: a skill it never
  listed is refused exactly as a URI that is no skill at all (both logged, both with a
  decision id), and only a skill it was shown gets the predicates' reason;
* ``resources/list`` and ``resources/read`` of a skill's files follow its contract through the
  surfaces' middleware, so a hidden skill cannot be read file by file either.

**Served by what was decided.** A read of a ``skill://`` URI is resolved to the file it names
by the core's :meth:`SkillIndex.resolve <maitred.gate.uris.SkillIndex.resolve>` (percent-
decoding, ``%2F`` included, dot segments, repeated slashes, the scheme's case): the surfaces'
gate decides and logs the read on that file, and this module's provider
(:class:`ServedSkillFiles`) serves the file by that same resolution, never by FastMCP's own
lookup of the URI as written. ``skill://%69nternal-comms/SKILL.md`` is
``skill://internal-comms/SKILL.md`` to both, and a URI under a skill's folder that names none
of its files is refused like an unknown resource. ``skills/get`` is decided and answered on
the canonical URI too.

**An upstream's skills pass through, gated by its sidecar.** An upstream skill is served when
the upstream's sidecar gives its ``SKILL.md`` a ``resources`` entry (``skill://guide/SKILL.md:
{exit_predicates: [...]}``; ``{}``: reviewed, always shown): that entry is the skill's contract
in ``skills/list`` and ``skills/get`` (both asked of the upstreams that have such entries, on a
connection that declares the extension) and governs every file under its folder. An upstream
skill no entry names is left out of ``skills/list`` and refused by ``skills/get`` (skills are a
higher-risk surface than tools, so they fail closed), while its files follow ``ungated`` like
any resource. Two sources serving one URI: the gateway's own skill wins, then the upstream
first in the config.

Results carry ``cacheScope: "private"`` and ``ttlMs: 0``: they depend on who asks.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio
import mcp_types as mt  # the MCP wire types (`mcp.types` re-exports them)
from fastmcp.resources import Resource
from fastmcp.server.extensions import MethodBinding, ServerExtension
from fastmcp.skills import GetSkillResult, ListSkillsResult, MCPSkill, SkillsClientExtension
from fastmcp.skills import Skill as SkillFiles
from fastmcp.skills.models import (
    GetSkillParams,
    GetSkillRequest,
    ListSkillsParams,
    ListSkillsRequest,
)
from fastmcp.skills.provider import (
    SkillCatalogProvider,
    SkillFileResource,
    SkillManifestResource,
)
from fastmcp.utilities.versions import VersionSpec
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from maitred.actions.model import ToolCall, new_call_id
from maitred.actions.refusals import GATE_UNAVAILABLE, NOTHING_READ, auth_required, gate_unavailable
from maitred.contract.sidecar import SIDECAR
from maitred.contract.surfaces import Surface
from maitred.conversation import Conversation
from maitred.errors import ConfigError, MaitredError
from maitred.gate.uris import MANIFEST, SkillIndex, canonical_uri
from maitred.gateway.config import GatewayConfig
from maitred.gateway.metrics import GatewayMetrics
from maitred.gateway.traces import client_trace_id
from maitred.gateway.upstreams import ListingProxy, declaring
from maitred.skills.catalog import load_catalog_report
from maitred.skills.model import Skill

#: the skills extension's identifier (SEP-2640)
SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
_SKIPPED = frozenset({"__pycache__", "node_modules"})


@dataclass(frozen=True)
class ServedSkill:
    """One skill the gateway serves.

    Attributes:
        uri: the URI of its ``SKILL.md`` (``skill://<name>/SKILL.md``): its key everywhere.
        skill: the skill as maitred read it, with its contract.
        entry: its skills-extension entry (frontmatter and file manifest).
        files: the paths of its files inside its folder, as the manifest lists them.
    """

    uri: str
    skill: Skill
    entry: MCPSkill
    files: frozenset[str] = frozenset()


class ServedSkillFiles(SkillCatalogProvider):
    """FastMCP's skill provider (it lists the files as ``skill://`` resources), but a read
    is served by the file the core resolves the URI to (:class:`~maitred.gate.uris.SkillIndex`,
    the resolution the surfaces' gate decides on), never by FastMCP's lookup of the URI as
    written.

    Args:
        skills: each skill's files, by the skill's path (its name).
        index: the same skills' files, to resolve a read by.
    """

    def __init__(self, skills: Mapping[str, SkillFiles], index: SkillIndex) -> None:
        super().__init__(skills)
        self.index = index

    async def _get_resource(self, uri: str, version: VersionSpec | None = None) -> Resource | None:
        found = self.index.resolve(uri)
        if found is None:
            return None
        resource = await super()._get_resource(found.uri, version)  # built for that file
        if isinstance(resource, SkillFileResource):
            same = (resource.skill_path, resource.file_path) == (found.skill, found.path)
        else:
            same = isinstance(resource, SkillManifestResource) and found.path == MANIFEST
        return resource if same else None


@dataclass(frozen=True)
class SkillSet:
    """The skill folders of a gateway config, loaded once at start.

    Attributes:
        skills: each served skill, by the canonical URI of its ``SKILL.md``, in URI order.
        provider: serves their files as ``skill://`` resources.
    """

    skills: Mapping[str, ServedSkill]
    provider: ServedSkillFiles

    @property
    def surfaces(self) -> tuple[Surface, ...]:
        """Each skill as a surface of the family ``skills`` (what the surfaces' gate decides),
        with its files (what it resolves a read to)."""
        return tuple(
            Surface(
                "skills",
                uri,
                f"skills folder {s.skill.path}",
                s.skill.contract,
                s.files,
            )
            for uri, s in self.skills.items()
        )


def load_skills(config: GatewayConfig) -> SkillSet | None:
    """The skills ``config.skills`` names (``None`` when it names none).

    Raises:
        ConfigError: a folder holds no skill, a skill cannot be loaded (its ``SKILL.md`` or
            ``maitred.yaml`` is broken; each problem named with its file and line), two skills
            share a name, or a skill breaks the extension's rules (a name that is not its
            folder's, more than 512 files or 16 MiB).
    """
    if not config.skills:
        return None
    catalog, report = load_catalog_report(list(config.skills))
    if not report.ok or catalog is None:
        said = "; ".join(f"{p.where}: {p.message}" for p in report.errors)
        raise ConfigError(f"{config.source}: field 'skills': {said}")
    served: dict[str, ServedSkill] = {}
    files: dict[str, SkillFiles] = {}
    for skill in catalog:
        if skill.kind != "skill":
            raise ConfigError(
                f"{config.source}: field 'skills': {skill.path} is a tool, not a skill folder; "
                "upstream servers serve tools"
            )
        try:
            served_files = SkillFiles.from_files(_files(Path(skill.path)))
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"{config.source}: field 'skills': {skill.path} cannot be served over MCP: "
                f"{str(exc).splitlines()[0]}"
            ) from None
        entry = served_files.manifest.to_mcp_skill()
        uri = canonical_uri(entry.uri)
        served[uri] = ServedSkill(uri, skill, entry, frozenset(served_files.manifest.files))
        files[skill.name] = served_files
    ordered = {uri: served[uri] for uri in sorted(served)}
    index = SkillIndex({name: f.manifest.files for name, f in files.items()})
    return SkillSet(ordered, ServedSkillFiles(files, index))


def _files(folder: Path) -> dict[str, bytes]:
    """Every file of a skill folder by its relative path, but maitred's own sidecar: hidden
    files and folders, caches and symlinks are left out (nothing outside the folder)."""
    found: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".") and d not in _SKIPPED and not (Path(dirpath) / d).is_symlink()
        )
        here = Path(dirpath)
        for name in sorted(filenames):
            path = here / name
            relative = path.relative_to(folder).as_posix()
            if name.startswith(".") or path.is_symlink() or relative == SIDECAR:
                continue
            found[relative] = path.read_bytes()
    return found


class Serving(Protocol):
    """What :class:`GatedSkills` needs of the gateway's middleware."""

    metrics: GatewayMetrics

    def keeper_now(self) -> Conversation | None:
        """The conversation of the 2026-07-28 request being served (None: not
        authenticated)."""
        ...


class GatedSkills(ServerExtension):
    """``skills/list`` and ``skills/get`` for the gateway's own skills, each decided by the
    caller's conversation (see the module docstring).

    Registered on the gateway's server after the skills' provider, it takes the place of the
    extension FastMCP's provider brings (which would answer without any gate).

    Args:
        skills: the gateway's own skills (``None``: it serves none, only upstreams' skills).
        serving: the gateway's middleware (the caller's conversation).
        upstreams: the upstreams served now, by name (the passthrough's live mapping).
    """

    identifier = SKILLS_EXTENSION

    def __init__(
        self,
        skills: SkillSet | None,
        serving: Serving,
        upstreams: Mapping[str, ListingProxy] | None = None,
    ) -> None:
        self.local = dict(skills.skills) if skills is not None else {}
        self.serving = serving
        self.upstreams = upstreams or {}

    def methods(self) -> Sequence[MethodBinding]:
        modern = frozenset(MODERN_PROTOCOL_VERSIONS)
        return (
            MethodBinding("skills/list", ListSkillsParams, self.list_skills, modern),
            MethodBinding("skills/get", GetSkillParams, self.get_skill, modern),
        )

    def _caller(self) -> Conversation:
        keeper = self.serving.keeper_now()
        if keeper is None:
            refusal = auth_required(NOTHING_READ)
            raise MCPError(mt.INVALID_REQUEST, refusal.message, refusal.to_json())
        return keeper

    def _skilled(self, keeper: Conversation) -> list[ListingProxy]:
        """The upstreams whose sidecar gives some skill an entry, in the config's order."""
        named = keeper.engines.skill_upstreams
        return [p for name, p in self.upstreams.items() if name in named]

    async def list_skills(
        self, ctx: ServerRequestContext[Any, Any], params: ListSkillsParams
    ) -> ListSkillsResult:
        """The skills the caller's account may use now: the gateway's own in URI order, then
        each upstream's (one page)."""
        keeper = self._caller()
        entries = {uri: s.entry for uri, s in self.local.items()}
        for proxy in self._skilled(keeper):
            for entry in await _listed(proxy):
                entries.setdefault(entry.uri, entry)
        uris = list(entries)
        offered = set(await anyio.to_thread.run_sync(lambda: keeper.offer("skills", uris)))
        return ListSkillsResult(skills=[entries[u] for u in uris if u in offered])

    async def get_skill(
        self, ctx: ServerRequestContext[Any, Any], params: GetSkillParams
    ) -> GetSkillResult:
        """The entry of one skill, if the caller may use it now (a logged decision on the
        canonical form of its URI, the one it is answered for)."""
        keeper = self._caller()
        uri = params.uri
        canonical = canonical_uri(uri)  # what the decision is made on, and answered for
        call = ToolCall("skills/get", {"uri": uri}, new_call_id())
        count = self.serving.metrics.surface_requests
        era = str(ctx.protocol_version or "")
        trace_id = client_trace_id(ctx)
        try:
            decision = await anyio.to_thread.run_sync(
                lambda: keeper.read("skills", uri, call, era=era, trace_id=trace_id)
            )
        except MaitredError as exc:  # not decided, or not durable: it must not be answered
            count.labels("skills/get", GATE_UNAVAILABLE).inc()
            refusal = gate_unavailable(
                exc,
                what="the gateway could not decide or record this request",
                undone=NOTHING_READ,
            )
            raise MCPError(mt.INTERNAL_ERROR, refusal.message, refusal.to_json()) from None
        count.labels("skills/get", decision.code if decision.reject else "ALLOWED").inc()
        if decision.reject:
            rejection = decision.rejection()
            raise MCPError(mt.INVALID_PARAMS, rejection.message, rejection.to_json())
        served = self.local.get(canonical)
        entry = served.entry if served is not None else None
        for proxy in [] if entry is not None else self._skilled(keeper):
            entry = await _got(proxy, canonical)
            if entry is not None:
                break
        if entry is None:  # governed, but no upstream serves it: as an upstream would answer
            raise MCPError(mt.INVALID_PARAMS, "no skill is served at that URI")
        return GetSkillResult(skill=entry, _meta={"maitred/decision_id": decision.decision_id})


_PAGES = 100  # the most pages of one upstream's skills/list read


async def _listed(proxy: ListingProxy) -> list[MCPSkill]:
    """``proxy``'s upstream's skills (every page); none when it cannot say (named on stderr:
    one upstream that fails must not fail the listing)."""
    found: list[MCPSkill] = []
    try:
        async with declaring(proxy, SkillsClientExtension())() as client:
            cursor: str | None = None
            for _ in range(_PAGES):
                request = ListSkillsRequest(params=ListSkillsParams(cursor=cursor))
                page = await client.session.send_request(request, ListSkillsResult)
                found.extend(page.skills)
                cursor = page.next_cursor
                if cursor is None:
                    break
    except Exception as exc:
        if not (isinstance(exc, MCPError) and exc.error.code == mt.METHOD_NOT_FOUND):
            print(
                f"maitred mcp: upstream {proxy.upstream!r} did not list its skills "
                f"({type(exc).__name__}: {exc}); they are left out of this skills/list",
                file=sys.stderr,
                flush=True,
            )
    return found


async def _got(proxy: ListingProxy, uri: str) -> MCPSkill | None:
    """``proxy``'s upstream's entry for ``uri`` (None: it serves no such skill)."""
    try:
        async with declaring(proxy, SkillsClientExtension())() as client:
            request = GetSkillRequest(params=GetSkillParams(uri=uri))
            answer = await client.session.send_request(request, GetSkillResult)
    except MCPError as exc:
        if exc.error.code in (mt.INVALID_PARAMS, mt.METHOD_NOT_FOUND):
            return None
        raise
    skill: MCPSkill = answer.skill
    return skill


__all__ = ["SKILLS_EXTENSION", "GatedSkills", "ServedSkill", "SkillSet", "load_skills"]
