"""One conversation: one principal's requests, each answered through the engine as a logged
decision.

A :class:`Conversation` is what every front end -- the MCP gateway, ``maitred serve``, a
library caller -- asks, for every kind of request one caller can make:

* **list** (:meth:`Conversation.visible`): the tools this principal may see now, a logged
  turn whose "recall" is every tool (:class:`~maitred.conversation.engines.EveryTool`), so the
  executability gate decides each one on one fresh state snapshot and the log keeps which
  were hidden and which predicate fired with the values it read. No model text is involved.
* **call** (:meth:`Conversation.check`, :meth:`Conversation.approve`,
  :meth:`Conversation.refuse`): decided against the conversation's latest *committed* listing,
  like every check (:meth:`Maitred.check <maitred.Maitred.check>`), and re-decided on fresh
  state. A tool that listing did not show is first decided alone on fresh state: one still
  hidden is ``TOOL_NOT_OFFERED``, its predicates unsaid (what was not shown stays unseen); one
  shown since is listed afresh and so offered. A name no upstream listed is ``TOOL_UNKNOWN``;
  then the arguments meet the schema and the call policies run, approval rules last. The
  decision is in the log (flushed) before it is returned.
* **route** (:meth:`Conversation.turn`, engines that route: ``maitred serve``): one message
  through recall -> executability gate -> depth -> menu, a logged turn whose menu is what the
  conversation is offered; a call is then decided against that turn, never by listing afresh.
* **find** (:meth:`Conversation.find`, ``disclosure: find_tools``): each need routed through
  recall -> executability gate -> depth (:meth:`Maitred.turn <maitred.Maitred.turn>`, a logged
  turn under the conversation), the answer carrying what the model needs to call each tool
  it exposes (:mod:`maitred.conversation.finding`). That turn *discloses* them: the
  conversation's turns accumulate (:attr:`Session.accumulates
  <maitred.actions.Session.accumulates>`), so its offer is everything its committed turns
  exposed, read from the log -- on any replica, after a restart. A tool the gate blocks is
  never disclosed, however well it matched, and one the principal's scopes do not reach is
  never named.
* **surfaces** -- resources, resource templates, prompts, skills
  (:meth:`Conversation.offer`, :meth:`Conversation.read`): what a list of one family offers
  this principal now, decided by the engines' surface contracts
  (:class:`~maitred.gate.surfaces.SurfaceContracts`, the same kernel on stage 2's state read;
  not logged, remembered per family so a change can be announced and a refusal explained),
  and each read of a resource or a skill's file, get of a prompt or a skill's entry, or
  subscription: decided on what the name resolves to (its canonical form, the skill file
  that would be served), on fresh state, logged and flushed, naming the principal like a
  call's decision (:meth:`origin`). After a mutating call, and on each pass of the watch
  (:meth:`Engines.recheck_surfaces <maitred.conversation.engines.Engines.recheck_surfaces>`),
  the families whose offer would now differ are found
  (:meth:`Conversation.recheck_surfaces`).
* **after a call** (:meth:`Conversation.after_call`): a successful call recorded in the
  session; after a mutating one the list is decided again, and a changed visible set is the
  front end's cue to say so (``notifications/tools/list_changed``).
* **the watch** (:meth:`Conversation.refresh`, driven by
  :meth:`Engines.recheck <maitred.conversation.engines.Engines.recheck>`).

**Who asks.** A conversation is for one :class:`~maitred.conversation.principal.Principal`,
fixed for its life: from the launch (stdio, a library caller) or from the authenticated
credential (HTTP), never from a request. Its granted scopes travel with every listing, check,
watch probe and discovery as :attr:`CallContext.granted <maitred.context.CallContext.granted>`,
so the decision kernel hides a tool whose contract requires a scope the credential lacks and
refuses a call to it (``INSUFFICIENT_SCOPE``); nothing here decides scopes itself.

**Whose record.** A conversation's session id in the log is its *holder*: on a 2026-07-28
connection the principal (:func:`~maitred.conversation.principal.holder_id`, the same id on
every replica and after a restart), else a fresh id per conversation -- or the session a front
end already keeps (``maitred serve``'s, by the client's session id, which lives in the log:
such a front end may build a conversation per request and keep nothing else).

**Held tools** (the gateway's pinned definitions): :meth:`Conversation.visible`,
:meth:`Conversation.would_list` and :meth:`Conversation.find` leave them out, and
:meth:`Conversation.check` passes the holds with the call, so the action gate refuses it
(``TOOL_DEFINITION_CHANGED``) and logs that like any decision. What is held can change while
serving, so it is read afresh by every listing and call.

**Shadow mode.** With a shadow engine (rules the config runs in shadow), every listing and
call is decided a second time under the full contracts, under its own run and session id
(``<session>-shadow``) in the same log, so the two can be compared turn by turn before a rule
is switched on.

**Catalogs that grow.** Engines are never changed in place: a front end builds new ones over
a larger catalog and moves each conversation over under its own lock (:meth:`Conversation.rebase`),
keeping its :class:`~maitred.actions.Session`, whose offer the new engine reads from the same log.

Nothing here knows a protocol: the gateway parses, authenticates and forwards; this decides.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from maitred.actions.model import OK, ApprovalAnswer, Decision, Hold, ToolCall, new_call_id
from maitred.actions.session import Session
from maitred.context import CallContext
from maitred.contract.surfaces import Family
from maitred.conversation.finding import FIND_TOOLS, answer_for, per_need
from maitred.conversation.principal import Principal
from maitred.conversation.tasks import (
    TASK_NOT_FOUND,
    TASKS_POLICY,
    TaskOrigin,
    allows,
    not_found_text,
    why_not,
)
from maitred.engine import Maitred
from maitred.errors import ConfigError
from maitred.gate.surfaces import SurfaceContracts, SurfaceView
from maitred.pipeline import Turn
from maitred.records import Message
from maitred.state.snapshot import Snapshot

if TYPE_CHECKING:
    from maitred.conversation.engines import Engines

#: the text of a listing turn in the decision log (it is no user's message)
LIST_TEXT = "tools/list"


#: how many (upstream, era) contexts a conversation keeps for its decisions
_ORIGINS_KEPT = 64


class Conversation:
    """Every decision for one principal's conversation (see the module docstring).

    Build it with :meth:`Engines.conversation
    <maitred.conversation.engines.Engines.conversation>`.

    Args:
        engines: the engines it decides with (shared by every conversation).
        principal: who asks, fixed for the conversation's life.
        holder: the session id it is recorded under (``None``: a fresh one).
        session: the session it continues (the front end's, of the principal's account and
            tenant); ``None``: a new one under ``holder``.

    Raises:
        ValueError: ``session`` is another account's or another tenant's.
    """

    def __init__(
        self,
        engines: Engines,
        principal: Principal,
        *,
        holder: str | None = None,
        session: Session | None = None,
    ) -> None:
        self.engines = engines
        self.engine = engines.engine
        self.principal = principal
        self.account = principal.account
        self.tenant = principal.tenant
        self.granted = principal.granted
        tenant, account = principal.tenant, principal.account
        #: what every check of this conversation passes with the call: the caller's scopes
        self.context = CallContext(granted=principal.granted, subject=principal.subject)
        #: ``find_tools`` mode: the list is find_tools alone, its answers disclose
        self.finds = engines.finder is not None
        if session is not None:
            if (session.account, session.tenant) != (account, tenant):
                raise ValueError(
                    f"session {session.id!r} is account {session.account!r} of tenant "
                    f"{session.tenant!r}, not the principal's ({account!r} of {tenant!r})"
                )
            self.session = session
        else:
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
        #: what its latest list of each surface family offered, and of what (:meth:`offer`)
        self.surface_offers = SurfaceView()
        #: :meth:`origin`'s contexts by (upstream, era), each with the context it extends
        self._origins: dict[tuple[str, str], tuple[CallContext, CallContext]] = {}
        #: one request of this session at a time (its listing and reads are its own);
        #: sessions run side by side, on the engine shared by all of them
        self.lock = threading.Lock()

    def rebase(self, engines: Engines) -> None:
        """Decide on ``engines`` from now on (the catalog grew: the front end built new engines);
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

        In ``find_tools`` mode the list is ``find_tools`` and ``call_tool`` (nothing is
        decided, nothing logged): what ``find_tools`` answers is disclosed in its results,
        never listed, and run through ``call_tool`` (or by name).
        """
        if self.finds:
            self.listed = (FIND_TOOLS, self.engines.call_tool)
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

    def turn(
        self,
        message: str | Message,
        *,
        run_id: str | None = None,
        menu_format: str | None = None,
        durable: bool = True,
    ) -> Turn:
        """Route one ``message`` for this principal (recall, executability gate, depth, menu: a
        logged turn of its session, :meth:`Maitred.turn <maitred.Maitred.turn>`), with its
        scopes; the menu it returns is what the session is offered once the turn is committed.

        ``run_id`` is the run it is logged under (``None``: the engines' run for the tenant),
        ``menu_format`` the format the menu is rendered and counted in (``None``: the
        engine's). With ``durable=False`` the turn is only buffered: the caller waits for its
        commit (``log.flush()``) before answering, and only then offers its menu
        (:meth:`Session.offer <maitred.actions.Session.offer>`).
        """
        context = CallContext(
            run_id=run_id or self.engines.run_for(self.engine, self.tenant),
            menu_format=menu_format,
            granted=self.granted,
            subject=self.principal.subject,
        )
        return self.engine.turn(message, session=self.session, durable=durable, context=context)

    def would_list(
        self, snapshot: Snapshot, verdicts: dict[str, bool] | None = None
    ) -> tuple[str, ...]:
        """What :meth:`visible` would list on ``snapshot``, decided in memory and not logged
        (the state watch's probe; the executability gate's own per-tool verdict).

        ``verdicts`` (tool -> visible on this snapshot) is filled as tools are decided, so the
        sessions of one account share one decision per tool in a watch pass.
        """
        if self.finds:
            return (FIND_TOOLS, self.engines.call_tool)
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
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        hold: Hold | None = None,
        era: str = "",
        trace_id: str = "",
        call_id: str = "",
        durable: bool = True,
    ) -> Decision:
        """May ``name(arguments)`` reach the upstream now? (logged, flushed, then returned).

        The call is decided against this session's latest *committed* listing, like every
        check (:meth:`Maitred.check`). A tool the session may know of but that its latest
        listing did not show (never listed, or hidden then) is first decided alone on fresh
        state, in memory (:meth:`_shows_now`): one still hidden is ``TOOL_NOT_OFFERED`` against
        that listing, its predicates unsaid, and one that has become visible since is listed
        afresh -- a logged turn over every tool -- and so offered; a tool the listing showed
        that cannot run now is ``TOOL_NOT_EXECUTABLE``; a tool held back because its definition
        is not the reviewed one is ``TOOL_DEFINITION_CHANGED`` (the gateway's pins).

        ``hold`` is the front end's own reason to refuse this one call (a rate limit
        reached): the call is decided and logged with it, reading no
        state and listing nothing afresh; a definition hold on the same tool comes first.
        ``era`` is the protocol revision the client spoke and ``trace_id`` the W3C trace id of
        its request (``""``: none); the decision names them, the principal's subject and the
        upstream the call goes to (:meth:`origin`). ``call_id``
        is the model provider's id of the call, if the front end has one. With
        ``durable=False`` the decision is only buffered: the caller waits for its commit
        before answering (``maitred serve``'s group commit).

        On engines that route (:attr:`Engines.routed
        <maitred.conversation.engines.Engines.routed>`), the offer is the session's latest
        committed routed turn, and nothing is listed afresh.
        """
        call = ToolCall(name, dict(arguments or {}), call_id)
        if self.lists_first(name, hold) and self._shows_now(name):
            self.visible()
        held = self.engines.held()
        if held and self.finds:  # a tool never disclosed stays TOOL_NOT_OFFERED, unnamed
            disclosed = self.engine.offered(self.session)
            held = {n: h for n, h in held.items() if n in disclosed}
        if hold is not None and name not in held:
            held = {**held, name: hold}
        context = self.origin(name, era, trace_id)
        if self.shadow is not None and self.shadow_session is not None:
            self.shadow.check(call, session=self.shadow_session, held=held, context=context)
        return self.engine.check(
            call, session=self.session, held=held, context=context, durable=durable
        )

    def origin(self, name: str, era: str = "", trace_id: str = "") -> CallContext:
        """The context a decision on a call to ``name`` is made with: the principal's scopes
        and subject, the upstream the call goes to, the client's protocol ``era``, the W3C
        ``trace_id`` of its request.

        Raises:
            ValueError: ``trace_id`` is not a W3C trace id (:class:`CallContext`).
        """
        upstream = self.upstream_of(name)
        if not upstream and not era:
            base = self.context
        else:
            key, context = (upstream, era), self.context
            kept = self._origins.get(key)
            if kept is None or kept[0] is not context:  # frozen: one per pair is kept
                if len(self._origins) >= _ORIGINS_KEPT:  # the era is the client's word: bounded
                    self._origins.clear()
                kept = self._origins[key] = (context, replace(context, upstream=upstream, era=era))
            base = kept[1]
        return replace(base, trace_id=trace_id) if trace_id else base

    def refuse(self, call: ToolCall, hold: Hold, *, era: str = "", trace_id: str = "") -> Decision:
        """Log the front end's own refusal of ``call`` (what may be stored of it), made before
        any check (:meth:`Maitred.refuse <maitred.Maitred.refuse>`): arguments that are not
        I-JSON, ``find_tools``' needs, ``find_tools`` past a rate, a ``call_tool`` call that
        names no call. ``find_tools`` and ``call_tool`` change nothing themselves; any other
        name is the rulebook's to say."""
        own = call.name == FIND_TOOLS or (bool(call.name) and call.name == self.engines.call_tool)
        mutates = False if own else None
        context = self.origin(call.name, era, trace_id)
        return self.engine.refuse(
            call, hold, session=self.session, mutates=mutates, context=context
        )

    def lists_first(self, name: str, hold: Hold | None = None) -> bool:
        """Whether :meth:`check` of ``name`` may list afresh before it decides (a tool the
        session may know of that its latest listing did not show): a read of fresh state,
        then, if the tool would be shown now, a logged turn over every tool, far longer than
        the check itself."""
        # find_tools lists no tool; engines that route offer their turns' menus, never a list
        listable = self.engines.knows(name) and not self.finds and not self.engines.routed
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

    def approve(
        self,
        pending: Decision,
        answer: ApprovalAnswer,
        via: str = "",
        *,
        era: str = "",
        trace_id: str = "",
    ) -> Decision:
        """Decide ``pending``'s call again with the person's ``answer`` (logged, flushed):
        the decision that lets the call run, or its refusal (:meth:`Maitred.approve`).

        The shadow run keeps only its own first decision on the call: the person answered the
        enforced run's question, not the shadow's."""
        context = self.origin(pending.call.name, era, trace_id)
        return self.engine.approve(pending, answer, session=self.session, via=via, context=context)

    # -- surfaces: resources, templates, prompts, skills ----------------------------------

    def _surfaces(self) -> SurfaceContracts:
        contracts = self.engines.surface_contracts
        if contracts is None:
            raise ConfigError(
                "this conversation's engines govern no resources, prompts or skills "
                "(Engines.govern was not called)"
            )
        return contracts

    def offer(self, family: Family, items: Sequence[str]) -> tuple[str, ...]:
        """Which of ``items`` -- what a list of ``family`` found (URIs, URI templates, prompt
        names, the URIs of skills' ``SKILL.md``) -- this principal is offered now: every
        contract that governs one executable by the kernel on one fresh state read for its
        account, its scopes included; what none governs as ``ungated`` says (a skill none
        governs is never offered). Not logged; remembered as this conversation's latest list of
        ``family``, for :meth:`read` to explain a refusal and :meth:`recheck_surfaces` to
        announce a change."""
        contracts = self._surfaces()
        offered = contracts.visible(self.account, family, items, self.granted)
        self.surface_offers.remember(family, items, offered)
        return offered

    def read(
        self, family: Family, name: str, call: ToolCall, *, era: str = "", trace_id: str = ""
    ) -> Decision:
        """May this principal read the resource (or skill file) ``name`` now -- or, for the
        families ``prompts`` and ``skills``, get that prompt or skill's entry? ``call`` is the
        request as the client sent it (its method and params), what the log stores.

        Decided on what ``name`` resolves to (its canonical form; under the gateway's own
        skills, the file that would be served: :meth:`served_as`), on fresh state, whatever any
        list offered; logged and flushed, then returned. A refusal names nothing this
        conversation was not offered (``RESOURCE_NOT_AVAILABLE``, ``PROMPT_NOT_AVAILABLE``,
        ``SKILL_NOT_AVAILABLE``); only what its latest list offered gets the reason. The
        decision names the principal -- tenant, account, the credential's subject -- the
        client's protocol ``era`` and the W3C ``trace_id`` of its request.

        Raises:
            MaitredError: the decision could not be made or logged (nothing may be served).
            ConfigError: the engines govern no surfaces.
        """
        contracts = self._surfaces()
        return contracts.check(
            self.session,
            family,
            name,
            call,
            self.surface_offers,
            self.granted,
            subject=self.principal.subject,
            era=era,
            trace_id=trace_id,
        )

    def served_as(self, uri: str) -> str:
        """The URI a read of ``uri`` is served under: the canonical URI of the gateway's own
        skill file it resolves to -- the file :meth:`read` decided on -- else ``uri`` as
        written (an upstream's resource goes to the upstream as the client spelled it)."""
        contracts = self.engines.surface_contracts
        return uri if contracts is None else contracts.served_as(uri)

    @property
    def listed_surfaces(self) -> frozenset[Family]:
        """The surface families this conversation has listed (only those can be told of a
        change)."""
        return frozenset(self.surface_offers.listed)

    def recheck_surfaces(self) -> tuple[Family, ...]:
        """After a call that may have changed the account's state: the families whose latest
        list would now offer something else, decided on one fresh state read (the offer is
        updated, so a change is announced once); empty when nothing was listed."""
        contracts = self.engines.surface_contracts
        if contracts is None or not self.surface_offers.listed:
            return ()
        changed = contracts.redecide(self.account, [self.surface_offers], self.granted)[0]
        return tuple(changed)

    # -- tasks ----------------------------------------------------------------------------

    def task_access(
        self, method: str, task_id: str, task: TaskOrigin | None, *, trace_id: str = ""
    ) -> Decision:
        """May this conversation's principal send ``method`` (``tasks/get``, ``tasks/update``,
        ``tasks/cancel``) for the task ``task_id`` (made as ``task`` says; ``None``: no such
        task)? Decided again on every access, logged and flushed, then returned
        (:mod:`maitred.conversation.tasks`).

        Allowed only when the caller is the task's creator -- the same tenant, account and
        credential's subject -- *and* could make the task's call now
        (:meth:`Maitred.check_unlogged <maitred.Maitred.check_unlogged>`); otherwise
        ``TASK_NOT_FOUND``, worded as for a made-up id. ``trace_id``: the W3C trace id of
        the request (``""``: none), stamped on the decision.

        Raises:
            MaitredError: the decision could not be written.
        """
        call = ToolCall(method, {"taskId": task_id}, new_call_id())
        who = (self.tenant, self.account, self.principal.subject)
        common: dict[str, Any] = {
            "mutates": method != "tasks/get",
            "now": self.engine.now(),
            "policy": TASKS_POLICY,
            "session_id": self.session.id,
            "tenant": self.tenant,
            "account": self.account,
            "subject": self.principal.subject,
            "trace_id": trace_id,
        }
        why = why_not(method, task_id, task, who)
        again: Decision | None = None
        if not why and task is not None:
            with self.lock:  # the session's reads, as a call of it would see them
                again = self.engine.check_unlogged(
                    task.call, session=self.session, context=self.context
                )
            why = f"its creator may not make its call {task.call.name} now: {again.message}"
        outcomes = again.outcomes if again is not None else ()
        if again is not None and allows(again):
            said = f"{method} of task {task_id} by its creator, who may make its call now"
            decision = Decision(call, "allow", OK, said, outcomes=outcomes, **common)
        else:
            said = f"{method} of task {task_id}: {why}: {TASK_NOT_FOUND}"
            decision = Decision(
                call, "reject", TASK_NOT_FOUND, said, not_found_text(), outcomes=outcomes, **common
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

        ``need`` is one need (a string) or several, in order (:mod:`maitred.conversation.finding`
        reads them from the call). Every need is its own turn on the same path, with the same
        scope, holds and grant; several needs are ranked together as one task
        (:func:`~maitred.recall.steps.rank_steps`: the task's servers weigh in, and each need
        brings tools the earlier ones did not). Each committed turn discloses what it exposed
        to this session's holder (the session accumulates: see the module docstring); the shadow
        session, if any, is offered the same tools under the full contracts (a logged turn).

        Returns:
            The answer for the model -- for a string, the tools now available with their
            descriptions and input schemas, and the matching tools the gate blocked with the
            predicates' messages (:func:`~maitred.conversation.finding.answer_for`); for several
            needs, those per need, each tool under the first need that found it
            (:func:`~maitred.conversation.finding.per_need`).

        Raises:
            ConfigError: the gateway does not run in ``find_tools`` mode.
        """
        finder = self.engines.finder
        if finder is None or not self.finds:
            raise ConfigError("find_tools needs 'disclosure: find_tools' in the gateway config")
        needs = (need,) if isinstance(need, str) else tuple(need)
        if not needs:
            raise ValueError("Conversation.find needs at least one need")
        held = self.engines.held()
        context = CallContext(
            run_id=self.engines.run_for(finder, self.tenant),
            scope=frozenset(n for n in self.tool_names if n not in held) if held else None,
            granted=self.granted,
        )
        if isinstance(need, str):
            turns = [finder.turn(need, session=self.session, context=context)]
        else:  # the needs of one task, ranked together (maitred.recall.steps)
            turns = finder.turn_steps(needs, session=self.session, context=context)
        exposed = {n for turn in turns for n in turn.exposed}
        if exposed and self.shadow is not None and self.shadow_session is not None:
            self._listing(self.shadow, exposed, self.shadow_session)
        catalog = finder.catalog
        answers = [
            answer_for(n, t, catalog, self.upstream_of, self.engines.call_tool)
            for n, t in zip(needs, turns, strict=True)
        ]
        return answers[0] if isinstance(need, str) else per_need(answers)
