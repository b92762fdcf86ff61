"""The server's use of the engine: one :class:`Maitred`, many tenants, sessions kept between calls.

:class:`Service` is synchronous and knows nothing of HTTP; the app (:mod:`maitred.serve.app`)
parses and authorises a request, then calls it on a worker thread.

* **Each request asks a conversation.** The service decides nothing itself: a turn and a check
  are asked of a :class:`~maitred.conversation.Conversation` built for the request, over the
  service's :class:`~maitred.conversation.Engines` (engines that route: a conversation's offer
  is its latest routed turn's menu), for the request's principal -- the tenant, the account
  (the request's for a turn, the session's for a check), the scopes the request says its user
  was granted, and the subject of the tenant's bearer token (``token:`` and the first 16 hex
  digits of its SHA-256, as the MCP gateway names a static token) -- continuing the session the
  client named. Every check's decision names that principal. The conversation holds nothing
  the log does not (sessions live in the log), so replicas stay interchangeable.

* **Requests run side by side.** The engine is called from the app's worker threads without a
  lock of this service's: what varies per request (the tenant's run, the menu format) is passed
  with the call as a :class:`~maitred.context.CallContext`, never set on the engine (see
  ARCHITECTURE.md, "Concurrency"). The one lock here guards this service's own session map, so
  two first turns of one new session id cannot make two sessions. The state fetch inside a call
  has its own deadline (``state_timeout_s``).
* **Every decision is committed before it is answered (group commit).** The engine call only
  *buffers* its decision (``durable=False``); after the lock is released the request waits in
  ``log.flush()`` for the commit that holds its decision. While one commit runs, the next
  requests are decided and buffered, and the commit after it carries them all, so concurrent
  requests share commits instead of queueing one each behind the lock (:mod:`maitred.log._sql`).
  A crash, ``kill -9`` included, therefore loses no decision a client has received. With
  ``log: {durability: async}`` the response goes out at once and the log's background thread
  commits within its age bound (``max_batch_seconds``, 1 s): faster, but a crash loses the
  decisions of about the last second, answered or not -- choose it only when the log is an
  audit trail you can afford to have gaps in.
* **Menus in the requested format.** The engine's pipeline keeps one
  :class:`~maitred.menu.render.MenuRenderer` per format (built at start, entries and token
  counts cached); a turn names its format in its context, so the menu handed back *and* the
  tokens logged are those of the format the client asked for.
* **One run per tenant, the tenant an identity.** At start each tenant gets a run in the
  decision log (``serve-<tenant>-<hex>``) recorded *with its tenant* (``runs.tenant``, stamped
  on every turn of the run), so ``GET /v1/funnel`` counts exactly that tenant's turns of this
  server process. Runs of earlier processes are reachable by id (``?run_id=``) when the log
  records them as the tenant's -- compared exactly, never by the run id's prefix, so ``acme``
  cannot read ``acme-eu``'s runs.
* **Sessions live in the log.** A session's offer is its latest turn committed to the log
  (:mod:`maitred.log.offers`); :class:`~maitred.serve.sessions.SessionStore` only caches
  sessions. A turn's menu becomes the cached offer after its commit succeeded (a 503 leaves
  the session as it was); a check reads the session's latest committed turn id and decides
  against the cache only when it is that turn (:meth:`Maitred.check`), so a restarted server,
  or another replica on the same log, decides a session's checks identically. With
  ``durability: async`` a turn is answered before its commit; a check of that session then
  commits it first (the offer is still the last *committed* turn). A new session's id is
  claimed in the store before its first turn commits (a concurrent first turn for another
  account is a 409) and released if that commit fails. Without a log, the store is the only
  memory, as before: a forgotten session is a 404.
* **The engine can be replaced while serving** (hot reload, :mod:`maitred.serve.reload`):
  :meth:`Service.swap` installs a new engine (its menu renderers built first); a request reads
  the engine once, at its start, so it runs wholly on the old engine or wholly on the new one.
  Sessions survive a swap (the names they were offered still apply; a tool the reload removed
  is then unknown to the action gate); the decision log is the same open log, and the tenants'
  run ids carry over.
* **Nothing is decided for a request that was refused.** Authentication, account ownership and
  session lookup happen before the engine is called, so a 401/403/404 leaves no decision in
  the log.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from maitred.actions.session import Session
from maitred.analytics.funnel import funnel
from maitred.conversation import Conversation, Engines, Principal
from maitred.engine import Maitred
from maitred.errors import MaitredError, UnstorableError
from maitred.log.base import DecisionLog
from maitred.log.storable import text_fault
from maitred.menu.render import RENDERERS
from maitred.records import Message
from maitred.serve.config import Durability, Limits, Tenant
from maitred.serve.metrics import Metrics
from maitred.serve.requests import CheckRequest, Problem, TurnRequest
from maitred.serve.sessions import SessionStore

_PROBE_ACCOUNT = "__maitred_readyz__"
T = TypeVar("T")


@dataclass(frozen=True)
class Check:
    """One readiness check: whether it passed, and what it saw."""

    ok: bool
    detail: str


class Service:
    """The engine behind the HTTP API.

    Args:
        engine: the engine (its catalog, state provider and decision log).
        tenants: tenant name -> :class:`~maitred.serve.config.Tenant`.
        limits: session bounds.
        durability: ``commit`` (answer after the decision's commit) or ``async``.
    """

    def __init__(
        self,
        engine: Maitred,
        tenants: Mapping[str, Tenant],
        limits: Limits,
        *,
        durability: Durability = "commit",
        require_scopes: bool = False,
    ) -> None:
        self.engine = engine
        #: the engines conversations are asked over (replaced with ``engine`` on a swap)
        self.engines = Engines(engine, routed=True)
        self.durability = durability
        self.require_scopes = require_scopes
        self.tenants = dict(tenants)
        self.sessions = SessionStore(limits.max_sessions, limits.session_idle_s)
        self.metrics = Metrics(lambda: len(self.sessions))
        self._lock = threading.Lock()  # the session map's first turns, and engine swaps
        _warm_renderers(engine)
        self.reload_error: str | None = None
        self.metrics.set_catalog(engine.catalog.version)
        self.run_ids: dict[str, str] = {}
        for name in sorted(self.tenants):
            run_id = f"serve-{name}-{uuid.uuid4().hex[:8]}"
            if engine.log is not None:
                engine.begin_run(run_id, tenant=name)
            self.run_ids[name] = run_id
        if engine.log is not None:
            engine.log.flush()

    # -- stages 1-4 ---------------------------------------------------------------------------

    def turn(self, tenant: Tenant, req: TurnRequest) -> dict[str, Any]:
        """Route one message in a session (created on first use) and remember its menu."""
        self._scopes_said(req.scopes)
        with self._lock:  # two first turns of one new session id must not make two sessions
            engines = self.engines
            engine = engines.engine
            session = self._session_for(tenant, req)
            new = session.offered is None and not session.turn_id  # opened by this turn
            self.sessions.put(tenant.name, session)  # a second first turn finds this one
        message = Message(
            id=uuid.uuid4().hex[:16],
            text=req.text,
            account=req.account,
            conversation=session.id,
        )
        conversation = self._conversation(engines, tenant, session, req.scopes)
        run_id = self.run_ids[tenant.name]
        try:
            turn = self._engine_call(
                lambda: conversation.turn(
                    message, run_id=run_id, menu_format=req.format, durable=False
                )
            )
        except Problem:
            if new:  # nothing of it reached the log: nor does the session
                self.sessions.forget(tenant.name, session)
            raise
        if engine.log is not None:
            try:
                self._commit(engine.log)
            except Problem:  # the turn is not in the log: the session is as it was
                if new:
                    self.sessions.forget(tenant.name, session)
                raise
            # committed (or, durability async, buffered: a check commits it first if need be)
            session.offer(turn.exposed, turn.turn_id)
        self.metrics.observe_turn(turn)
        out = turn.to_json()
        out["session_id"] = session.id
        out["cause"] = turn.record.cause
        return out

    def _session_for(self, tenant: Tenant, req: TurnRequest) -> Session:
        """The tenant's session of that id (cached, or from the log), or a new one."""
        session = self._known_session(tenant, req.session_id)
        if session is None:
            return self.engine.session(req.account, id=req.session_id, tenant=tenant.name)
        if session.account != req.account:
            raise Problem(
                409,
                "session_account_mismatch",
                f"session {req.session_id!r} belongs to another account; start a new "
                "session_id for this account",
                field="session_id",
            )
        return session

    def _conversation(
        self,
        engines: Engines,
        tenant: Tenant,
        session: Session,
        granted: frozenset[str] | None,
    ) -> Conversation:
        """The conversation one request asks: the tenant's ``session`` continued, for the
        principal of the session's account, the request's ``granted`` scopes and the tenant's
        token."""
        who = Principal(
            session.account, tenant=tenant.name, granted=granted, subject=subject_of(tenant)
        )
        return engines.conversation(who, session=session)

    def _scopes_said(self, scopes: frozenset[str] | None) -> None:
        """With ``require_scopes``, a request must say what its user was granted."""
        if scopes is None and self.require_scopes:
            raise Problem(
                422,
                "invalid_field",
                "field 'scopes' is required by this server (require_scopes: true): send the "
                "OAuth scopes the application's user was granted, [] for none",
                field="scopes",
            )

    # -- hot reload ---------------------------------------------------------------------------

    def swap(self, engine: Maitred) -> None:
        """Serve from ``engine`` from the next request on (same log, same run ids).

        Its menu renderers are built before the lock is taken, so requests wait only for the
        reference swap, never for the token counting of a new catalog.
        """
        _warm_renderers(engine)
        engines = Engines(engine, routed=True)
        with self._lock:
            self.engine = engine
            self.engines = engines
            self.reload_error = None
        self.metrics.reloads.labels("applied").inc()
        self.metrics.set_catalog(engine.catalog.version)

    def reload_rejected(self, error: str) -> None:
        """Record a reload that was refused (the live engine is unchanged)."""
        self.reload_error = error
        self.metrics.reloads.labels("rejected").inc()

    # -- stage 5 ------------------------------------------------------------------------------

    def _known_session(self, tenant: Tenant, session_id: str) -> Session | None:
        """The cached session, else one rebuilt from its latest committed turn, else None."""
        session = self.sessions.get(tenant.name, session_id)
        log = self.engine.log
        if session is not None or log is None:
            return session
        try:
            found = log.committed_offer(tenant.name, session_id)
        except MaitredError as exc:
            raise self._unavailable(exc) from None
        if found is None:
            return None
        session = self.engine.session(found.account, id=session_id, tenant=tenant.name)
        session.offer(found.offered, found.turn_id)
        self.sessions.put(tenant.name, session)
        return session

    def check(self, tenant: Tenant, req: CheckRequest, trace_id: str = "") -> dict[str, Any]:
        """Check one call against the session's latest committed menu, its arguments and the
        state; ``trace_id`` is the W3C trace id of the request (``""``: none), stored with the
        decision."""
        self._scopes_said(req.scopes)
        session = self._known_session(tenant, req.session_id)
        if session is None:
            raise Problem(
                404,
                "session_not_found",
                f"no session {req.session_id!r}: it was never started with POST /v1/turns, or "
                "it expired; send a turn with this session_id first",
                field="session_id",
            )
        engines = self.engines  # one engine for the whole request, even across a swap
        conversation = self._conversation(engines, tenant, session, req.scopes)
        decision = self._engine_call(
            lambda: conversation.check(
                req.name, req.arguments, call_id=req.call_id, trace_id=trace_id, durable=False
            )
        )
        self._commit(engines.engine.log)
        self.metrics.observe_decision(decision)
        return {
            "decision_id": decision.decision_id,
            "session_id": session.id,
            "turn_id": decision.turn_id or None,
            "allow": decision.allow,
            "verdict": decision.verdict,
            "code": decision.code,
            "message_for_model": decision.message_for_model,
            "message": decision.message,
            "fields": list(decision.fields),
            "tool_result": None if decision.allow else decision.tool_result(),
            "decision": decision.to_json(),
        }

    # -- analytics and health -----------------------------------------------------------------

    def funnel(self, tenant: Tenant, run_id: str | None) -> dict[str, Any]:
        """The funnel of the tenant's run in this process, or of an earlier run of its own."""
        log = self.engine.log
        if log is None:
            raise Problem(
                404,
                "no_decision_log",
                "this server keeps no decision log (set 'log' in its config)",
            )
        run = run_id or self.run_ids[tenant.name]
        try:
            return funnel(log, run, tenant=tenant.name).to_json()
        except MaitredError as exc:
            if "is not in the decision log" in str(exc):
                raise _no_run(run, text_fault(run)) from None
            raise self._unavailable(exc) from None

    def ready(self) -> dict[str, Check]:
        """Catalog loaded, decision log writable, state provider reachable (in that order)."""
        catalog = self.engine.catalog
        # a refused reload leaves the old catalog serving: reported here, but still ready
        rejected = f"; last reload rejected: {self.reload_error}" if self.reload_error else ""
        checks = {
            "catalog": Check(
                len(catalog) > 0,
                f"{len(catalog)} skills and tools, live catalog version {catalog.version}"
                + rejected,
            )
        }
        checks["log"] = self._log_check()
        checks["state"] = self._state_check()
        return checks

    def _log_check(self) -> Check:
        log = self.engine.log
        if log is None:
            return Check(True, "no decision log configured")
        try:
            log.flush()
            log.query("SELECT 1")
        except MaitredError as exc:
            return Check(False, f"{type(exc).__name__}: {exc}")
        path = Path(log.location)
        if "://" not in log.location and path.exists() and not os.access(path, os.W_OK):
            return Check(False, f"{log.location} is not writable by this process")
        return Check(True, log.location)

    def _state_check(self) -> Check:
        keys = sorted({k for skill in self.engine.catalog for k in skill.contract.reads})
        if not keys:
            return Check(True, "the catalog reads no state")
        try:
            self.engine.provider.fetch(_PROBE_ACCOUNT, keys)
        except Exception as exc:  # any failure means "not reachable", never a crash of /readyz
            return Check(False, f"{type(exc).__name__}: {exc}")
        return Check(True, f"answered for {len(keys)} keys")

    def _commit(self, log: DecisionLog | None) -> None:
        """Wait for the commit holding this request's decision (not in ``async`` mode)."""
        if log is None or self.durability == "async":
            return
        self.metrics.log_waiting.inc()
        start = time.perf_counter()
        try:
            log.flush()
        except MaitredError as exc:
            raise self._unavailable(exc) from None
        finally:
            self.metrics.log_waiting.dec()
            self.metrics.log_commit.observe(time.perf_counter() - start)

    def _engine_call(self, call: Callable[[], T]) -> T:
        try:
            return call()
        except UnstorableError as exc:  # the request's value, not the log: the client's error
            raise Problem(
                422,
                "invalid_field",
                f"the request holds a value the decision log cannot store: {exc}",
                field=_FIELDS.get(exc.column, exc.column),
            ) from None
        except MaitredError as exc:
            raise self._unavailable(exc) from None

    def _unavailable(self, exc: MaitredError) -> Problem:
        self.metrics.engine_errors.labels(type(exc).__name__).inc()
        return Problem(
            503,
            "engine_unavailable",
            f"the decision could not be made durable or computed: {type(exc).__name__}: {exc}",
        )


def subject_of(tenant: Tenant) -> str:
    """The subject of ``tenant``'s bearer token: ``token:`` and the first 16 hex digits of its
    SHA-256 (the MCP gateway's name for a static token; never the token)."""
    return f"token:{tenant.token_sha256[:16]}"


#: log column -> the request field that fills it (for an UnstorableError's 422)
_FIELDS = {
    "message_text": "text",
    "conversation_id": "session_id",
    "session_id": "session_id",
    "account_id": "account",
    "tool": "call.name",
    "decision_json": "call",
}


def _warm_renderers(engine: Maitred) -> None:
    """Build the engine's renderer of every menu format before it serves (a first request in a
    format then counts no tokens of the whole catalog)."""
    for fmt in RENDERERS:
        engine.pipeline.renderer_for(fmt)


def _no_run(run: str, fault: str = "") -> Problem:
    why = f": the id {fault}, so no run has it" if fault else ""
    return Problem(404, "run_not_found", f"no run {run!r} of this tenant in the decision log{why}")
