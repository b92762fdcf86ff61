"""Resources, resource templates and prompts, gated by the same contracts as tools.

A tool hidden from a session must not be reachable another way: as a resource the model
reads, or through a prompt. So an upstream's sidecar may give its resources (by URI or URI
template) and prompts (by name) a contract, under the top-level keys ``resources`` and
``prompts`` (:mod:`maitred.contract.tool_sidecar`) -- a contract body like a tool's, with the
keys that mean something for a read rather than a call (exit predicates)::

    resources:
      docs://pricing:                  # one resource, by its URI
        exit_predicates:
          - {name: free_plan, expr: account.plan == "free", reads: [account.plan]}
      reports://{year}:                # a template: governs every URI it matches
        exit_predicates: [...]
    prompts:
      negotiate:
        exit_predicates: [...]

**Which contract governs what** (:meth:`SurfaceGate.governing`). A listed template: the entry
of its exact ``uriTemplate``. A prompt: the entry of its name. A concrete resource URI, listed
or read: the entry of that URI if there is one, else *every* template entry whose template
matches it (FastMCP's own matcher, the one that routes the read) -- all must pass, so reading a
URI under a hidden template is refused like the template. Nothing governs it: it is *ungated*,
and the config's ``ungated`` decides: ``pass`` (the default; such resources and prompts are
named on stderr at start) or ``hide``.

**The same promise as tools.** Visible means the decision kernel
(:func:`~maitred.contract.kernel.decide_exit`, the one function behind the tools' listing and
call checks) finds every governing contract executable on one state read for the session's
account, through stage 2's read (:func:`~maitred.gate.executability.fetch_keys`: a store that is
down hides everything that reads it, fail closed). ``resources/list``,
``resources/templates/list`` and ``prompts/list`` are filtered per session on state read
afresh; every ``resources/read`` and ``prompts/get`` is decided on fresh state, whatever any
listing showed, and written to the decision log as an action decision (its ``call`` is the MCP
method with its params: ``resources/read {"uri": ...}``, ``prompts/get {"name": ...,
"arguments": ...}``) and flushed before the upstream is asked. An allowed one is forwarded and
its result carries the decision id in ``_meta["maitred/decision_id"]``. A refused one never
reaches the upstream: the client gets an MCP error (``-32602``, the code of an unknown
resource) whose ``data`` is the one model-facing :class:`~maitred.actions.model.Rejection`,
with the decision id. It never names what was refused; what the session's latest listing did
not show is only "not available" (``RESOURCE_NOT_AVAILABLE``, ``PROMPT_NOT_AVAILABLE``), and
only what it showed gets the reason (the predicates' messages, or ``STATE_UNAVAILABLE``).

**Changes are announced like the tools'.** After an allowed mutating tool call succeeded, and
on each pass of the state watch, every session that has listed resources or prompts is decided
again on one state read per account; one whose lists would differ is sent
``notifications/resources/list_changed`` (resources and templates) or
``notifications/prompts/list_changed``, on the call's stream or its way out
(:mod:`maitred.gateway.channels`).

**Scopes and later rules.** A key added to tools' contracts that is not tool-only reaches these
entries through the same sidecar reader (:data:`~maitred.contract.tool_sidecar.SURFACE_KEYS`),
and every verdict here is made in one place, :meth:`SurfaceGate.executable`.

Listings of resources and prompts are not logged (a tool listing is a logged turn); the log
holds every read and get, with the predicates that decided it and the values they read.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Literal, Protocol

import anyio
import mcp_types as mt  # the MCP wire types (`mcp.types` re-exports them)
from fastmcp.prompts import Prompt, PromptResult
from fastmcp.resources import Resource, ResourceResult, ResourceTemplate
from fastmcp.resources.template import match_uri_template
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools import ToolResult
from mcp.shared.exceptions import MCPError

from maitred._canonical import content_hash
from maitred.actions.model import OK, STATE_UNAVAILABLE, Decision, Rejection, ToolCall, new_call_id
from maitred.build import check_against_state
from maitred.contract.kernel import decide_exit
from maitred.contract.model import Contract
from maitred.contract.tool_sidecar import SurfaceNames
from maitred.errors import ConfigError, MaitredError
from maitred.gate.executability import fetch_keys
from maitred.gateway.channels import Channels, Key, ListKind
from maitred.gateway.config import GatewayConfig
from maitred.gateway.keeper import Gatekeeper, GatewayEngines
from maitred.gateway.metrics import GatewayMetrics
from maitred.log.base import DecisionLog
from maitred.skills.model import Catalog, Skill
from maitred.state.snapshot import Snapshot, StateProvider

#: the key of a result's ``_meta`` that carries the decision-log id of its decision
DECISION_ID_META = "maitred/decision_id"

#: what a listing is of: concrete resources, resource templates, prompts, and the gateway's
#: own skills (:mod:`maitred.gateway.skillset`, keyed by the URI of their ``SKILL.md``)
Family = Literal["resources", "templates", "prompts", "skills"]
FAMILIES: tuple[Family, ...] = ("resources", "templates", "prompts", "skills")
RESOURCE_NOT_AVAILABLE = "RESOURCE_NOT_AVAILABLE"
PROMPT_NOT_AVAILABLE = "PROMPT_NOT_AVAILABLE"
SKILL_NOT_AVAILABLE = "SKILL_NOT_AVAILABLE"
#: the list each family's change is announced on (templates are resources' list; the skills
#: extension has no list_changed of its own, and a skill's files are resources)
_ANNOUNCED: Mapping[Family, ListKind] = {
    "resources": "resources",
    "templates": "resources",
    "prompts": "prompts",
    "skills": "resources",
}
_NOUN: Mapping[Family, str] = {
    "resources": "resource",
    "templates": "resource",
    "prompts": "prompt",
    "skills": "skill",
}


def template_matches(uri: str, template: str) -> bool:
    """Whether ``uri`` is one of ``template``'s URIs, as FastMCP routes a read."""
    return match_uri_template(uri, template) is not None


@dataclass(frozen=True)
class Surface:
    """One sidecar entry for something an upstream lists besides tools.

    Attributes:
        family: ``resources`` (one URI), ``templates`` (a URI template) or ``prompts``.
        key: the URI, URI template or prompt name, exactly as listed.
        upstream: the upstream whose sidecar declares it.
        contract: its contract (exit predicates).
    """

    family: Family
    key: str
    upstream: str
    contract: Contract

    def describe(self) -> str:
        if self.family == "skills":
            return f"skill {self.key!r} ({self.upstream})"
        noun = {"resources": "resource", "templates": "template", "prompts": "prompt"}
        return f"{noun[self.family]} {self.key!r} (upstream {self.upstream!r})"


Governing = tuple[Surface, ...] | None  # None: ungated


class SurfaceView:
    """What one session's latest listing of each family showed, and of what (what is
    announced when it would change, and what a refusal may explain)."""

    def __init__(self) -> None:
        self.listed: dict[Family, tuple[tuple[str, ...], frozenset[str]]] = {}

    def remember(self, family: Family, targets: Sequence[str], shown: Iterable[str]) -> None:
        self.listed[family] = (tuple(targets), frozenset(shown))

    def shown(self, family: Family) -> frozenset[str]:
        return self.listed.get(family, ((), frozenset()))[1]


class SurfaceGate:
    """The contracts of every upstream's resources, templates and prompts, and the decisions
    over them (no MCP plumbing: :class:`SurfaceGuard` serves them).

    Args:
        surfaces: every sidecar entry (a family and key appear once).
        ungated: what happens to what no entry governs: ``pass`` or ``hide``.
        provider: the state provider (the tools' one).
        clock: the engines' clock.
        log: where read and get decisions are written (``None``: nowhere).
        matches: ``matches(uri, template)``: whether a URI falls under a template.
    """

    def __init__(
        self,
        surfaces: Sequence[Surface],
        *,
        ungated: Literal["pass", "hide"],
        provider: StateProvider,
        clock: Callable[[], float],
        log: DecisionLog | None,
        matches: Callable[[str, str], bool] = template_matches,
    ) -> None:
        self.ungated = ungated
        self.by_key = {(s.family, s.key): s for s in surfaces}
        self.templates = tuple(s for s in surfaces if s.family == "templates")
        #: the gateway's own skills, and the upstreams' (a ``resources`` entry of a skill's
        #: ``skill://.../SKILL.md``): each governs every file under its folder's URI
        self.skills = tuple(s for s in surfaces if s.family == "skills")
        roots = [s for s in surfaces if s.family in ("skills", "resources") and _skill_md(s.key)]
        self.skill_roots = {s.key.removesuffix("SKILL.md"): s for s in roots}
        self.provider = provider
        self.clock = clock
        self.log = log
        self.matches = matches
        version = content_hash(
            sorted(
                [s.family, s.key, [[p.name, p.version] for p in s.contract.exit_predicates]]
                for s in surfaces
            )
        )
        self.policy = f"mcp-surfaces@{version}"

    @classmethod
    def open(
        cls,
        config: GatewayConfig,
        engines: GatewayEngines,
        listed: Mapping[str, SurfaceNames],
        *,
        warn: bool = True,
        skills: Sequence[Surface] = (),
    ) -> SurfaceGate:
        """The gate over every upstream's sidecar entries (as :class:`GatewayEngines` read them) and
        the gateway's own ``skills`` (:mod:`maitred.gateway.skillset`), naming on stderr what no
        entry governs (unless not ``warn``: the caller names it for an upstream that joins
        later, :meth:`warn_ungated`).

        Raises:
            ConfigError: two upstreams' sidecars govern the same URI, template or prompt, or
                an entry's predicates fail the tools' load-time checks against the state
                (a key with no source, a CEL predicate that does not type-check).
        """
        surfaces: list[Surface] = []
        owner: dict[tuple[Family, str], str] = {}
        for up in config.upstreams:
            sidecar = engines.sidecars.get(up.name)
            names = listed.get(up.name, SurfaceNames())
            if sidecar is None:
                continue
            entries: list[tuple[Family, str, Contract]] = [
                ("templates" if key in names.templates else "resources", key, contract)
                for key, contract in sidecar.resources.items()
            ]
            entries += [("prompts", key, contract) for key, contract in sidecar.prompts.items()]
            for family, key, contract in entries:
                if (family, key) in owner:
                    raise ConfigError(
                        f"{config.source}: the sidecars of upstreams {owner[family, key]!r} "
                        f"and {up.name!r} both give {_NOUN[family]} {key!r} a contract; keep "
                        "one (a client could not tell which applies)"
                    )
                owner[family, key] = up.name
                surfaces.append(Surface(family, key, up.name, contract))
        surfaces += skills
        engine = engines.engine
        as_catalog = Catalog(
            tuple(
                Skill(f"{s.family}:{s.key}", s.describe(), kind="tool", contract=s.contract)
                for s in surfaces
            )
        )
        try:  # the tools' load-time checks: keys have a source, CEL type-checks
            check_against_state(as_catalog, engine.provider)
        except ConfigError as exc:
            raise ConfigError(
                f"{config.source}: the upstreams' resources and prompts: {exc}"
            ) from None
        gate = cls(
            surfaces,
            ungated=config.ungated,
            provider=engine.provider,
            clock=engine.now,
            log=engine.log,
        )
        if warn:
            gate.warn_ungated(listed, config.source)
        return gate

    def warn_ungated(self, listed: Mapping[str, SurfaceNames], source: str) -> None:
        """Name on stderr, per upstream, what it lists that no contract governs."""
        fate = (
            "passed through ungated (ungated: pass)"
            if self.ungated == "pass"
            else "hidden, and reads and gets refused (ungated: hide)"
        )
        for upstream, names in listed.items():
            loose = {
                "resources": [u for u in names.resources if self.governing("resources", u) is None],
                "templates": [t for t in names.templates if self.governing("templates", t) is None],
                "prompts": [p for p in names.prompts if self.governing("prompts", p) is None],
            }
            if not any(loose.values()):
                continue
            said = "; ".join(f"{family} {items}" for family, items in loose.items() if items)
            print(
                f"maitred mcp: upstream {upstream!r} lists what no contract governs, {fate}: "
                f"{said}. Give each an entry under `resources:` / `prompts:` in its sidecar "
                f"({{}}: reviewed, always shown), or set `ungated` in {source}",
                file=sys.stderr,
                flush=True,
            )

    def with_skills(self, skills: Sequence[Surface]) -> SurfaceGate:
        """This gate governing the gateway's own ``skills`` too (as loaded at start)."""
        if not skills or self.skills:
            return self
        return SurfaceGate(
            [*self.by_key.values(), *skills],
            ungated=self.ungated,
            provider=self.provider,
            clock=self.clock,
            log=self.log,
            matches=self.matches,
        )

    @property
    def gates_nothing(self) -> bool:
        """True when nothing is gated: no entries, and ungated ones pass."""
        return not self.by_key and self.ungated == "pass"

    def governing(self, family: Family, target: str) -> Governing:
        """The entries that govern ``target`` (see the module docstring); None: ungated."""
        found = self.by_key.get((family, target))
        if found is not None:
            return (found,)
        if family == "skills":  # an upstream's skill: its SKILL.md's resource entry, if any
            return self.governing("resources", target) if _skill_md(target) else None
        if family == "resources" and self.skill_roots:  # a file of one of the gateway's skills
            roots = [r for r in self.skill_roots if target.startswith(r)]
            if roots:
                return (self.skill_roots[max(roots, key=len)],)
        if family == "resources" and self.templates:
            under = tuple(t for t in self.templates if self.matches(target, t.key))
            return under or None
        return None

    def read(self, account: str, governing: Iterable[Governing]) -> Snapshot:
        """One state read, of every key the ``governing`` contracts declare."""
        keys = frozenset(k for g in governing for s in g or () for k in s.contract.reads)
        return fetch_keys(self.provider, account, keys, self.clock)[0]

    def executable(
        self,
        governing: Governing,
        snapshot: Snapshot,
        now: float,
        granted: frozenset[str] | None = None,
        family: Family | None = None,
    ) -> bool:
        """The one verdict: shown / may be read now for a caller granted ``granted`` (every
        governing contract executable by the kernel, its scopes included; ungated ones as the
        config says, but a skill no contract governs, which is hidden)."""
        if governing is None:
            return self.ungated == "pass" and family != "skills"
        return all(decide_exit(s.contract, snapshot, now, granted).executable for s in governing)

    def visible(
        self,
        account: str,
        family: Family,
        targets: Sequence[str],
        granted: frozenset[str] | None = None,
    ) -> tuple[str, ...]:
        """Which of ``targets`` (a listing of ``family``) the account may see now, for a caller
        granted ``granted``."""
        if self.gates_nothing:
            return tuple(targets)
        governing = [self.governing(family, t) for t in targets]
        snapshot = self.read(account, governing)
        now = self.clock()
        return tuple(
            t
            for t, g in zip(targets, governing, strict=True)
            if self.executable(g, snapshot, now, granted, family)
        )

    def redecide(
        self,
        account: str,
        views: Sequence[SurfaceView],
        granted: frozenset[str] | None = None,
    ) -> list[list[Family]]:
        """For each of ``views`` (sessions of ``account``), the families whose listing would
        now show something else, decided on one state read; each view is updated to what it
        would show (so a change is announced once)."""
        wanted = {
            (family, t) for v in views for family, (targets, _) in v.listed.items() for t in targets
        }
        governing = {ft: self.governing(*ft) for ft in wanted}
        snapshot = self.read(account, governing.values())
        now = self.clock()
        shown = {
            ft for ft, g in governing.items() if self.executable(g, snapshot, now, granted, ft[0])
        }
        out: list[list[Family]] = []
        for view in views:
            changed: list[Family] = []
            for family, (targets, before) in list(view.listed.items()):
                after = frozenset(t for t in targets if (family, t) in shown)
                if after != before:
                    view.remember(family, targets, after)
                    changed.append(family)
            out.append(changed)
        return out

    def check(
        self,
        keeper: Gatekeeper,
        family: Family,
        target: str,
        call: ToolCall,
        view: SurfaceView | None,
    ) -> Decision:
        """May ``keeper``'s session read the resource (or get the prompt) ``target`` now?
        Decided on fresh state, logged and flushed, then returned.

        Raises:
            MaitredError: the decision could not be logged (the read must not happen).
        """
        governing = self.governing(family, target)
        snapshot = self.read(keeper.account, [governing])
        now = self.clock()
        decision = replace(
            self._decide(family, target, call, governing, snapshot, now, view, keeper.granted),
            mutates=False,
            now=now,
            policy=self.policy,
            session_id=keeper.session.id,
            tenant=keeper.tenant,
        )
        if self.log is not None:
            self.log.write_decisions([decision])
            self.log.flush()
        return decision

    def _decide(
        self,
        family: Family,
        target: str,
        call: ToolCall,
        governing: Governing,
        snapshot: Snapshot,
        now: float,
        view: SurfaceView | None,
        granted: frozenset[str] | None = None,
    ) -> Decision:
        noun = _NOUN[family]
        what = f"{call.name} of {noun} {target!r}"
        if governing is None:
            if family == "skills":  # not a skill the gateway serves: refused like a hidden one
                return _refused(call, family, f"{what}: no such skill is served")
            if self.ungated == "pass":
                return Decision(
                    call, "allow", OK, f"{what}: no contract governs it (ungated: pass)"
                )
            return _refused(call, family, f"{what}: no contract governs it (ungated: hide)")
        verdicts = [(s, decide_exit(s.contract, snapshot, now, granted)) for s in governing]
        outcomes = tuple(o for _, v in verdicts for o in (*v.fired, *v.soft))
        by = ", ".join(s.describe() for s in governing)
        hidden = [(s, v) for s, v in verdicts if v.hidden]
        if not hidden:
            return Decision(call, "allow", OK, f"{what}: allowed by {by}", outcomes=outcomes)
        cause = next((v.cause for _, v in hidden if v.cause is not None), None)
        fired = [o.predicate for _, v in hidden for o in v.fired]
        why = f"cause {cause}" if cause else f"exit predicate(s) {fired} hold"
        people = f"{what}: hidden by {by}: {why}"
        if not self._was_shown(family, target, view):  # what it was not shown stays unseen
            return _refused(call, family, people, outcomes, cause)
        if cause == "state_unavailable":
            return _refused(
                call,
                family,
                people,
                outcomes,
                cause,
                code=STATE_UNAVAILABLE,
                why="the account's state could not be read; the gateway fails closed. Try "
                "again later",
            )
        said = {p.name: p.message for s, _ in hidden for p in s.contract.exit_predicates}
        detail = "; ".join(
            said.get(o.predicate) or o.detail or o.predicate for _, v in hidden for o in v.fired
        )
        if cause == "account_not_found":
            detail = "there is no record of this account"
        return _refused(
            call,
            family,
            people,
            outcomes,
            cause,
            why=f"this {noun} is not available for this account now ({detail})",
        )

    def _was_shown(self, family: Family, target: str, view: SurfaceView | None) -> bool:
        """Whether the session's latest listing showed ``target`` (a resource: its URI, or a
        template it falls under)."""
        if view is None:
            return False
        if target in view.shown(family):
            return True
        return family == "resources" and any(
            self.matches(target, t) for t in view.shown("templates")
        )


def _skill_md(uri: str) -> bool:
    return uri.startswith("skill://") and uri.endswith("/SKILL.md")


def _refused(
    call: ToolCall,
    family: Family,
    people: str,
    outcomes: tuple[Any, ...] = (),
    cause: Any = None,
    *,
    code: str = "",
    why: str = "",
) -> Decision:
    """A refused read or get: the code for its family unless given, and a message for the
    model that says nothing of what was refused unless ``why`` (for what the session saw)."""
    noun = _NOUN[family]
    code = code or f"{noun.upper()}_NOT_AVAILABLE"  # RESOURCE_, PROMPT_, SKILL_NOT_AVAILABLE
    why = why or (
        f"that {noun} is not available in this conversation; use one of the {noun}s you were shown"
    )
    undone = "Nothing was read" if noun == "resource" else f"The {noun} was not fetched"
    return Decision(
        call,
        "reject",
        code,
        f"{people}: {code}",
        f"Rejected ({code}): {why}. {undone}; re-plan with the user.",
        outcomes=outcomes,
        cause=cause,
    )


class Sessions(Protocol):
    """What :class:`SurfaceGuard` needs of the gateway's middleware: each request's session,
    the sessions it can reach outside a request, their ways out, and the metrics."""

    channels: Channels
    metrics: GatewayMetrics

    def keeper_of(self, context: MiddlewareContext[Any]) -> Gatekeeper | None:
        """The request's gatekeeper (None: not authenticated)."""
        ...

    def reachable(self) -> list[tuple[Key, Gatekeeper]]:
        """The sessions a notification outside any request can reach."""
        ...


_AUTH_REQUIRED = Rejection(
    "AUTH_REQUIRED",
    "this gateway serves authenticated sessions only; connect with the bearer token you were "
    "given. Nothing was read",
    error="auth_required",
)


def _error(code: int, payload: Rejection) -> MCPError:
    """The MCP error a refused read or get is answered with: the rejection as ``data``."""
    return MCPError(code, payload.message, payload.to_json())


class SurfaceGuard(Middleware):
    """Filters ``resources/list``, ``resources/templates/list`` and ``prompts/list`` per
    session and gates ``resources/read`` and ``prompts/get`` (see the module docstring).

    Added to the gateway's server after its :class:`~maitred.gateway.server.GateMiddleware`,
    so a ``tools/call`` reaches :meth:`on_call_tool` only when the gate let it through.
    """

    def __init__(self, sessions: Sessions, gate: SurfaceGate) -> None:
        self.sessions = sessions
        self.gate = gate
        #: what each session's latest listings showed; dropped with the session
        self.views: weakref.WeakKeyDictionary[Gatekeeper, SurfaceView] = weakref.WeakKeyDictionary()
        metrics = sessions.metrics
        for method in ("resources/read", "resources/subscribe", "prompts/get"):
            metrics.surface_requests.labels(method, OK)  # present at zero

    def adopt(self, gate: SurfaceGate) -> None:
        """Decide with ``gate`` from now on (an upstream joined, with its sidecar's entries;
        the gateway's own skills stay governed); what each session's listings showed is kept."""
        self.gate = gate.with_skills(self.gate.skills)

    def view_of(self, keeper: Gatekeeper) -> SurfaceView:
        """What ``keeper``'s session's latest listings showed (made empty on first use)."""
        return self._view(keeper)

    def _view(self, keeper: Gatekeeper) -> SurfaceView:
        view = self.views.get(keeper)
        if view is None:
            view = self.views[keeper] = SurfaceView()
        return view

    async def _listed(
        self,
        family: Family,
        context: MiddlewareContext[Any],
        call_next: CallNext[Any, Any],
        target: Callable[[Any], str],
    ) -> list[Any]:
        keeper = self.sessions.keeper_of(context)
        if keeper is None:
            return []
        items = list(await call_next(context))
        targets = [target(i) for i in items]
        shown = set(
            await anyio.to_thread.run_sync(
                lambda: self.gate.visible(keeper.account, family, targets, keeper.granted)
            )
        )
        self._view(keeper).remember(family, targets, shown)
        return [i for i, t in zip(items, targets, strict=True) if t in shown]

    async def on_list_resources(
        self,
        context: MiddlewareContext[mt.ListResourcesRequest],
        call_next: CallNext[mt.ListResourcesRequest, Sequence[Resource]],
    ) -> Sequence[Resource]:
        return await self._listed("resources", context, call_next, lambda r: str(r.uri))

    async def on_list_resource_templates(
        self,
        context: MiddlewareContext[mt.ListResourceTemplatesRequest],
        call_next: CallNext[mt.ListResourceTemplatesRequest, Sequence[ResourceTemplate]],
    ) -> Sequence[ResourceTemplate]:
        return await self._listed("templates", context, call_next, lambda t: str(t.uri_template))

    async def on_list_prompts(
        self,
        context: MiddlewareContext[mt.ListPromptsRequest],
        call_next: CallNext[mt.ListPromptsRequest, Sequence[Prompt]],
    ) -> Sequence[Prompt]:
        return await self._listed("prompts", context, call_next, lambda p: str(p.name))

    async def _decided(
        self, context: MiddlewareContext[Any], family: Family, target: str, call: ToolCall
    ) -> Decision:
        """The logged decision on a read or get; raises the MCP error that refuses it."""
        keeper = self.sessions.keeper_of(context)
        count = self.sessions.metrics.surface_requests
        if keeper is None:
            count.labels(call.name, "AUTH_REQUIRED").inc()
            raise _error(mt.INVALID_REQUEST, _AUTH_REQUIRED)
        view = self.views.get(keeper)
        try:
            decision = await anyio.to_thread.run_sync(
                lambda: self.gate.check(keeper, family, target, call, view)
            )
        except MaitredError as exc:  # not decided, or not durable: it must not be read
            count.labels(call.name, "GATE_UNAVAILABLE").inc()
            raise _error(
                mt.INTERNAL_ERROR,
                Rejection(
                    "GATE_UNAVAILABLE",
                    f"the gateway could not decide or record this request "
                    f"({type(exc).__name__}: {exc}); nothing was read. Try again later",
                    error="gate_unavailable",
                ),
            ) from None
        count.labels(call.name, decision.code).inc()  # OK when allowed, as the log says
        if not decision.allow:
            raise _error(mt.INVALID_PARAMS, decision.rejection())
        return decision

    async def on_request(
        self,
        context: MiddlewareContext[Any],
        call_next: CallNext[Any, Any],
    ) -> Any:
        """A ``resources/subscribe`` is decided like the read it leads to: a resource the
        session may not read cannot be subscribed to (refused and logged, never forwarded),
        so its update notifications never tell the model it exists."""
        if context.method == "resources/subscribe":
            params = context.message if isinstance(context.message, Mapping) else {}
            uri = str(params.get("uri", ""))
            call = ToolCall("resources/subscribe", {"uri": uri}, new_call_id())
            await self._decided(context, "resources", uri, call)
        return await call_next(context)

    async def on_read_resource(
        self,
        context: MiddlewareContext[mt.ReadResourceRequestParams],
        call_next: CallNext[mt.ReadResourceRequestParams, ResourceResult],
    ) -> ResourceResult:
        uri = str(context.message.uri)
        call = ToolCall("resources/read", {"uri": uri}, new_call_id())
        decision = await self._decided(context, "resources", uri, call)
        result = await call_next(context)
        meta = {**(result.meta or {}), DECISION_ID_META: decision.decision_id}
        return result.model_copy(update={"meta": meta})

    async def on_get_prompt(
        self,
        context: MiddlewareContext[mt.GetPromptRequestParams],
        call_next: CallNext[mt.GetPromptRequestParams, PromptResult],
    ) -> PromptResult:
        name = context.message.name
        params = {"name": name, "arguments": dict(context.message.arguments or {})}
        decision = await self._decided(context, "prompts", name, ToolCall("prompts/get", params))
        result = await call_next(context)
        meta = {**(result.meta or {}), DECISION_ID_META: decision.decision_id}
        return result.model_copy(update={"meta": meta})

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        """A call the gate let through (the gate's own forwarding calls :meth:`after_call`
        instead)."""
        return await self.after_call(context, await call_next(context))

    async def after_call(
        self, context: MiddlewareContext[mt.CallToolRequestParams], result: ToolResult
    ) -> ToolResult:
        """After a mutating call that succeeded, announce the resource and prompt lists it
        changed for this session; ``result`` is returned as it is."""
        keeper = self.sessions.keeper_of(context)
        done = isinstance(result, ToolResult) and not result.is_error  # not a task handle
        if not done or keeper is None or not keeper.mutates(context.message.name):
            return result
        view = self.views.get(keeper)
        if view is None or not view.listed:
            return result
        try:
            changed = await anyio.to_thread.run_sync(
                lambda: self.gate.redecide(keeper.account, [view], keeper.granted)[0]
            )
            ctx = context.fastmcp_context
            for kind in sorted({_ANNOUNCED[f] for f in changed}):
                if ctx is not None:
                    await ctx.send_notification(_NOTIFICATIONS[kind])
        except Exception as exc:  # the call ran: its result must reach the client regardless
            print(
                f"maitred mcp: resources/prompts not re-checked after {context.message.name} "
                f"({type(exc).__name__}: {exc})",
                file=sys.stderr,
            )
        return result

    async def recheck(self) -> int:
        """One pass of the state watch over resources and prompts: how many sessions were
        sent a ``list_changed`` (one state read per account and grant)."""
        by_caller: dict[tuple[str, frozenset[str] | None], list[tuple[Key, SurfaceView]]] = {}
        for key, keeper in self.sessions.reachable():
            view = self.views.get(keeper)
            if view is not None and view.listed:
                by_caller.setdefault((keeper.account, keeper.granted), []).append((key, view))
        told = 0
        for (account, granted), group in by_caller.items():
            views = [v for _, v in group]
            changes = await anyio.to_thread.run_sync(
                partial(self.gate.redecide, account, views, granted)
            )
            for (key, _), changed in zip(group, changes, strict=True):
                kinds = sorted({_ANNOUNCED[f] for f in changed})
                if kinds and await self.sessions.channels.notify(key, kinds):
                    told += 1
        return told


_NOTIFICATIONS: Mapping[ListKind, mt.ServerNotification | Any] = {
    "resources": mt.ResourceListChangedNotification(),
    "prompts": mt.PromptListChangedNotification(),
}

__all__ = [
    "DECISION_ID_META",
    "PROMPT_NOT_AVAILABLE",
    "RESOURCE_NOT_AVAILABLE",
    "SKILL_NOT_AVAILABLE",
    "Surface",
    "SurfaceGate",
    "SurfaceGuard",
    "SurfaceView",
    "template_matches",
]
