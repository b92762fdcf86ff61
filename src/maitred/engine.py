"""The one entry object: :class:`Maitred` joins the five stages over one catalog.

::

    engine = Maitred.open(["skills/", "tools.json"], "sqlite:///accounts.db", log="log.sqlite")
    session = engine.session("acc-1")
    turn = engine.turn("refund my last order", session=session)   # stages 1-4
    hand_to_model(turn.menu.payload())
    decision = engine.check(ToolCall("refund", {...}), session=session)  # stage 5
    if decision.allow:
        result = run_the_tool(...)
        engine.record(call, result, session=session)
    else:
        give_the_model(decision.tool_result())

* :meth:`Maitred.turn` is recall -> executability gate -> depth -> menu (a
  :class:`~maitred.pipeline.Pipeline`); with a ``session``, the session remembers the menu once
  the turn is committed, so a later :meth:`check` knows what was offered without being told. A
  turn that raised, or whose commit failed, never becomes the session's offer.
* **With a decision log, sessions live in the log.** What a session was offered is its latest
  turn committed to the log (:mod:`maitred.log.offers`, matched on the session's tenant and
  id); :meth:`check` reads that turn's id (one index probe) and uses the session's cached menu
  only while it is that turn's, loading the newer one otherwise -- so a session survives a
  restart and any process on the same log decides its checks alike. Without a log, the
  session's memory is the offer. A session whose turns *disclose* (``accumulates=True``: each
  turn is a result the model keeps, as the gateway's ``find_tools`` answers are) is offered
  everything its committed turns exposed, read from the log the same way.
* :meth:`Maitred.check` is the action gate (an :class:`~maitred.actions.ActionGate` over
  :meth:`Rulebook.from_catalog <maitred.actions.Rulebook.from_catalog>`): the same catalog, the same
  contracts. A call to anything the session's latest turn did not offer is
  ``TOOL_NOT_OFFERED``; a hidden tool named anyway is re-checked (``TOOL_NOT_EXECUTABLE``); the
  arguments meet the tool's schema; then its call policies run. The decision carries the
  session id and the turn id, so the log links the call to the turn that offered it.
* A caller that says which OAuth scopes it holds passes them with each call
  (``context=CallContext(granted=...)``, on :meth:`turn` and :meth:`check` alike): a tool
  whose contract requires another scope is hidden by the turn and refused by the check with
  ``INSUFFICIENT_SCOPE`` -- the kernel's one rule for both, decided before the offer and
  before any state is read.
* State for :meth:`check` comes from the engine's provider (the keys the tool's predicates
  declare, for the session's account) or, for rules over a whole document (the tau2 database),
  from ``state=``. Its ``account_found`` and a provider failure reach the action gate's
  decision kernel, so a call is refused exactly when stage 2 would hide the tool on that read
  (``TOOL_NOT_EXECUTABLE``; ``STATE_UNAVAILABLE`` for a provider that fails, and for every
  mutating call then).
* Interactive calls are durable when they return: with a log, :meth:`turn` and :meth:`check`
  flush it, so a decision a caller has seen is in the log. :meth:`run` batches instead. A
  server serving many callers passes ``durable=False`` and calls ``log.flush()`` itself before
  it answers, outside its own lock, so concurrent callers' decisions share one commit (the
  log's group commit, :mod:`maitred.log._sql`).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from maitred.actions.document import ActionState, SnapshotState
from maitred.actions.gate import ActionGate
from maitred.actions.model import (
    APPROVAL_REQUIRED,
    Approval,
    ApprovalAnswer,
    Decision,
    Hold,
    ToolCall,
    new_call_id,
)
from maitred.actions.packs import Pack, load_pack
from maitred.actions.rounds import SpentStates
from maitred.actions.rules import Rulebook, ToolRules
from maitred.actions.session import Session
from maitred.build import PipelineOptions, build_pipeline
from maitred.context import DEFAULT, CallContext
from maitred.contract.kernel import missing_scopes
from maitred.errors import ConfigError
from maitred.gate.executability import fetch_keys
from maitred.log.base import DecisionLog, open_log
from maitred.log.storable import check_ids
from maitred.pipeline import Pipeline, RunStats, Turn
from maitred.recall.dense import Progress
from maitred.recall.registry import make_recaller
from maitred.records import Message
from maitred.skills.catalog import load_catalog
from maitred.skills.model import Catalog
from maitred.state.answer import DEFAULT_CLOCK_SKEW_S
from maitred.state.memory import MemoryStateProvider
from maitred.state.snapshot import Snapshot, StateProvider, now

_STATE = "state."


class Maitred:
    """Decides, for every turn, what an agent is offered and, for every call, what may run.

    Build it with :meth:`open` (from paths and specs) or from parts. It holds one catalog (skills
    and tools with their contracts), one state provider, the pipeline's options and, optionally,
    one decision log shared by both gates.

    Args:
        pipeline: stages 1-4 over the catalog (its provider and log are the engine's).
        action_gate: stage 5 over the same catalog; defaults to one built from the catalog's
            contracts with the pipeline's clock and log.
        owns_log: close the log when the engine is closed (:meth:`open` sets it).
    """

    def __init__(
        self,
        pipeline: Pipeline,
        action_gate: ActionGate | None = None,
        *,
        owns_log: bool = False,
    ) -> None:
        self.pipeline = pipeline
        self.action_gate = action_gate or ActionGate(
            Rulebook.from_catalog(pipeline.catalog), clock=pipeline.clock, log=pipeline.log
        )
        self._owns_log = owns_log
        self._unlogged: ActionGate | None = None  # :meth:`check_unlogged`'s, built on first use
        self._tenant_runs: dict[str, str] = {}
        self._tenant_runs_lock = threading.Lock()
        self._spent = SpentStates(pipeline.log)

    @classmethod
    def open(
        cls,
        catalogs: Catalog | Sequence[str | Path],
        state: StateProvider | str | os.PathLike[str],
        options: PipelineOptions | None = None,
        *,
        tables: Mapping[str, Any] | None = None,
        log: DecisionLog | str | os.PathLike[str] | None = None,
        cache_dir: str | Path | None = None,
        settings: Mapping[str, Any] | None = None,
        progress: Progress | None = None,
        clock: Callable[[], float] | None = None,
        clock_skew_s: float = DEFAULT_CLOCK_SKEW_S,
    ) -> Maitred:
        """An engine from paths and specs.

        Args:
            catalogs: skill folders and tools files (or a loaded catalog).
            state: a provider, or a spec for :func:`maitred.state.open_provider`
                (``"sqlite:///accounts.db"``, ``"postgresql://..."``, ``"accounts.json"``, or a
                ``Path`` to a JSON file).
            options: recall method, cut-off, family mode, depth rule, menu format.
            tables: key root -> table, for a SQL provider spec.
            log: an open decision log, or a path / URL to open (closed with the engine).
            cache_dir: where recall indexes persist.
            settings: values for rule factories in tools files' contract sidecars.
            progress: ``progress(done, total)`` while the recall index is built.
            clock: the gates' "now" (unix seconds); the wall clock by default.
            clock_skew_s: how far a state key's date may run ahead of ``clock`` and still be
                current (:mod:`maitred.state.answer`; 300 s by default).
        """
        catalog = (
            catalogs
            if isinstance(catalogs, Catalog)
            else load_catalog(list(catalogs), settings=settings)
        )
        owns_log = isinstance(log, (str, os.PathLike))
        handle = open_log(log) if isinstance(log, (str, os.PathLike)) else log
        try:
            pipeline = build_pipeline(
                catalog,
                os.fspath(state) if isinstance(state, os.PathLike) else state,
                options,
                tables=tables,
                cache_dir=cache_dir,
                log=handle,
                progress=progress,
                clock=clock,
                clock_skew_s=clock_skew_s,
            )
        except BaseException:
            if owns_log and handle is not None:
                handle.close()
            raise
        return cls(pipeline, owns_log=owns_log)

    @classmethod
    def for_pack(
        cls,
        pack: Pack | str,
        settings: Mapping[str, Any] | None = None,
        *,
        log: DecisionLog | None = None,
    ) -> Maitred:
        """An engine over a policy pack's tools (``"tau2-airline"``), on the pack's clock.

        Its rules read a state document (``check(..., state=db)``); turns rank the pack's tools
        with BM25 and read no account state.
        """
        found = load_pack(pack) if isinstance(pack, str) else pack
        catalog = found.catalog(settings)
        clock = found.now(settings) or now
        pipeline = Pipeline(
            catalog,
            make_recaller("bm25", catalog),
            MemoryStateProvider({}),
            log=log,
            clock=clock,
        )
        rulebook = Rulebook.from_catalog(catalog, found.name, found.settings(settings))
        return cls(pipeline, ActionGate(rulebook, clock=clock, log=log))

    # -- what it holds ------------------------------------------------------------------------

    @property
    def catalog(self) -> Catalog:
        return self.pipeline.catalog

    @property
    def provider(self) -> StateProvider:
        return self.pipeline.executability_gate.provider

    @property
    def log(self) -> DecisionLog | None:
        return self.pipeline.log

    @property
    def rulebook(self) -> Rulebook:
        return self.action_gate.rulebook

    @property
    def in_process(self) -> bool:
        """Whether a decision touches only this process's memory and local files: the state
        provider and the log (when there is one) each say so with ``in_process = True``
        (memory and JSON state, SQLite state and logs). A provider or log that does not say
        so may wait on a network, so an adapter on an event loop decides on a worker thread
        instead (the gateway does: :meth:`maitred.gateway.calls.CallPath._decide`)."""
        log = self.log
        return _in_process(self.provider) and (log is None or _in_process(log))

    def now(self) -> float:
        """The gates' clock (unix seconds)."""
        return self.pipeline.clock()

    def read_state(self, account: str, names: Sequence[str]) -> Snapshot:
        """One batched read of every key ``names``' exit predicates declare, for ``account``
        (stage 2's read; a provider that fails gives the all-missing snapshot with the
        provider-error marker, on which the kernel hides every tool that reads state)."""
        return self.pipeline.executability_gate.fetch(account, names)[0]

    def executable(
        self,
        name: str,
        snapshot: Snapshot,
        now: float | None = None,
        *,
        context: CallContext = DEFAULT,
    ) -> bool:
        """Whether the kernel finds ``name`` executable on ``snapshot`` at ``now`` (the engine's
        clock by default) for the caller of ``context`` (its granted scopes): stage 2's
        verdict, not logged (the gateway's state watch probes with it before it re-lists)."""
        at = self.now() if now is None else now
        gate = self.pipeline.executability_gate
        return gate.decide(name, snapshot, at, context.granted).visible

    def run_for(self, tenant: str, *, fallback: str = "run") -> str:
        """The run this engine logs ``tenant``'s turns under: ``""`` (its own run) for no
        tenant, else one run per tenant, ``<run>-<tenant>``, recorded with the tenant on first
        use, so every turn and decision of a tenant's sessions is stored with that tenant and
        found again by the session's checks (``fallback`` stands for ``<run>`` while the engine
        has begun no run of its own). A turn of a session with a tenant and no ``run_id`` in
        its context is logged under it."""
        if not tenant:
            return ""
        with self._tenant_runs_lock:
            run = self._tenant_runs.get(tenant)
            if run is None:
                base = self.pipeline.run_id or fallback
                run = self.begin_run(f"{base}-{tenant}", tenant=tenant)
                self._tenant_runs[tenant] = run
        return run

    def begin_run(self, run_id: str | None = None, *, tenant: str = "") -> str:
        """Record a run in the log and return its id, without making it the engine's own run:
        a caller that serves several runs at once (the service: one per tenant) names the run
        in each turn's :class:`~maitred.context.CallContext`."""
        return self.pipeline.begin_run(run_id, tenant=tenant, current=False).run_id

    def session(
        self,
        account: str,
        *,
        id: str | None = None,
        context: Mapping[str, Any] | None = None,
        tenant: str = "",
        accumulates: bool = False,
    ) -> Session:
        """A conversation for ``account`` (what it is offered, reads and writes).

        With a log, a session id that already has committed turns (for ``tenant``) continues
        that session: its checks are decided against its latest committed turn -- or, when
        ``accumulates`` (its turns disclose), against everything its committed turns exposed.
        """
        return Session(
            id=id or uuid.uuid4().hex[:16],
            context=dict(context or {}),
            account=account,
            clock=self.pipeline.clock,
            tenant=tenant,
            accumulates=accumulates,
        )

    # -- stages 1-4 ---------------------------------------------------------------------------

    def turn(
        self,
        message: str | Message,
        *,
        session: Session | None = None,
        account: str | None = None,
        id: str | None = None,
        durable: bool = True,
        context: CallContext = DEFAULT,
    ) -> Turn:
        """Route one message: recall, executability gate, depth, menu (logged, then flushed).

        Args:
            message: the user's message (or a :class:`~maitred.Message`).
            session: the conversation; its account is used, the turn is logged under its id
                (``conversation_id``) and, once committed, its menu becomes the session's offer.
            account: whose state the gate reads, when no session is given.
            id: the message id (unique within the run); a fresh one by default.
            durable: flush the log before returning; False leaves the turn buffered, and the
                caller must ``log.flush()`` before anyone sees it. With a log, the session is
                then left as it was: once that flush has returned, the caller makes the turn
                the offer with ``session.offer(turn.exposed, turn.turn_id)`` (a failed
                commit must not change the session).
            context: what is particular to this request (run, menu format, scope);
                see :class:`~maitred.context.CallContext`.
        """
        message = self._message(message, session, account, id)
        if session is not None and session.tenant and not context.run_id and self.log is not None:
            # logged with its tenant, where the session's checks look for it
            context = replace(context, run_id=self.run_for(session.tenant))
        check_ids(  # a bad id is the caller's error, refused before any work
            f"turn {message.id!r}",
            {"message_id": message.id, "account_id": message.account,
             "conversation_id": message.conversation},
        )  # fmt: skip
        turn = self.pipeline.route(message, context)  # raises: the session is unchanged
        if self.log is not None:
            if not durable:
                return turn
            self.log.flush()  # raises: the turn is not in the log, nor the session's offer
        if session is not None and self.log is not None and session.accumulates:
            session.offered, session.turn_id = None, ""  # the union is read from the log
        elif session is not None:
            session.offer(turn.exposed, turn.turn_id)
        return turn

    def turn_steps(
        self,
        needs: Sequence[str],
        *,
        session: Session | None = None,
        account: str | None = None,
        context: CallContext = DEFAULT,
    ) -> list[Turn]:
        """Route the needs of one task, ranked together (:meth:`Pipeline.route_steps`): a
        turn per need, in order, logged, then flushed once.

        What :meth:`turn` does for one message it does here for each need (ids are fresh;
        with a session its account is used and its offer follows the last turn, or, for a
        session whose turns disclose, is read from the log).
        """
        messages = [self._message(n, session, account, None) for n in needs]
        if session is not None and session.tenant and not context.run_id and self.log is not None:
            context = replace(context, run_id=self.run_for(session.tenant))
        for m in messages:
            check_ids(
                f"turn {m.id!r}",
                {"message_id": m.id, "account_id": m.account, "conversation_id": m.conversation},
            )
        turns = self.pipeline.route_steps(messages, context)
        if self.log is not None:
            self.log.flush()
        if session is not None and self.log is not None and session.accumulates:
            session.offered, session.turn_id = None, ""
        elif session is not None and turns:
            session.offer(turns[-1].exposed, turns[-1].turn_id)
        return turns

    @staticmethod
    def _message(
        message: str | Message, session: Session | None, account: str | None, id: str | None
    ) -> Message:
        """The message to route, tied to the session's account and id."""
        if isinstance(message, str):
            who = session.account if session is not None else account
            if not who:
                raise ConfigError("turn() needs an account: pass session= or account=")
            conversation = session.id if session is not None else ""
            return Message(
                id=id or uuid.uuid4().hex[:16], text=message, account=who, conversation=conversation
            )
        if session is None:
            return message
        if message.account != session.account:
            raise ConfigError(
                f"message {message.id!r} is for account {message.account!r}, but the session "
                f"is for {session.account!r}"
            )
        if not message.conversation:
            return replace(message, conversation=session.id)
        if message.conversation != session.id:
            raise ConfigError(
                f"message {message.id!r} is for conversation {message.conversation!r}, but the "
                f"session is {session.id!r}; leave Message.conversation empty or use the "
                "session's id"
            )
        return message

    def run(
        self,
        messages: Iterable[Message],
        *,
        progress: Callable[[int], None] | None = None,
        run_id: str | None = None,
        batch: int = 256,
    ) -> RunStats:
        """Route many messages into the log, ``batch`` at a time (see :meth:`Pipeline.run`;
        the log commits at least once a second)."""
        return self.pipeline.run(messages, progress=progress, run_id=run_id, batch=batch)

    # -- stage 5 ------------------------------------------------------------------------------

    def check(
        self,
        call: ToolCall | Mapping[str, Any],
        *,
        session: Session,
        state: ActionState | Snapshot | Mapping[str, Any] | None = None,
        durable: bool = True,
        approval: Approval | None = None,
        held: Mapping[str, Hold] | None = None,
        context: CallContext = DEFAULT,
    ) -> Decision:
        """May this call run now? Allow, or reject with a code the model can act on.

        Args:
            call: the call (or ``{"name", "arguments"}``).
            session: the conversation the call came from (what it read; what it was offered
                is, with a log, its latest committed turn there -- see :meth:`_offer`).
            state: the state document the tool's rules read; by default the keys its
                predicates declare are fetched from the engine's provider for the session's
                account.
            durable: flush the log before returning (see :meth:`turn`).
            approval: a person's answer to an earlier ``APPROVAL_REQUIRED`` decision on this
                call (use :meth:`approve`).
            held: tools the caller holds back now, for a reason outside the contracts (the
                gateway's changed tool definitions): a call to one is refused with the
                :class:`~maitred.actions.model.Hold`'s code, decided and logged like any.
            context: what is particular to this request; its ``granted`` scopes are decided
                by the same kernel rule as at stage 2 (``INSUFFICIENT_SCOPE``, before the
                offer, reading no state); see :class:`~maitred.context.CallContext`.
        """
        tc = call if isinstance(call, ToolCall) else _tool_call(call)
        check_ids(f"a call of session {session.id!r}",
                  {"session_id": session.id, "account_id": session.account})  # fmt: skip
        if not tc.id:  # the logged call id is never empty: one the client can quote back
            tc = dataclasses.replace(tc, id=new_call_id())
        offered, turn_id = self._offer(session)
        if session.accumulates:  # the decision names the turn that disclosed the tool
            turn_id = session.offered_by.get(tc.name, turn_id)
        tool = self.rulebook.tools.get(tc.name)
        src: ActionState | Snapshot | Mapping[str, Any] | None = state
        refused_early = (held is not None and tc.name in held) or (
            tool is not None and bool(missing_scopes(tool.tool.contract, context.granted))
        )
        if state is None and tool is not None and not refused_early:
            src = self._fetch(tool, session.account)  # a held or out-of-scope call reads nothing
        decision = self.action_gate.check(
            tc,
            src if src is not None else {},
            session,
            offered=offered,
            turn_id=turn_id,
            approval=approval,
            held=held,
            granted=context.granted,
            origin=context,
        )
        if durable and self.log is not None:
            self.log.flush()
        return decision

    def check_unlogged(
        self,
        call: ToolCall,
        *,
        session: Session,
        context: CallContext = DEFAULT,
    ) -> Decision:
        """The action gate's decision on ``call`` for ``session``'s caller now, on fresh state,
        **not logged**: the caller logs its own decision on what it was asked, carrying this
        one's code and outcomes (the gateway's task access: may the principal that made a call
        still make it?). Decided as :meth:`check` decides -- the caller's scopes, the tool's
        exit predicates, its arguments, its call policies -- but against no offer (the call was
        offered and made before), and with no approval given (an approval rule that holds is
        ``APPROVAL_REQUIRED``, every other rule having passed).
        """
        tool = self.rulebook.tools.get(call.name)
        lacking = tool is not None and bool(missing_scopes(tool.tool.contract, context.granted))
        state: SnapshotState | Mapping[str, Any] = {}
        if tool is not None and not lacking:  # a call out of scope reads nothing, as in check
            state = self._fetch(tool, session.account)
        if self._unlogged is None or self._unlogged.rulebook is not self.rulebook:
            self._unlogged = ActionGate(self.rulebook, clock=self.pipeline.clock, log=None)
        return self._unlogged.check(call, state, session, granted=context.granted)

    def refuse(
        self,
        call: ToolCall,
        hold: Hold,
        *,
        session: Session,
        durable: bool = True,
        mutates: bool | None = None,
        context: CallContext = DEFAULT,
    ) -> Decision:
        """Log the refusal of a call its adapter answers before the gate can be asked (the
        gateway: arguments that are not I-JSON, ``find_tools``' needs, ``find_tools`` past a
        rate), so that it has a decision id and a row like every refusal
        (:meth:`ActionGate.refuse <maitred.actions.gate.ActionGate.refuse>`). The decision
        names the session's latest committed turn, as a check's does.

        ``call`` is what may be stored: arguments the log cannot hold are the caller's to
        withhold (and to say so in the hold's ``reason``).
        """
        check_ids(f"a call of session {session.id!r}",
                  {"session_id": session.id, "account_id": session.account})  # fmt: skip
        _, turn_id = self._offer(session)
        decision = self.action_gate.refuse(
            call, hold, session, turn_id=turn_id, mutates=mutates, origin=context
        )
        if durable and self.log is not None:
            self.log.flush()
        return decision

    def approve(
        self,
        pending: Decision,
        answer: ApprovalAnswer,
        *,
        session: Session,
        via: str = "",
        durable: bool = True,
        context: CallContext = DEFAULT,
    ) -> Decision:
        """Decide ``pending``'s call again with a person's ``answer`` (logged like any check).

        ``approve`` re-checks the call in full on fresh state with its approval rules
        satisfied: the result is the decision that lets the call run (or a rule's refusal,
        when the state changed meanwhile). ``decline`` / ``cancel`` is ``APPROVAL_DECLINED``.
        Either way the new decision names ``pending`` in ``approval.of``. ``context`` is the
        request's, as for :meth:`check` (the re-check keeps the caller's scopes).

        Raises:
            ConfigError: ``pending`` is not an ``APPROVAL_REQUIRED`` decision of ``session``.
        """
        if pending.code != APPROVAL_REQUIRED or pending.approval is not None:
            raise ConfigError(
                f"decision {pending.decision_id} is {pending.code}, not a pending "
                f"{APPROVAL_REQUIRED}: only a call that asked for approval can be approved"
            )
        if pending.session_id != session.id:
            raise ConfigError(
                f"decision {pending.decision_id} belongs to session {pending.session_id!r}, "
                f"not {session.id!r}"
            )
        given = Approval(pending.decision_id, answer, via)
        return self.check(
            pending.call, session=session, durable=durable, approval=given, context=context
        )

    def spend(self, key: str, *, session: Session, expires_at: float) -> bool:
        """Record the one use of a single-use round of ``session`` (a ``requestState`` its
        client brought back, :mod:`maitred.actions.rounds`): True the first time on any process
        sharing this engine's log (this process's memory without one), False after."""
        return self._spent.spend(
            key, tenant=session.tenant, session_id=session.id, expires_at=expires_at
        )

    def _offer(self, session: Session) -> tuple[frozenset[str], str]:
        """What ``session`` was offered, and by which turn (see the module docstring).

        Without a log, or for an offer that is a tool list rather than a logged turn (no
        ``turn_id``: the MCP gateway's), the session's memory. Otherwise the session's latest
        committed turn: the cached menu when it is that turn's, else the turn's menu read from
        the log (and cached). A cached turn not yet in the log (answered before its commit) is
        committed first. No committed turn, or one for another account: nothing offered.
        """
        log = self.log
        if log is None or (not session.turn_id and session.offered is not None):
            return session.offered or frozenset(), session.turn_id
        if session.accumulates:
            return self._disclosed(session, log)
        latest = log.committed_turn(session.tenant, session.id)
        if latest == session.turn_id and session.offered is not None:
            return session.offered, session.turn_id
        if session.turn_id and session.offered is not None and not log.has_turn(session.turn_id):
            # the session's own turn, answered before its commit (a server's async mode):
            # commit it now -- if that fails, so does the check -- and ask again
            log.flush()
            latest = log.committed_turn(session.tenant, session.id)
            if latest == session.turn_id:
                return session.offered, session.turn_id
        found = None if latest is None else log.committed_offer(session.tenant, session.id)
        if found is None or found.account != session.account:
            return frozenset(), ""
        session.offer(found.offered, found.turn_id)
        return found.offered, found.turn_id

    @staticmethod
    def _disclosed(session: Session, log: DecisionLog) -> tuple[frozenset[str], str]:
        """What a session whose turns disclose was offered: everything its committed turns
        exposed (with the turn that disclosed each, :attr:`Session.offered_by`), read again
        only when its latest committed turn is not the one the cached union was read at
        (another replica may have committed one since)."""
        latest = log.committed_turn(session.tenant, session.id)
        if latest is None:
            return frozenset(), ""
        if latest != session.turn_id or session.offered is None:
            session.offered_by = log.disclosed(session.tenant, session.id, session.account)
            session.offered = frozenset(session.offered_by)
            session.turn_id = latest
        return session.offered, session.turn_id

    def offered(self, session: Session) -> frozenset[str]:
        """What ``session`` was offered now, as :meth:`check` decides it (with a log: read
        from the log, :mod:`maitred.log.offers`)."""
        return self._offer(session)[0]

    def record(self, call: ToolCall | Mapping[str, Any], result: Any, *, session: Session) -> None:
        """Tell the session that an allowed call ran and succeeded (reads, writes, creations)."""
        tc = call if isinstance(call, ToolCall) else _tool_call(call)
        tool = self.rulebook.tools.get(tc.name)
        session.record(tc, result, self.rulebook.tracking, mutates=bool(tool and tool.mutates))

    def _fetch(self, tool: ToolRules, account: str) -> SnapshotState:
        """The keys ``tool``'s predicates declare, for ``account``, in one provider call.

        Read through stage 2's :func:`~maitred.gate.executability.fetch_keys` (the same check
        of the provider's answer, the same clock skew): the provider's snapshot is kept whole
        (its ``account_found``), and a provider that fails or answers something that is not
        state gives the all-missing snapshot with the provider-error marker and the error, so
        the action gate's kernel sees the cause stage 2 would see on the same read.
        """
        keys = set(tool.tool.contract.reads)
        for pred in tool.predicates:
            keys.update(
                k.removeprefix(_STATE) for k in pred.reads if k.startswith(_STATE) and "[" not in k
            )
        gate = self.pipeline.executability_gate
        snapshot, error = fetch_keys(
            self.provider, account, frozenset(keys), gate.clock, gate.clock_skew_s
        )
        return SnapshotState(snapshot, unavailable=error)

    # -- lifetime -----------------------------------------------------------------------------

    def close(self) -> None:
        """Flush the log, and close it when the engine opened it."""
        if self.log is not None:
            self.log.flush()
            if self._owns_log:
                self.log.close()

    def __enter__(self) -> Maitred:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _tool_call(data: Mapping[str, Any]) -> ToolCall:
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError('a tool call needs a "name" (string) and "arguments" (object)')
    args = data.get("arguments") or {}
    if not isinstance(args, Mapping):
        raise ConfigError(f"tool call {name!r}: arguments must be an object, got {args!r}")
    return ToolCall(name, dict(args), str(data.get("id", "")))


def _in_process(source: object) -> bool:
    """Whether a state provider or log declares it answers without a network round trip."""
    return getattr(source, "in_process", False) is True
