"""The engines conversations share: one catalog's lister and checker, its finder, its shadow.

:class:`Engines` holds, for one front end (a gateway, a service), the
:class:`~maitred.Maitred` engines its conversations decide with: one that lists and checks
(its "recall" is every tool, :class:`EveryTool`, so a listing is a logged turn deciding each
tool on one fresh state read), one that routes discovery needs with real recall over the
same catalog (``find_tools`` mode), and one over the full contracts when some rules run in
shadow mode. All share one state provider and one decision log. Each front end builds them
its own way (the gateway from its upstreams' listings: :mod:`maitred.gateway.keeper`); what
they decide is the same.

**The state watch** (:meth:`Engines.recheck`) is one pass over the conversations that have
listed: one batched state read per account over every tool's keys, then, for each
conversation, what its listing *would* show on that snapshot, decided in memory by the same
executability gate, each tool once per account and grant
(:meth:`Conversation.refresh <maitred.conversation.Conversation.refresh>`). A conversation
already found right for the same state content (:func:`state_fingerprint`) is not decided
again, so an unchanged account costs a read and a hash; only one whose answer differs from
what it was last shown gets a logged listing turn. State that cannot be read hides every tool
that reads it (the gate's ``state_unavailable``), so an outage is itself a change to
announce, and so is the recovery.

**Surfaces** (what an MCP server offers besides tools: resources, templates, prompts, skills).
A front end that serves them hands the engines their sidecar entries once, as it builds them
(:meth:`Engines.govern`); the engines hold the contracts over them
(:class:`~maitred.gate.surfaces.SurfaceContracts`) and every conversation asks them for its
principal (:meth:`Conversation.offer <maitred.conversation.Conversation.offer>`,
:meth:`Conversation.read <maitred.conversation.Conversation.read>`). The watch's pass over
them is :meth:`Engines.recheck_surfaces`: one state read per account and grant.

**Held tools.** A front end may hold tools back for a reason outside the contracts (the
gateway's pinned definitions): :class:`Holds` says which, and why; a listing leaves them out
and a call to one is refused with the hold's code, decided and logged like any decision.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from maitred._canonical import content_hash
from maitred.actions.model import Hold
from maitred.actions.session import Session
from maitred.build import check_against_state
from maitred.contract.surfaces import Family, Surface
from maitred.conversation.finding import CALL_TOOL
from maitred.engine import Maitred
from maitred.errors import MaitredError
from maitred.gate.surfaces import SurfaceContracts
from maitred.log.base import DecisionLog
from maitred.pipeline import Pipeline
from maitred.recall.base import Candidate, Cutoff
from maitred.skills.model import Catalog, Skill
from maitred.state.snapshot import Snapshot, StateProvider

if TYPE_CHECKING:
    from maitred.conversation.conversation import Conversation
    from maitred.conversation.principal import Principal


class Holds(Protocol):
    """Tools held back from every conversation, and why (the gateway's pins)."""

    #: counts replacements of the held set (a new hold is a change the watch announces)
    generation: int

    def held(self) -> Mapping[str, Hold]: ...


def state_fingerprint(snapshot: Snapshot) -> str:
    """A hash of what a snapshot says (values, missing keys, their dates, the source's
    version and whether the account exists), without when it was taken: two reads of state
    that did not change have the same one, whatever the provider puts in ``as_of``."""
    data = snapshot.to_json(with_hash=False)
    del data["as_of"]
    return content_hash(data)


class EveryTool:
    """The "recall" of a listing: every tool of the catalog, in its order, score 1.

    A listing that leaves tools out (held back; a shadow conversation offered what discovery
    disclosed) narrows it with the turn's :class:`~maitred.context.CallContext` scope, passed
    with that turn alone.
    """

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.name = "mcp-list"

    def rank(self, text: str, k: int) -> list[Candidate]:
        return [Candidate(s.name, i + 1, 1.0) for i, s in enumerate(self.catalog.skills[:k])]


def begin(pipeline: Pipeline, log: DecisionLog | None, run: str) -> None:
    """Start ``pipeline``'s own run, ``<run>-<hex>``, in ``log`` (committed at once)."""
    if log is not None:
        pipeline.begin_run(f"{run}-{uuid.uuid4().hex[:8]}")
        log.flush()


def listing_pipeline(
    catalog: Catalog, provider: StateProvider, log: DecisionLog | None
) -> Pipeline:
    """Stages 1-4 where the "recall" is every tool (a catalog with none lists nothing)."""
    cutoff = Cutoff(top_k=max(1, len(catalog)))
    return Pipeline(catalog, EveryTool(catalog), provider, cutoff=cutoff, log=log)


def listing_engine(
    catalog: Catalog, provider: StateProvider, log: DecisionLog | None, run: str, *, owns_log: bool
) -> Maitred:
    """An engine whose turns list every tool of ``catalog``, under its own run ``<run>-<hex>``."""
    pipeline = listing_pipeline(catalog, provider, log)
    begin(pipeline, log, run)
    return Maitred(pipeline, owns_log=owns_log and log is not None)


class Engines:
    """The engines of one front end, shared by all its conversations (module docstring).

    Args:
        engine: lists and checks, over the enforced catalog (it owns and closes the log).
        owners: tool name -> the upstream that lists it (``{}``: no upstreams).
        finder: routes discovery needs over the same catalog (``find_tools`` mode only).
        call_tool: the name of the tool that runs a found tool by name, listed beside
            ``find_tools`` (``find_tools`` mode only; :func:`~maitred.conversation.finding.unwrap`).
        shadow: an engine over the full contracts, when some rules run in shadow mode.
        pins: what is held back now (the gateway's reviewed definitions), if anything.
        sidecars: upstream name -> its sidecar as read (its resources' and prompts'
            contracts); kept for the front end that builds surfaces from them.
        routed: ``engine``'s turns route a message (recall, gate, depth, menu: ``maitred
            serve``) rather than list every tool (the gateway): a conversation's offer is its
            latest routed turn's menu, and a call is never decided by listing afresh.
    """

    def __init__(
        self,
        engine: Maitred,
        owners: Mapping[str, str] | None = None,
        *,
        finder: Maitred | None = None,
        shadow: Maitred | None = None,
        pins: Holds | None = None,
        sidecars: Mapping[str, Any] | None = None,
        routed: bool = False,
        call_tool: str = CALL_TOOL,
    ) -> None:
        self.engine = engine
        self.routed = routed
        #: ``call_tool``'s name here; ``""`` without a finder (there is no such tool)
        self.call_tool = call_tool if finder is not None else ""
        self.pins = pins
        self.sidecars = dict(sidecars or {})
        self.owners = dict(owners or {})
        self.finder = finder
        self.shadow = shadow
        self._named: tuple[object, tuple[str, ...], frozenset[str]] | None = None
        #: the contracts of the surfaces served, and the verdicts over them (:meth:`govern`;
        #: ``None``: no surface is served). Asked only through a conversation.
        self.surface_contracts: SurfaceContracts | None = None
        #: some exit predicate has a freshness bound, so time alone can change a verdict and
        #: the watch may never skip a conversation whose account's state looks the same
        self.timed = any(
            p.max_age_s is not None for s in engine.catalog for p in s.contract.exit_predicates
        )

    @property
    def tool_names(self) -> tuple[str, ...]:
        """Every tool of the enforced catalog, in its order (the upstreams')."""
        return self._names()[0]

    def knows(self, name: str) -> bool:
        """Whether ``name`` is a tool of the enforced catalog (a set lookup: a call at 1,000
        tools must not scan them)."""
        return name in self._names()[1]

    def _names(self) -> tuple[tuple[str, ...], frozenset[str]]:
        catalog = self.engine.catalog
        if self._named is None or self._named[0] is not catalog:  # built once per catalog
            names = tuple(s.name for s in catalog)
            self._named = (catalog, names, frozenset(names))
        return self._named[1], self._named[2]

    def held(self) -> Mapping[str, Hold]:
        """The tools held back now, and why."""
        return self.pins.held() if self.pins is not None else {}

    def mutates(self, name: str) -> bool:
        """Whether ``name`` may change an account's state (the rulebook's word on it)."""
        tool = self.engine.rulebook.tools.get(name)
        return tool is not None and tool.mutates

    def govern(
        self,
        surfaces: Sequence[Surface],
        *,
        ungated: Literal["pass", "hide"],
        matches: Callable[[str, str], bool],
    ) -> None:
        """Decide resources, templates, prompts and skills by the contracts of ``surfaces``
        (every sidecar entry, and the front end's own skills) from now on; what no entry
        governs follows ``ungated``. Called once, while the front end builds these engines,
        before any conversation asks.

        ``matches(uri, template)`` says whether a URI falls under a template, as the front end
        routes a read (the gateway passes its MCP library's own matcher).

        Raises:
            ConfigError: an entry's predicates fail the tools' load-time checks against the
                state (a key with no source, a CEL predicate that does not type-check).
        """
        engine = self.engine
        as_catalog = Catalog(
            tuple(
                Skill(f"{s.family}:{s.key}", s.describe(), kind="tool", contract=s.contract)
                for s in surfaces
            )
        )
        check_against_state(as_catalog, engine.provider)
        self.surface_contracts = SurfaceContracts(
            surfaces,
            ungated=ungated,
            provider=engine.provider,
            clock=engine.now,
            log=engine.log,
            matches=matches,
        )

    @property
    def own_skills(self) -> tuple[Surface, ...]:
        """The front end's own skills these engines govern (carried into the engines a grown
        catalog builds)."""
        contracts = self.surface_contracts
        return contracts.skills if contracts is not None else ()

    @property
    def skill_upstreams(self) -> frozenset[str]:
        """The upstreams whose sidecar gives some skill an entry (their skills are served)."""
        contracts = self.surface_contracts
        return contracts.skill_upstreams if contracts is not None else frozenset()

    @property
    def ungated(self) -> Literal["pass", "hide"]:
        """What happens to a surface no contract governs (``pass`` when none are governed)."""
        contracts = self.surface_contracts
        return contracts.ungated if contracts is not None else "pass"

    def ungoverned(self, family: Family, keys: Sequence[str]) -> list[str]:
        """Which of ``keys`` (what an upstream lists of ``family``) no contract governs."""
        contracts = self.surface_contracts
        return list(keys) if contracts is None else contracts.ungoverned(family, keys)

    def recheck_surfaces(self, conversations: Sequence[Conversation]) -> list[tuple[Family, ...]]:
        """One pass of the state watch over the surfaces: for each of ``conversations``, the
        families whose latest list would now offer something else (empty: none), decided on
        one state read per account and grant; each conversation's offer is updated to what it
        would be, so a change is announced once. Conversations that listed no surface are
        skipped."""
        out: list[tuple[Family, ...]] = [() for _ in conversations]
        contracts = self.surface_contracts
        if contracts is None:
            return out
        groups: dict[tuple[str, frozenset[str] | None], list[int]] = {}
        for at, one in enumerate(conversations):
            if one.surface_offers.listed:
                groups.setdefault((one.account, one.granted), []).append(at)
        for (account, granted), members in groups.items():
            views = [conversations[at].surface_offers for at in members]
            changes = contracts.redecide(account, views, granted)
            for at, changed in zip(members, changes, strict=True):
                out[at] = tuple(changed)
        return out

    def run_for(self, engine: Maitred, tenant: str) -> str:
        """The run ``engine`` logs ``tenant``'s turns under (:meth:`Maitred.run_for`: its own
        run for no tenant, else one run per tenant, ``<run>-<tenant>``)."""
        return engine.run_for(tenant, fallback="mcp")

    def conversation(
        self,
        principal: Principal,
        *,
        by_principal: bool = False,
        session: Session | None = None,
    ) -> Conversation:
        """A conversation of ``principal`` over these engines, recorded in the log under
        the principal's holder id (``by_principal``: a sessionless 2026-07-28 caller, the same
        id on every replica), under ``session``'s id (one the front end keeps, continued:
        ``maitred serve``'s) or else under a fresh id (one handshake-era MCP session, one
        library conversation)."""
        from maitred.conversation.conversation import Conversation

        finds = self.finder is not None
        holder = principal.holder(finds=finds) if by_principal else None
        return Conversation(self, principal, holder=holder, session=session)

    def recheck(self, conversations: Sequence[Conversation]) -> list[Conversation]:
        """One pass of the state watch over ``conversations``: those whose visible set changed.

        Conversations that never listed are skipped (they have nothing to be told), and so is
        one already checked against the same state content since it last listed (unless some
        predicate has a freshness bound). Each account is read once, over every tool's keys; a
        provider that fails gives the gate's all-missing snapshot, on which every tool that
        reads state is hidden (fail closed). A conversation whose re-listing cannot be logged
        is named on stderr and left as it was (the next pass tries again), so one broken
        conversation never stops the others.
        """
        by_account: dict[str, list[Conversation]] = {}
        for one in conversations:
            if one.listed is not None:
                by_account.setdefault(one.account, []).append(one)
        changed: list[Conversation] = []
        for account, group in by_account.items():
            snapshot = self.engine.read_state(account, self.tool_names)
            seen = None if self.timed else state_fingerprint(snapshot)
            if seen is not None and self.pins is not None:  # a new hold is a change too
                seen = f"{seen}/{self.pins.generation}"
            # one decision per tool for the conversations of one account and one grant
            verdicts: dict[frozenset[str] | None, dict[str, bool]] = {}
            for one in group:
                try:
                    with one.lock:
                        shared = verdicts.setdefault(one.granted, {})
                        refreshed = one.refresh(snapshot, shared, seen)
                    if refreshed:
                        changed.append(one)
                except MaitredError as exc:
                    print(
                        f"maitred: state watch: session {one.session.id} not re-listed "
                        f"({type(exc).__name__}: {exc})",
                        file=sys.stderr,
                    )
        return changed

    def close(self) -> None:
        for extra in (self.shadow, self.finder):
            if extra is not None:
                extra.close()  # flushes the shared log; the listing engine closes it
        self.engine.close()
