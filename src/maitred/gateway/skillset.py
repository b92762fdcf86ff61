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
:class:`~maitred.gateway.surfaces.Surface` of the family ``skills`` in the gateway's
:class:`~maitred.gateway.surfaces.SurfaceGate`, keyed by the URI of its ``SKILL.md``, and
governs every file under its folder's URI. So the one kernel decides all of it, per session,
on state read afresh:

* ``skills/list`` shows only the skills whose contract is executable for the caller's account
  now (what it showed is remembered like a resource listing, and the state watch and a write
  re-decide it: a change is announced as ``notifications/resources/list_changed``, since the
  extension has no list notification of its own);
* ``skills/get`` is decided and written to the decision log as an action decision
  (``skills/get {"uri": ...}``), flushed before it is answered; a refused one is ``-32602``
  with the one model-facing :class:`~maitred.actions.model.Rejection` as ``data``
  (``SKILL_NOT_AVAILABLE``), which names nothing the session was not shown: a skill it never
  listed is refused exactly as a URI that is no skill at all (both logged, both with a
  decision id), and only a skill it was shown gets the predicates' reason;
* ``resources/list`` and ``resources/read`` of a skill's files follow its contract through the
  surfaces' middleware, so a hidden skill cannot be read file by file either.

Results carry ``cacheScope: "private"`` and ``ttlMs: 0``: they depend on who asks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio
import mcp_types as mt  # the MCP wire types (`mcp.types` re-exports them)
from fastmcp.server.extensions import MethodBinding, ServerExtension
from fastmcp.skills import GetSkillResult, ListSkillsResult, MCPSkill
from fastmcp.skills import Skill as SkillFiles
from fastmcp.skills.models import GetSkillParams, ListSkillsParams
from fastmcp.skills.provider import SkillCatalogProvider
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from maitred.actions.model import Rejection, ToolCall, new_call_id
from maitred.contract.sidecar import SIDECAR
from maitred.errors import ConfigError, MaitredError
from maitred.gateway.config import GatewayConfig
from maitred.gateway.keeper import Gatekeeper
from maitred.gateway.metrics import GatewayMetrics
from maitred.gateway.surfaces import Surface, SurfaceGuard
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
    """

    uri: str
    skill: Skill
    entry: MCPSkill


@dataclass(frozen=True)
class SkillSet:
    """The skill folders of a gateway config, loaded once at start.

    Attributes:
        skills: each served skill, by the URI of its ``SKILL.md``, in URI order.
        provider: serves their files as ``skill://`` resources (FastMCP's own provider).
    """

    skills: Mapping[str, ServedSkill]
    provider: SkillCatalogProvider

    @property
    def surfaces(self) -> tuple[Surface, ...]:
        """Each skill as a surface of the family ``skills`` (what the surfaces' gate decides)."""
        return tuple(
            Surface("skills", uri, f"skills folder {s.skill.path}", s.skill.contract)
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
        served[entry.uri] = ServedSkill(entry.uri, skill, entry)
        files[skill.name] = served_files
    ordered = {uri: served[uri] for uri in sorted(served)}
    return SkillSet(ordered, SkillCatalogProvider(files))


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

    surface_guard: SurfaceGuard | None
    metrics: GatewayMetrics

    def keeper_now(self) -> Gatekeeper | None:
        """The gatekeeper of the 2026-07-28 request being served (None: not authenticated)."""
        ...


_AUTH_REQUIRED = Rejection(
    "AUTH_REQUIRED",
    "this gateway serves authenticated sessions only; connect with the bearer token you were "
    "given. Nothing was read",
    error="auth_required",
)


class GatedSkills(ServerExtension):
    """``skills/list`` and ``skills/get`` for the gateway's own skills, each decided by the
    surfaces' gate for the caller (see the module docstring).

    Registered on the gateway's server after the skills' provider, it takes the place of the
    extension FastMCP's provider brings (which would answer without any gate).
    """

    identifier = SKILLS_EXTENSION

    def __init__(self, skills: SkillSet, serving: Serving) -> None:
        self.skills = skills
        self.serving = serving

    def methods(self) -> Sequence[MethodBinding]:
        modern = frozenset(MODERN_PROTOCOL_VERSIONS)
        return (
            MethodBinding("skills/list", ListSkillsParams, self.list_skills, modern),
            MethodBinding("skills/get", GetSkillParams, self.get_skill, modern),
        )

    def _caller(self) -> tuple[Gatekeeper, SurfaceGuard]:
        keeper = self.serving.keeper_now()
        guard = self.serving.surface_guard
        if keeper is None or guard is None:
            raise MCPError(mt.INVALID_REQUEST, _AUTH_REQUIRED.message, _AUTH_REQUIRED.to_json())
        return keeper, guard

    async def list_skills(
        self, ctx: ServerRequestContext[Any, Any], params: ListSkillsParams
    ) -> ListSkillsResult:
        """The skills the caller's account may use now, in URI order (one page)."""
        keeper, guard = self._caller()
        uris = list(self.skills.skills)
        shown = set(
            await anyio.to_thread.run_sync(
                lambda: guard.gate.visible(keeper.account, "skills", uris, keeper.granted)
            )
        )
        guard.view_of(keeper).remember("skills", uris, shown)
        entries = [self.skills.skills[u].entry for u in uris if u in shown]
        return ListSkillsResult(skills=entries)

    async def get_skill(
        self, ctx: ServerRequestContext[Any, Any], params: GetSkillParams
    ) -> GetSkillResult:
        """The entry of one skill, if the caller may use it now (a logged decision)."""
        keeper, guard = self._caller()
        uri = params.uri
        call = ToolCall("skills/get", {"uri": uri}, new_call_id())
        count = self.serving.metrics.surface_requests
        view = guard.views.get(keeper)
        try:
            decision = await anyio.to_thread.run_sync(
                lambda: guard.gate.check(keeper, "skills", uri, call, view)
            )
        except MaitredError as exc:  # not decided, or not durable: it must not be answered
            count.labels("skills/get", "GATE_UNAVAILABLE").inc()
            refusal = Rejection(
                "GATE_UNAVAILABLE",
                f"the gateway could not decide or record this request ({type(exc).__name__}: "
                f"{exc}); nothing was read. Try again later",
                error="gate_unavailable",
            )
            raise MCPError(mt.INTERNAL_ERROR, refusal.message, refusal.to_json()) from None
        count.labels("skills/get", decision.code if decision.reject else "ALLOWED").inc()
        if decision.reject:
            rejection = decision.rejection()
            raise MCPError(mt.INVALID_PARAMS, rejection.message, rejection.to_json())
        entry = self.skills.skills[uri].entry
        return GetSkillResult(skill=entry, _meta={"maitred/decision_id": decision.decision_id})


__all__ = ["SKILLS_EXTENSION", "GatedSkills", "ServedSkill", "SkillSet", "load_skills"]
