"""The gateway's decisions, without any MCP plumbing: what one session sees and may call.

:class:`GatewayEngines` is built at start over the tools every upstream that answered listed
(each upstream's own sidecar contracts and shadow rules applied to its own tools, then joined into
one catalog): one :class:`~maitred.Maitred` engine that lists and checks, one that runs
``find_tools`` (real recall over the same catalog), and one over the full contracts when some
rules run in shadow mode. All share one state provider and one decision log. A
:class:`Gatekeeper` is one MCP session: one :class:`~maitred.actions.Session` for one account,
over those engines.

**A catalog that grows.** An upstream that answers after the start (or lists a tool it did not list
before) brings tools the engines do not know. Engines are never changed in place:
:meth:`GatewayEngines.grown` builds new engines aside over the larger catalog, with every check a
start makes, and the gateway swaps its one reference to them (:mod:`maitred.gateway.lifecycle`);
each session then moves over under its own lock (:meth:`Gatekeeper.rebase`), keeping its
:class:`~maitred.actions.Session`, whose offer the new engine reads from the same log.

* **Listing is a logged turn.** :meth:`Gatekeeper.visible` routes a turn whose "recall" is
  every upstream tool, in the upstreams' order (:class:`EveryTool`), so the executability gate
  decides each one on one fresh state snapshot and the decision log keeps the turn: which tools
  were hidden, and which predicate fired with the values it read. No model text is involved.
* **A call is decided against the latest committed listing, and re-checked.**
  :meth:`Gatekeeper.check` asks :meth:`Maitred.check`, which decides against the session's
  latest committed turn -- its latest listing -- like every check. A tool that listing did not
  show is first listed afresh (a logged turn on fresh state), so one that has become visible
  since is offered; one still hidden is ``TOOL_NOT_OFFERED``, its predicates unsaid (what the
  session was not shown stays unseen). A shown tool has its exit predicates re-evaluated on
  fresh state (``TOOL_NOT_EXECUTABLE``, ``STATE_UNAVAILABLE``), a name no upstream listed is
  ``TOOL_UNKNOWN``; then the arguments meet the schema and the call policies run. The
  decision is in the log (flushed) before it is returned.
* **A write can change what is visible.** After an allowed mutating call succeeded,
  :meth:`Gatekeeper.after_call` records it in the session and re-lists; it answers True when
  the visible set differs from the one last shown, and the server then sends
  ``notifications/tools/list_changed``.
* **So can the world** (``watch: {interval_s: N}``). :meth:`GatewayEngines.recheck` is one
  pass of the state watch: one batched state read per account over every tool's keys, then, for each
  session that has listed, what :meth:`Gatekeeper.visible` *would* list on that snapshot,
  decided in memory by the same executability gate, each tool once per account
  (:meth:`Gatekeeper.refresh`). A session already found right for the same state content
  (:func:`state_fingerprint`) is not decided again, so an unchanged account costs a read and a
  hash; only a session whose answer differs from what it was last shown gets a logged listing
  turn. State that cannot be read hides every tool that reads it (the gate's
  ``state_unavailable``), so an outage is itself a change to announce, and so is the recovery.
* **Progressive disclosure, as results** (``disclosure: find_tools``). The list is
  ``find_tools`` alone, whatever was found: a listing is a function of who asks and the state
  now (:mod:`maitred.gateway.listings`). :meth:`Gatekeeper.find` routes the model's need
  through recall -> executability gate -> depth (:meth:`Maitred.turn`, logged under the
  session), and the answer carries what the model needs to call each tool it exposes: name,
  description, input schema. That turn *discloses* them: the session's turns accumulate
  (:attr:`Session.accumulates <maitred.actions.Session.accumulates>`), so its offer is
  everything its committed turns exposed, read from the log -- on any replica, after a
  restart. A call to a tool never disclosed is ``TOOL_NOT_OFFERED``, its predicates unsaid;
  a disclosed one is re-decided on fresh state like any call. A tool the gate blocks is
  never disclosed, however well it matched; the answer says which predicate blocked it. One
  call may carry several needs: each is such a turn, the answer is per need
  (:mod:`maitred.gateway.finding`).

**Whose record.** A gatekeeper's session id in the log is its *holder* (:func:`holder_id
<maitred.gateway.listings.holder_id>`): on a 2026-07-28 connection the principal (the same
id on every replica and after a restart), on a handshake-era one a fresh id per MCP session.

**Scopes** (HTTP). A gatekeeper is for one caller's grant as well as one account: the scopes
its token granted (:attr:`Gatekeeper.granted`; ``None`` over stdio) travel with every listing,
check, watch probe and ``find_tools`` as :attr:`CallContext.granted
<maitred.context.CallContext.granted>`, so the decision kernel hides a tool whose contract
requires a scope the token lacks and refuses a call to it (``INSUFFICIENT_SCOPE``); nothing
here decides scopes itself. ``find_tools`` never names such a tool among the blocked ones.

**Pinned definitions** (``pins:``; :mod:`maitred.gateway.pins`). A tool whose definition is
not the one reviewed is *held back*: :meth:`Gatekeeper.visible`, :meth:`Gatekeeper.would_list`
and :meth:`Gatekeeper.find` leave it out, and :meth:`Gatekeeper.check` passes the holds with
the call, so the action gate refuses it (``TOOL_DEFINITION_CHANGED``) and logs that like any
decision. What is held can change while the gateway runs (each re-listing of an upstream is
compared with the pins), so it is read afresh by every listing and call.

**Names across upstreams.** Tools keep the names their upstream gives them (the names its
sidecar, its documentation and the model's prompts use); two upstreams listing the same name
is refused with a :class:`~maitred.errors.ConfigError` naming both (at start; an upstream that
joins later with such a name is kept out), rather than
renamed silently, because a prefix would change what every sidecar, prompt and log row says.

**Shadow mode.** Rules the config names in an upstream's ``shadow`` are taken out of the
catalog the gateway enforces, and a second engine over the *full* contracts decides every
listing and call too, under its own run (``mcp-shadow-...``) and session id
(``<session>-shadow``) in the same log: what the client got is the enforced run, what full
enforcement would have done is the shadow run, and the two can be compared turn by turn
before a rule is switched on.

The upstreams' tools become one catalog in :mod:`maitred.gateway.catalogs`.
Nothing here imports an MCP library.
"""

from __future__ import annotations

import sys
import threading
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from maitred._canonical import content_hash
from maitred.actions.model import (
    APPROVAL_REQUIRED,
    OK,
    ApprovalAnswer,
    Decision,
    Hold,
    ToolCall,
    new_call_id,
)
from maitred.actions.refusals import refusal_text
from maitred.build import PipelineOptions, build_pipeline, check_against_state
from maitred.context import CallContext
from maitred.contract.tool_sidecar import (
    SurfaceNames,
    ToolContracts,
)
from maitred.engine import Maitred
from maitred.errors import ConfigError, EmptyCatalogError, MaitredError
from maitred.gateway.catalogs import catalog_from_tools as catalog_from_tools  # re-exported
from maitred.gateway.catalogs import join_upstreams
from maitred.gateway.config import GatewayConfig
from maitred.gateway.finding import FIND_TOOLS as FIND_TOOLS  # re-exported: used from here
from maitred.gateway.finding import FIND_TOOLS_DESCRIPTION as FIND_TOOLS_DESCRIPTION
from maitred.gateway.finding import answer_for, per_need
from maitred.gateway.listings import holder_id
from maitred.gateway.pins import PinGuard, guard_at_start
from maitred.gateway.scan import warn_at_start
from maitred.log.base import DecisionLog, open_log
from maitred.pipeline import Pipeline
from maitred.recall.base import Candidate, Cutoff
from maitred.skills.model import Catalog
from maitred.state.registry import open_provider
from maitred.state.snapshot import Snapshot, StateProvider

#: the text of a listing turn in the decision log (it is no user's message)
LIST_TEXT = "tools/list"
#: the code of a task request refused: no task with that id is the caller's to see now
TASK_NOT_FOUND = "TASK_NOT_FOUND"


@dataclass(frozen=True)
class TaskOrigin:
    """Who made one task, and with what call (what :meth:`Gatekeeper.task_access` decides on).

    Attributes:
        tenant, account: its creator's.
        subject: the creator's credential's subject (a JWT's ``sub``; ``""``: none, a static
            token or stdio).
        call: the tool call that made it (its tool and arguments).
    """

    tenant: str
    account: str
    subject: str
    call: ToolCall


def state_fingerprint(snapshot: Snapshot) -> str:
    """A hash of what a snapshot says (values, missing keys, their dates, the source's
    version and whether the account exists), without when it was taken: two reads of state
    that did not change have the same one, whatever the provider puts in ``as_of``."""
    data = snapshot.to_json(with_hash=False)
    del data["as_of"]
    return content_hash(data)


class EveryTool:
    """The "recall" of a listing: every tool of the catalog, in its order, score 1.

    A listing that leaves tools out (held back: :mod:`maitred.gateway.pins`; a shadow
    session offered what ``find_tools`` disclosed) narrows it with the turn's
    :class:`~maitred.context.CallContext` scope, passed with that turn alone.
    """

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.name = "mcp-list"

    def rank(self, text: str, k: int) -> list[Candidate]:
        return [Candidate(s.name, i + 1, 1.0) for i, s in enumerate(self.catalog.skills[:k])]


class GatewayEngines:
    """The engines of one gateway, shared by all its sessions (see the module docstring).

    Args:
        engine: lists and checks, over the enforced catalog (it owns and closes the log).
        owners: tool name -> the upstream that lists it.
        finder: routes ``find_tools`` needs over the same catalog (``find_tools`` mode only).
        shadow: an engine over the full contracts, when some rules run in shadow mode.
        pins: the reviewed tool definitions, when the config names a pin file.
        sidecars: upstream name -> its sidecar as read (for its resources' and prompts'
            contracts, :mod:`maitred.gateway.surfaces`).
    """

    def __init__(
        self,
        engine: Maitred,
        owners: Mapping[str, str],
        *,
        finder: Maitred | None = None,
        shadow: Maitred | None = None,
        pins: PinGuard | None = None,
        sidecars: Mapping[str, ToolContracts] | None = None,
    ) -> None:
        self.engine = engine
        self.pins = pins
        self.sidecars = dict(sidecars or {})
        self.owners = dict(owners)
        self.finder = finder
        self.shadow = shadow
        #: some exit predicate has a freshness bound, so time alone can change a verdict and
        #: the watch may never skip a session whose account's state looks the same
        self._named: tuple[object, tuple[str, ...], frozenset[str]] | None = None
        self.timed = any(
            p.max_age_s is not None for s in engine.catalog for p in s.contract.exit_predicates
        )

    @classmethod
    def open(
        cls,
        config: GatewayConfig,
        tools: Mapping[str, Sequence[Mapping[str, Any]]],
        listed: Mapping[str, SurfaceNames] | None = None,
    ) -> GatewayEngines:
        """The engines for ``config`` over ``tools`` (upstream name -> what it listed at start;
        an upstream that did not answer is absent, and its tools join later: :meth:`grown`).

        ``listed``: what each upstream listed besides tools, which its sidecar's ``resources``
        and ``prompts`` keys must name (``None``: those keys are checked for form only).

        Raises:
            ConfigError: two upstreams list the same tool name (both named), a shadow rule
                names no rule, or an upstream lists nothing usable.
            ContractError: a sidecar is invalid.
        """
        full, enforced, owners, sidecars = join_upstreams(config, tools, listed)
        warn_at_start(config, tools)
        pins = guard_at_start(config, tools, owners)
        provider = open_provider(config.state, config.tables)
        log = open_log(config.log) if config.log else None
        try:
            return cls._build(config, (full, enforced, owners, sidecars), provider, log, pins)
        except BaseException:
            if log is not None:
                log.close()
            raise

    def grown(
        self,
        config: GatewayConfig,
        tools: Mapping[str, Sequence[Mapping[str, Any]]],
        listed: Mapping[str, SurfaceNames] | None = None,
    ) -> GatewayEngines:
        """New engines over ``tools`` (this catalog's upstreams and one that joined, or grew),
        sharing this one's state provider, decision log and pins; nothing here changes.

        The new catalog passes every check :meth:`open` makes (sidecars against what their
        upstreams list, one owner per tool name, keys and CEL types against the state), so a
        late upstream is held to what a start would have held it to. Its sessions are moved
        over by :meth:`Gatekeeper.rebase`. The new engines log under runs of their own.

        Raises:
            ConfigError, ContractError: as :meth:`open`; the caller keeps serving these engines.
        """
        joined = join_upstreams(config, tools, listed)
        return GatewayEngines._build(
            config, joined, self.engine.provider, self.engine.log, self.pins, owns_log=False
        )

    @classmethod
    def _build(
        cls,
        config: GatewayConfig,
        joined: tuple[Catalog, Catalog, dict[str, str], dict[str, ToolContracts]],
        provider: StateProvider,
        log: DecisionLog | None,
        pins: PinGuard | None,
        *,
        owns_log: bool = True,
    ) -> GatewayEngines:
        full, enforced, owners, sidecars = joined
        try:  # the same load-time checks as every engine: keys exist, predicates type-check
            check_against_state(full, provider)
        except ConfigError as exc:
            raise ConfigError(f"{config.source}: the upstreams' contracts: {exc}") from None
        finder = None
        if config.disclosure == "find_tools":
            find = config.find
            options = PipelineOptions(
                method=find.method,
                top_k=find.top_k,
                analyzer=find.analyzer,
                embedder=find.embedder,
            )
            try:
                pipeline = build_pipeline(enforced, provider, options, log=log)
            except ConfigError as exc:
                raise ConfigError(f"{config.source}: field 'find': {exc}") from None
            except EmptyCatalogError:  # no upstream serves yet: nothing can be found
                pipeline = _listing_pipeline(enforced, provider, log)
            _begin(pipeline, log, "mcp-find")
            finder = Maitred(pipeline)
        shadow = None
        if any(up.shadow for up in config.upstreams):
            shadow = _listing_engine(full, provider, log, "mcp-shadow", owns_log=False)
        engine = _listing_engine(enforced, provider, log, "mcp", owns_log=owns_log)
        return cls(engine, owners, finder=finder, shadow=shadow, pins=pins, sidecars=sidecars)

    @property
    def tool_names(self) -> tuple[str, ...]:
        """Every tool of the enforced catalog, in the upstreams' order."""
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
        """The tools held back now (their definitions are not the reviewed ones), and why."""
        return self.pins.held() if self.pins is not None else {}

    def recheck(self, keepers: Sequence[Gatekeeper]) -> list[Gatekeeper]:
        """One pass of the state watch over ``keepers``: those whose visible set changed.

        Sessions that never listed are skipped (they have nothing to be told), and so is a
        session already checked against the same state content since it last listed (unless
        some predicate has a freshness bound). Each account is read once, over every tool's
        keys; a provider that fails gives the gate's all-missing
        snapshot, on which every tool that reads state is hidden (fail closed). A session whose
        re-listing cannot be logged is named on stderr and left as it was (the next pass tries
        again), so one broken session never stops the others.
        """
        by_account: dict[str, list[Gatekeeper]] = {}
        for keeper in keepers:
            if keeper.listed is not None:
                by_account.setdefault(keeper.account, []).append(keeper)
        changed: list[Gatekeeper] = []
        for account, group in by_account.items():
            snapshot = self.engine.read_state(account, self.tool_names)
            seen = None if self.timed else state_fingerprint(snapshot)
            if seen is not None and self.pins is not None:  # a new hold is a change too
                seen = f"{seen}/{self.pins.generation}"
            # one decision per tool for the sessions of one account and one grant of scopes
            verdicts: dict[frozenset[str] | None, dict[str, bool]] = {}
            for keeper in group:
                try:
                    with keeper.lock:
                        shared = verdicts.setdefault(keeper.granted, {})
                        refreshed = keeper.refresh(snapshot, shared, seen)
                    if refreshed:
                        changed.append(keeper)
                except MaitredError as exc:
                    print(
                        f"maitred mcp: state watch: session {keeper.session.id} not re-listed "
                        f"({type(exc).__name__}: {exc})",
                        file=sys.stderr,
                    )
        return changed

    def run_for(self, engine: Maitred, tenant: str) -> str:
        """The run ``engine`` logs ``tenant``'s turns under (:meth:`Maitred.run_for`: its own
        run for no tenant, else one run per tenant, ``<run>-<tenant>``)."""
        return engine.run_for(tenant, fallback="mcp")

    def keeper(
        self,
        account: str,
        *,
        tenant: str = "",
        granted: frozenset[str] | None = None,
        principal: bool = False,
    ) -> Gatekeeper:
        """A new session for ``account`` (``tenant`` prefixes its id in the log) whose caller
        was granted the scopes ``granted`` (``None``: not said, over stdio), recorded in the
        log for its ``principal`` (a sessionless 2026-07-28 caller: one id per tenant,
        account, scopes and disclosure mode, :func:`~.listings.holder_id`) or else under a
        fresh id (one handshake-era MCP session)."""
        holder = (
            holder_id(tenant, account, granted, finds=self.finder is not None)
            if principal
            else None
        )
        return Gatekeeper(self, account, tenant=tenant, granted=granted, holder=holder)

    def close(self) -> None:
        for extra in (self.shadow, self.finder):
            if extra is not None:
                extra.close()  # flushes the shared log; the listing engine closes it
        self.engine.close()


def _begin(pipeline: Pipeline, log: DecisionLog | None, run: str) -> None:
    if log is not None:
        pipeline.begin_run(f"{run}-{uuid.uuid4().hex[:8]}")
        log.flush()


def _listing_pipeline(
    catalog: Catalog, provider: StateProvider, log: DecisionLog | None
) -> Pipeline:
    """Stages 1-4 where the "recall" is every tool (a catalog with none lists nothing)."""
    cutoff = Cutoff(top_k=max(1, len(catalog)))
    return Pipeline(catalog, EveryTool(catalog), provider, cutoff=cutoff, log=log)


def _listing_engine(
    catalog: Catalog, provider: StateProvider, log: DecisionLog | None, run: str, *, owns_log: bool
) -> Maitred:
    pipeline = _listing_pipeline(catalog, provider, log)
    _begin(pipeline, log, run)
    return Maitred(pipeline, owns_log=owns_log and log is not None)


class Gatekeeper:
    """Visibility and call decisions for one gateway session (one account, fixed for its life).

    Build it with :meth:`GatewayEngines.keeper`; the account comes from the launch (stdio) or
    from the authenticated token (HTTP), never from a request, and so do the scopes its caller was
    granted (:attr:`granted`), which every listing, check and ``find_tools`` passes with the
    call (:class:`~maitred.context.CallContext`) for the decision kernel's scope rule.
    """

    def __init__(
        self,
        engines: GatewayEngines,
        account: str,
        *,
        tenant: str = "",
        granted: frozenset[str] | None = None,
        holder: str | None = None,
    ) -> None:
        self.engines = engines
        self.engine = engines.engine
        self.account = account
        self.tenant = tenant
        self.granted = granted
        #: what every check of this session passes with the call: the caller's scopes
        self.context = CallContext(granted=granted)
        #: ``find_tools`` mode: the list is find_tools alone, its answers disclose
        self.finds = engines.finder is not None
        sid = uuid.uuid4().hex[:16]
        self.session = self.engine.session(
            account,
            id=holder or (f"{tenant}-{sid}" if tenant else sid),
            tenant=tenant,
            accumulates=self.finds,
        )
        self.shadow = engines.shadow
        self.shadow_session = self._shadow_session() if self.shadow else None
        self.listed: tuple[str, ...] | None = None
        self._listed_as_set: tuple[tuple[str, ...], frozenset[str]] = ((), frozenset())
        #: the state the watch last found ``listed`` right for (see :meth:`refresh`)
        self.checked: str | None = None
        #: one request of this session at a time (its listing and reads are its own);
        #: sessions run side by side, on the engine shared by all of them
        self.lock = threading.Lock()

    def rebase(self, engines: GatewayEngines) -> None:
        """Decide on ``engines`` from now on (the catalog grew: :meth:`GatewayEngines.grown`);
        call it holding :attr:`lock`, so a request of this session runs wholly on the old engines or
        wholly on the new ones.

        The session itself is kept -- its offer, its reads and writes -- since
        it is no engine's: with a log, the new engine reads the session's latest committed
        listing from the same log by (tenant, id), and every tool that listing showed is in
        the new catalog too. What the watch last found right is forgotten, so its next pass
        decides this session afresh, new tools included.
        """
        self.engines = engines
        self.engine = engines.engine
        self.shadow = engines.shadow
        if self.shadow is not None and self.shadow_session is None:
            self.shadow_session = self._shadow_session()
        self.checked = None

    def _shadow_session(self) -> Any:
        assert self.shadow is not None
        return self.shadow.session(
            self.account,
            id=f"{self.session.id}-shadow",
            tenant=self.tenant,
            accumulates=self.finds,
        )

    @property
    def tool_names(self) -> tuple[str, ...]:
        return self.engines.tool_names

    def upstream_of(self, name: str) -> str:
        """The upstream that lists ``name`` (``""``: none does)."""
        return self.engines.owners.get(name, "")

    def _offerable(self) -> tuple[str, ...]:
        """The tools a listing may show: none held back."""
        held = self.engines.held()
        if not held:
            return self.tool_names
        return tuple(n for n in self.tool_names if n not in held)

    def visible(self) -> tuple[str, ...]:
        """The tools this session may see now (a logged turn), in the upstreams' order.

        In ``find_tools`` mode the list is ``find_tools`` alone (nothing is decided, nothing
        logged): what ``find_tools`` answers is disclosed in its results, never listed.
        """
        if self.finds:
            self.listed = (FIND_TOOLS,)
            return self.listed
        scope = self._offerable() if self.engines.held() else None
        exposed: tuple[str, ...] = ()
        if scope is None or scope:
            if self.shadow is not None and self.shadow_session is not None:
                self._listing(self.shadow, scope, self.shadow_session)
            exposed = self._listing(self.engine, scope, self.session)
        self.listed = exposed
        self.checked = None  # listed on state the watch has not seen
        return exposed

    def _listing(
        self, engine: Maitred, scope: Collection[str] | None, session: Any
    ) -> tuple[str, ...]:
        context = CallContext(
            run_id=self.engines.run_for(engine, self.tenant),
            scope=None if scope is None else frozenset(scope),
            granted=self.granted,
        )
        return engine.turn(LIST_TEXT, session=session, context=context).exposed

    def would_list(
        self, snapshot: Snapshot, verdicts: dict[str, bool] | None = None
    ) -> tuple[str, ...]:
        """What :meth:`visible` would list on ``snapshot``, decided in memory and not logged
        (the state watch's probe; the executability gate's own per-tool verdict).

        ``verdicts`` (tool -> visible on this snapshot) is filled as tools are decided, so the
        sessions of one account share one decision per tool in a watch pass.
        """
        if self.finds:
            return (FIND_TOOLS,)
        at = self.engine.now()
        known = {} if verdicts is None else verdicts
        for name in self._offerable():
            if name not in known:
                known[name] = self.engine.executable(name, snapshot, at, context=self.context)
        return tuple(n for n in self._offerable() if known[n])

    def refresh(
        self,
        snapshot: Snapshot,
        verdicts: dict[str, bool] | None = None,
        seen: str | None = None,
    ) -> bool:
        """Re-list when ``snapshot`` would change what this session was last shown; True when
        the logged listing (on fresh state, as every listing) changed its visible set.

        ``seen`` is the snapshot's :func:`state_fingerprint` (``None``: never skip): a session
        already found right for that state, and not listed since, is not decided again.
        """
        before = self.listed
        if before is None or (seen is not None and seen == self.checked):
            return False
        if self.would_list(snapshot, verdicts) == before:
            self.checked = seen
            return False
        return self.visible() != before

    def check(
        self, name: str, arguments: Mapping[str, Any] | None, *, hold: Hold | None = None
    ) -> Decision:
        """May ``name(arguments)`` reach the upstream now? (logged, flushed, then returned).

        The call is decided against this session's latest *committed* listing, like every
        check (:meth:`Maitred.check`). A tool the session may know of but that its latest
        listing did not show (never listed, or hidden then) is first decided alone on fresh
        state, in memory (:meth:`_shows_now`): one still hidden is ``TOOL_NOT_OFFERED`` against
        that listing, its predicates unsaid, and one that has become visible since is listed
        afresh -- a logged turn over every tool -- and so offered; a tool the listing showed
        that cannot run now is ``TOOL_NOT_EXECUTABLE``; a tool held back because its definition
        is not the reviewed one is ``TOOL_DEFINITION_CHANGED`` (:mod:`maitred.gateway.pins`).

        ``hold`` is the gateway's own reason to refuse this one call (a rate limit reached,
        :mod:`maitred.gateway.rates`): the call is decided and logged with it, reading no
        state and listing nothing afresh; a definition hold on the same tool comes first.
        """
        call = ToolCall(name, dict(arguments or {}))
        if self.lists_first(name, hold) and self._shows_now(name):
            self.visible()
        held = self.engines.held()
        if held and self.finds:  # a tool never disclosed stays TOOL_NOT_OFFERED, unnamed
            disclosed = self.engine.offered(self.session)
            held = {n: h for n, h in held.items() if n in disclosed}
        if hold is not None and name not in held:
            held = {**held, name: hold}
        if self.shadow is not None and self.shadow_session is not None:
            self.shadow.check(call, session=self.shadow_session, held=held, context=self.context)
        return self.engine.check(call, session=self.session, held=held, context=self.context)

    def refuse(self, call: ToolCall, hold: Hold) -> Decision:
        """Log the gateway's own refusal of ``call`` (what may be stored of it), made before
        any check (:meth:`Maitred.refuse <maitred.Maitred.refuse>`): arguments that are not
        I-JSON, ``find_tools``' needs, ``find_tools`` past a rate. ``find_tools`` changes
        nothing; any other name is the rulebook's to say."""
        mutates = False if call.name == FIND_TOOLS else None
        return self.engine.refuse(call, hold, session=self.session, mutates=mutates)

    def lists_first(self, name: str, hold: Hold | None = None) -> bool:
        """Whether :meth:`check` of ``name`` may list afresh before it decides (a tool the
        session may know of that its latest listing did not show): a read of fresh state,
        then, if the tool would be shown now, a logged turn over every tool, far longer than
        the check itself."""
        listable = self.engines.knows(name) and not self.finds  # find_tools lists no tool
        return hold is None and listable and name not in self._listed_set()

    def _shows_now(self, name: str) -> bool:
        """Whether a listing now would show ``name``: stage 2's verdict on that tool alone,
        on a fresh read of its keys (not logged). A call by name to a tool still hidden is
        then refused against the latest listing, and never makes the gateway list every tool
        afresh (at 1,000 tools that listing is tens of milliseconds, a cost any caller could
        impose by naming hidden tools). A provider that fails gives the snapshot on which a
        tool that reads state is hidden, as a listing would."""
        snapshot = self.engine.read_state(self.account, (name,))
        return self.engine.executable(name, snapshot, context=self.context)

    def _listed_set(self) -> frozenset[str]:
        """:attr:`listed` as a set, built once per listing."""
        listed = self.listed or ()
        if self._listed_as_set[0] is not listed:
            self._listed_as_set = (listed, frozenset(listed))
        return self._listed_as_set[1]

    def approve(self, pending: Decision, answer: ApprovalAnswer, via: str = "") -> Decision:
        """Decide ``pending``'s call again with the person's ``answer`` (logged, flushed):
        the decision that lets the call run, or its refusal (:meth:`Maitred.approve`).

        The shadow run keeps only its own first decision on the call: the person answered the
        enforced run's question, not the shadow's."""
        return self.engine.approve(
            pending, answer, session=self.session, via=via, context=self.context
        )

    def task_access(
        self, method: str, task_id: str, task: TaskOrigin | None, subject: str = ""
    ) -> Decision:
        """May this session's principal send ``method`` (``tasks/get``, ``tasks/update``,
        ``tasks/cancel``) for the task ``task_id`` (made as ``task`` says; ``None``: no such
        task)? Decided again on every access, logged and flushed, then returned.

        Allowed only when the caller is the task's creator -- the same tenant, account and
        credential's ``subject`` -- *and* could make the task's call now: the engine's decision
        on that call for this caller on fresh state (:meth:`Maitred.recheck
        <maitred.Maitred.recheck>`: its scopes, the tool's exit predicates, its call policies;
        an approval rule that holds is no refusal here, the call having been approved when it
        was made). Otherwise ``TASK_NOT_FOUND``, in the very words of an id that does not
        exist, so a task's existence never leaks; the log says which it was.

        Raises:
            MaitredError: the decision could not be written.
        """
        call = ToolCall(method, {"taskId": task_id}, new_call_id())
        common: dict[str, Any] = {
            "mutates": method != "tasks/get",
            "now": self.engine.now(),
            "policy": "mcp-tasks",
            "session_id": self.session.id,
            "tenant": self.tenant,
        }
        again: Decision | None = None
        if task is None:
            why = "no such task"
        elif (task.tenant, task.account, task.subject) != (self.tenant, self.account, subject):
            why = "another principal's task"
        else:
            again = self.engine.recheck(task.call, session=self.session, context=self.context)
            why = f"its creator may not make its call {task.call.name} now: {again.message}"
        outcomes = again.outcomes if again is not None else ()
        if again is not None and (again.allow or again.code == APPROVAL_REQUIRED):
            said = f"{method} of task {task_id} by its creator, who may make its call now"
            decision = Decision(call, "allow", OK, said, outcomes=outcomes, **common)
        else:
            decision = Decision(
                call,
                "reject",
                TASK_NOT_FOUND,
                f"{method} of task {task_id}: {why}: {TASK_NOT_FOUND}",
                refusal_text(
                    TASK_NOT_FOUND,
                    "no task with that id is known to you",
                    undone="Nothing was done",
                    then="use the id a call of yours returned",
                ),
                outcomes=outcomes,
                **common,
            )
        log = self.engine.log
        if log is not None:
            log.write_decisions([decision])
            log.flush()
        return decision

    @property
    def in_process(self) -> bool:
        """Whether this session's checks touch only memory and local files (its engine's and
        the shadow's state and logs: :attr:`maitred.Maitred.in_process`)."""
        shadow = self.shadow
        return self.engine.in_process and (shadow is None or shadow.in_process)

    def mutates(self, name: str) -> bool:
        """Whether ``name`` may change the account's state (only then can a call to it change
        what is visible; a read's :meth:`after_call` touches the session in memory only)."""
        tool = self.engine.rulebook.tools.get(name)
        return tool is not None and tool.mutates

    def after_call(self, name: str, arguments: Mapping[str, Any] | None, result: Any) -> bool:
        """Record a call that succeeded upstream; True when the session's visible set changed.

        Only a mutating tool can change the account's state, so only then is the list
        re-evaluated (a logged turn); a session never listed has nothing to be told.
        """
        call = ToolCall(name, dict(arguments or {}))
        self.engine.record(call, result, session=self.session)
        if self.shadow is not None and self.shadow_session is not None:
            self.shadow.record(call, result, session=self.shadow_session)
        if not self.mutates(name) or self.listed is None:
            return False
        before = self.listed
        return self.visible() != before

    def find(self, need: str | Sequence[str]) -> dict[str, Any]:
        """Route each need (recall, gate, depth; a logged turn each, under this session) and
        answer with what they expose; the list does not change.

        ``need`` is one need (a string) or several, in order (:mod:`maitred.gateway.finding`
        reads them from the call). Every need is its own turn on the same path, with the same
        scope, holds and grant. Each committed turn discloses what it exposed to this
        session's holder (the session accumulates: see the module docstring); the shadow
        session, if any, is offered the same tools under the full contracts (a logged turn).

        Returns:
            The answer for the model -- for a string, the tools now available with their
            descriptions and input schemas, and the matching tools the gate blocked with the
            predicates' messages (:func:`~maitred.gateway.finding.answer_for`); for several
            needs, those per need, each tool under the first need that found it
            (:func:`~maitred.gateway.finding.per_need`).

        Raises:
            ConfigError: the gateway does not run in ``find_tools`` mode.
        """
        finder = self.engines.finder
        if finder is None or not self.finds:
            raise ConfigError("find_tools needs 'disclosure: find_tools' in the gateway config")
        needs = (need,) if isinstance(need, str) else tuple(need)
        if not needs:
            raise ValueError("Gatekeeper.find needs at least one need")
        held = self.engines.held()
        context = CallContext(
            run_id=self.engines.run_for(finder, self.tenant),
            scope=frozenset(n for n in self.tool_names if n not in held) if held else None,
            granted=self.granted,
        )
        turns = [finder.turn(n, session=self.session, context=context) for n in needs]
        exposed = {n for turn in turns for n in turn.exposed}
        if exposed and self.shadow is not None and self.shadow_session is not None:
            self._listing(self.shadow, exposed, self.shadow_session)
        catalog = finder.catalog
        answers = [
            answer_for(n, t, catalog, self.upstream_of) for n, t in zip(needs, turns, strict=True)
        ]
        return answers[0] if isinstance(need, str) else per_need(answers)
