"""The contracts of what an MCP upstream lists besides tools, and the verdicts over them.

Stage 2's verdict applied to resources, resource templates, prompts and skills: the MCP
gateway serves them (:mod:`maitred.gateway.surfaces`, the MCP plumbing and the config), this
module decides them, with no MCP library in sight. The entries themselves (:class:`Surface`,
:data:`Family`) are data, :mod:`maitred.contract.surfaces`; the engines hold the contracts
over them, and every list, read and get is asked of the caller's
:class:`~maitred.conversation.Conversation` (:meth:`~maitred.conversation.Conversation.offer`,
:meth:`~maitred.conversation.Conversation.read`), which asks this module for its principal.

**Decided on what would be served, never on how it was spelled.** A URI is first resolved
(:meth:`SurfaceContracts.target`) to its canonical form (:func:`~maitred.gate.uris.canonical_uri`:
percent-decoding, ``%2F`` included, dot segments, repeated slashes, the scheme's case rules)
and, under one of the gateway's own skills, to the file that would be served
(:class:`~maitred.gate.uris.SkillIndex`, the resolution the gateway serves that file by). Every
verdict and logged decision is on that identity; a URI under the gateway's own skills that
resolves to none of their files is refused like an unknown resource.

**Which contract governs what** (:meth:`SurfaceContracts.governing`). A listed template: the
entry of its exact ``uriTemplate``. A prompt: the entry of its name. A file of one of the
gateway's own skills: the entry of its skill. A concrete resource URI, listed or read: the
entries whose URI has the same canonical form, or is the resource its query or trailing slash is
appended to (``docs://pricing?v=2`` and ``docs://pricing/`` are governed by ``docs://pricing``);
else the entry of the upstream skill whose folder it falls under; else *every* template entry
whose template matches it as written, in canonical form or without its query (the gateway's
matcher, the one that routes the read) -- all must pass, so reading a URI under a hidden
template is refused like the template. Nothing governs it: it is *ungated*, and ``ungated``
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

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal
from urllib.parse import unquote

from maitred._canonical import content_hash
from maitred.actions.model import OK, STATE_UNAVAILABLE, Decision, ToolCall
from maitred.actions.refusals import NOTHING_READ, refusal_text
from maitred.actions.session import Session
from maitred.contract.kernel import decide_exit
from maitred.contract.surfaces import FAMILIES, NOUN, Family, Surface
from maitred.gate.executability import fetch_keys
from maitred.gate.uris import SkillFile, SkillIndex, base_uri, canonical_uri
from maitred.log.base import DecisionLog
from maitred.state.snapshot import Snapshot, StateProvider

RESOURCE_NOT_AVAILABLE = "RESOURCE_NOT_AVAILABLE"
PROMPT_NOT_AVAILABLE = "PROMPT_NOT_AVAILABLE"
SKILL_NOT_AVAILABLE = "SKILL_NOT_AVAILABLE"


Governing = tuple[Surface, ...] | None  # None: ungated


@dataclass(frozen=True)
class Target:
    """What one read or get names, resolved: the identity it is decided on.

    Attributes:
        family: what it is of (``resources`` for a read, ``skills`` for a skill's entry).
        written: the URI or name as the client spelled it.
        canonical: its canonical form (a prompt's or template's name as written).
        file: the file of one of the gateway's own skills it would be served as.
        unserved: it falls under one of the gateway's own skills but names none of their
            files: nothing would be served (refused like an unknown resource).
    """

    family: Family
    written: str
    canonical: str
    file: SkillFile | None = None
    unserved: bool = False

    @property
    def respelled(self) -> bool:
        """Whether the client spelled it otherwise than its canonical form."""
        return self.written != self.canonical


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
    skills), and the verdicts over them (no MCP plumbing). The engines hold one
    (:meth:`Engines.govern <maitred.conversation.engines.Engines.govern>`) and each
    :class:`~maitred.conversation.Conversation` asks it for its principal; the gateway's
    :class:`~maitred.gateway.surfaces.SurfaceGuard` asks the conversation.

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
        self.surfaces = tuple(surfaces)
        #: each entry by its family and key, a URI's key in canonical form (two spellings of
        #: one URI are one resource: both entries govern it)
        self.by_key: dict[tuple[Family, str], tuple[Surface, ...]] = {}
        for s in surfaces:
            key = (s.family, _canonical(s.family, s.key))
            self.by_key[key] = (*self.by_key.get(key, ()), s)
        self.templates = tuple(s for s in surfaces if s.family == "templates")
        #: the gateway's own skills, and the files each serves (resolved as it serves them)
        self.skills = tuple(s for s in surfaces if s.family == "skills")
        self.index = SkillIndex({_skill_path(s.key): s.files for s in self.skills})
        self.own = {SkillFile(_skill_path(s.key), "SKILL.md").uri: s for s in self.skills}
        #: the skills an upstream serves (a ``resources`` entry of a skill's
        #: ``skill://.../SKILL.md``), and the gateway's own: each governs every file under
        #: its folder's canonical URI
        roots = [s for s in surfaces if s.family in ("skills", "resources") and _skill_md(s.key)]
        self.skill_roots = {canonical_uri(s.key).removesuffix("SKILL.md"): s for s in roots}
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

    @property
    def skill_upstreams(self) -> frozenset[str]:
        """The upstreams whose sidecar gives some skill's ``SKILL.md`` an entry (their
        ``skills/list`` and ``skills/get`` are asked)."""
        return frozenset(s.upstream for s in self.skill_roots.values() if s.family == "resources")

    def ungoverned(self, family: Family, keys: Iterable[str]) -> list[str]:
        """Which of ``keys`` (what an upstream lists of ``family``) no contract governs."""
        return [k for k in keys if self.governing(family, k) is None]

    def served_as(self, uri: str) -> str:
        """The URI a read of ``uri`` is served under: the canonical URI of the gateway's own
        skill file it resolves to (the file its decision was made on), else ``uri`` as
        written."""
        found = self.target("resources", uri).file
        return found.uri if found is not None else uri

    @property
    def gates_nothing(self) -> bool:
        """True when nothing is gated: no entries, and ungated ones pass."""
        return not self.by_key and self.ungated == "pass"

    def target(self, family: Family, written: str) -> Target:
        """What ``written`` (a URI, template or prompt name of ``family``) names, resolved:
        a URI to its canonical form and, under the gateway's own skills, to the file the
        gateway would serve (:meth:`SkillIndex.resolve <maitred.gate.uris.SkillIndex.resolve>`,
        the resolution its skill provider serves by)."""
        canonical = _canonical(family, written)
        if family != "resources" or not self.index or self.index.owner(canonical) is None:
            return Target(family, written, canonical)
        found = self.index.resolve(canonical)
        return Target(family, written, canonical, found, unserved=found is None)

    def governing(self, family: Family, target: str | Target) -> Governing:
        """The entries that govern ``target`` (see the module docstring); None: ungated."""
        t = target if isinstance(target, Target) else self.target(family, target)
        if family == "skills":  # the gateway's own, or an upstream's SKILL.md resource entry
            found = self.by_key.get(("skills", t.canonical))
            if found is None and _skill_md(t.canonical):
                found = self.by_key.get(("resources", t.canonical))
            return found
        if family != "resources":
            return self.by_key.get((family, t.canonical))
        if t.file is not None or t.unserved:  # under one of the gateway's own skills
            return (self.own[SkillFile(str(self.index.owner(t.canonical)), "SKILL.md").uri],)
        base = base_uri(t.canonical)
        named = self.by_key.get(("resources", t.canonical), ())
        if base != t.canonical:
            named += tuple(s for s in self.by_key.get(("resources", base), ()) if s not in named)
        if named:
            return named
        roots = [r for r in self.skill_roots if t.canonical.startswith(r)]
        if roots:  # a file of an upstream's skill
            return (self.skill_roots[max(roots, key=len)],)
        if self.templates:
            spellings = (t.written, t.canonical, base)
            under = tuple(
                s for s in self.templates if any(self.matches(u, s.key) for u in spellings)
            )
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
        *,
        subject: str = "",
        era: str = "",
        trace_id: str = "",
    ) -> Decision:
        """May ``session`` (its account, for a caller granted ``granted``) read the resource
        (or get the prompt, the skill) ``target`` now? Decided on what ``target`` resolves to
        (:meth:`target`), on fresh state; logged (a respelled URI's call carries its canonical
        form as ``canonical``) and flushed, then returned. The decision names the session's
        tenant and account, the credential's ``subject``, the client's protocol ``era`` and the W3C
        ``trace_id`` of its request (``""``: none).

        Raises:
            MaitredError: the decision could not be logged (the read must not happen).
        """
        resolved = self.target(family, target)
        if resolved.respelled:
            call = replace(call, arguments={**call.arguments, "canonical": resolved.canonical})
        governing = self.governing(family, resolved)
        snapshot = self.read(session.account, [governing])
        now = self.clock()
        decision = replace(
            self._decide(resolved, call, governing, snapshot, now, view, granted),
            mutates=False,
            now=now,
            policy=self.policy,
            session_id=session.id,
            tenant=session.tenant,
            account=session.account,
            subject=subject,
            era=era,
            trace_id=trace_id,
        )
        if self.log is not None:
            self.log.write_decisions([decision])
            self.log.flush()
        return decision

    def _decide(
        self,
        target: Target,
        call: ToolCall,
        governing: Governing,
        snapshot: Snapshot,
        now: float,
        view: SurfaceView | None,
        granted: frozenset[str] | None = None,
    ) -> Decision:
        family, noun = target.family, NOUN[target.family]
        what = f"{call.name} of {noun} {target.canonical!r}"
        if target.respelled:
            what += f" (written {target.written!r})"
        if target.unserved:  # under the gateway's own skills, no file of theirs: unknown
            return _refused(call, family, f"{what}: no such file of a skill is served")
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
        if not self._was_shown(target, view):  # what it was not shown stays unseen
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

    def _was_shown(self, target: Target, view: SurfaceView | None) -> bool:
        """Whether the session's latest listing showed ``target`` (its canonical form; a
        resource: its URI, or a template it falls under)."""
        if view is None:
            return False
        family = target.family
        if target.canonical in {_canonical(family, s) for s in view.shown(family)}:
            return True
        return family == "resources" and any(
            self.matches(u, t)
            for t in view.shown("templates")
            for u in (target.written, target.canonical)
        )


def _skill_md(uri: str) -> bool:
    return uri.startswith("skill://") and uri.endswith("/SKILL.md")


def _canonical(family: Family, key: str) -> str:
    """A URI's canonical form (a resource's or skill's); a template or prompt as written."""
    return canonical_uri(key) if family in ("resources", "skills") else key


def _skill_path(uri: str) -> str:
    """The path of the skill whose ``SKILL.md`` is at ``uri`` (``internal-comms``)."""
    inner = canonical_uri(uri).removeprefix("skill://").removesuffix("/SKILL.md")
    return unquote(inner)


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
        f"that {noun} is not available in this conversation; "
        f"use one of the {noun}s you were offered"
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
    "Target",
]
