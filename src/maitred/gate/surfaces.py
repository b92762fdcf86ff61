"""The contracts of what an MCP upstream lists besides tools, and the verdicts over them.

Stage 2's verdict applied to resources, resource templates, prompts and skills: the MCP
gateway serves them (:mod:`maitred.gateway.surfaces`, the MCP plumbing and the config), this
module decides them, with no MCP library in sight.

**Which contract governs what** (:meth:`SurfaceContracts.governing`). A listed template: the
entry of its exact ``uriTemplate``. A prompt: the entry of its name. A concrete resource URI,
listed or read: the entry of that URI if there is one, else *every* template entry whose
template matches it (the gateway's matcher, the one that routes the read) -- all must pass, so
reading a URI under a hidden template is refused like the template. A file of a skill: the
entry of its folder's ``SKILL.md``. Nothing governs it: it is *ungated*, and ``ungated``
decides: ``pass`` or ``hide`` (a skill no contract governs is always hidden).

**The same promise as tools.** Visible means the decision kernel
(:func:`~maitred.contract.kernel.decide_exit`, the one function behind the tools' listing and
call checks) finds every governing contract executable on one state read for the account,
through stage 2's read (:func:`~maitred.gate.executability.fetch_keys`: a store that is down
hides everything that reads it, fail closed); every verdict is made in one place,
:meth:`SurfaceContracts.executable`. A read or get (:meth:`SurfaceContracts.check`) is decided
on fresh state and written to the decision log as an action decision (its ``call`` is the MCP
method with its params) and flushed before it is returned. A refusal never names what was
refused: what the session's latest listing did not show is only "not available"
(``RESOURCE_NOT_AVAILABLE``, ``PROMPT_NOT_AVAILABLE``, ``SKILL_NOT_AVAILABLE``), and only what
it showed gets the reason (the predicates' messages, or ``STATE_UNAVAILABLE``); its words are
the one refusal template's (:func:`~maitred.actions.refusals.refusal_text`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from maitred._canonical import content_hash
from maitred.actions.model import OK, STATE_UNAVAILABLE, Decision, ToolCall
from maitred.actions.refusals import NOTHING_READ, refusal_text
from maitred.actions.session import Session
from maitred.contract.kernel import decide_exit
from maitred.contract.model import Contract
from maitred.gate.executability import fetch_keys
from maitred.log.base import DecisionLog
from maitred.state.snapshot import Snapshot, StateProvider

#: what a listing is of: concrete resources, resource templates, prompts, and the gateway's
#: own skills (keyed by the URI of their ``SKILL.md``)
Family = Literal["resources", "templates", "prompts", "skills"]
FAMILIES: tuple[Family, ...] = ("resources", "templates", "prompts", "skills")
RESOURCE_NOT_AVAILABLE = "RESOURCE_NOT_AVAILABLE"
PROMPT_NOT_AVAILABLE = "PROMPT_NOT_AVAILABLE"
SKILL_NOT_AVAILABLE = "SKILL_NOT_AVAILABLE"
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


class SurfaceContracts:
    """The contracts of every upstream's resources, templates and prompts (and the gateway's
    skills), and the verdicts over them (no MCP plumbing: the gateway's
    :class:`~maitred.gateway.surfaces.SurfaceGuard` serves them).

    Args:
        surfaces: every sidecar entry (a family and key appear once).
        ungated: what happens to what no entry governs: ``pass`` or ``hide``.
        provider: the state provider (the tools' one).
        clock: the engines' clock.
        log: where read and get decisions are written (``None``: nowhere).
        matches: ``matches(uri, template)``: whether a URI falls under a template (the
            gateway passes its MCP library's own matcher, the one that routes a read).
    """

    def __init__(
        self,
        surfaces: Sequence[Surface],
        *,
        ungated: Literal["pass", "hide"],
        provider: StateProvider,
        clock: Callable[[], float],
        log: DecisionLog | None,
        matches: Callable[[str, str], bool],
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

    def with_skills(self, skills: Sequence[Surface]) -> SurfaceContracts:
        """These contracts and the gateway's own ``skills`` (as loaded at start)."""
        if not skills or self.skills:
            return self
        return SurfaceContracts(
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
        session: Session,
        family: Family,
        target: str,
        call: ToolCall,
        view: SurfaceView | None,
        granted: frozenset[str] | None = None,
    ) -> Decision:
        """May ``session`` (its account, for a caller granted ``granted``) read the resource
        (or get the prompt, the skill) ``target`` now? Decided on fresh state, logged and
        flushed, then returned.

        Raises:
            MaitredError: the decision could not be logged (the read must not happen).
        """
        governing = self.governing(family, target)
        snapshot = self.read(session.account, [governing])
        now = self.clock()
        decision = replace(
            self._decide(family, target, call, governing, snapshot, now, view, granted),
            mutates=False,
            now=now,
            policy=self.policy,
            session_id=session.id,
            tenant=session.tenant,
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
        noun = NOUN[family]
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
    noun = NOUN[family]
    code = code or f"{noun.upper()}_NOT_AVAILABLE"  # RESOURCE_, PROMPT_, SKILL_NOT_AVAILABLE
    why = why or (
        f"that {noun} is not available in this conversation; use one of the {noun}s you were shown"
    )
    undone = NOTHING_READ if noun == "resource" else f"The {noun} was not fetched"
    return Decision(
        call,
        "reject",
        code,
        f"{people}: {code}",
        refusal_text(code, why, undone=undone),
        outcomes=outcomes,
        cause=cause,
    )


__all__ = [
    "FAMILIES",
    "NOUN",
    "PROMPT_NOT_AVAILABLE",
    "RESOURCE_NOT_AVAILABLE",
    "SKILL_NOT_AVAILABLE",
    "Family",
    "Governing",
    "Surface",
    "SurfaceContracts",
    "SurfaceView",
]
