"""Rate limits per token, tenant and tool, for the gateway and the service (the ``limits`` library).

::

    rate_limits:
      per_token: 60/minute            # each bearer token's calls (the gateway only)
      per_tenant: 600/minute          # every token of one tenant together
      per_tool:                       # each tenant's calls to one tool
        send_email: 5/second; 100/hour
      strategy: moving-window         # moving-window | fixed-window | sliding-window-counter
      storage: memory                 # this process alone, or redis://127.0.0.1:6379/0 (shared)
      storage_timeout_s: 0.5          # a shared store slower than this counts as down

A rate is the ``limits`` library's notation: ``N/second`` (``minute``, ``hour``, ``day``),
``N per M seconds``, several joined with ``;`` (each must hold). Every key is optional; a
config without the block limits nothing.

**What counts.** Every request of a caller counts, whatever its outcome (a limit is on asking,
not on succeeding: a flood of refused calls costs the gateway its decisions all the same). The
scopes are consulted in the order ``per_token``, ``per_tenant``, ``per_tool``; the first one
exhausted refuses, and the scopes after it are not charged for that call. ``per_tool`` budgets
are kept per tenant (over stdio, where there is no tenant, per launch account), so one
tenant's calls never use up another's, and a caller who was never offered a tool cannot drain
its budget for those who were.

**The answer.** A refused call is ``RATE_LIMITED`` with ``retry_after_s``: whole seconds (at
least 1) until the exhausted budget has room again, read from the store's window (for the
moving window, when the oldest counted call leaves it). The gateway hands it to the model in
the one rejection payload (:class:`~maitred.actions.model.Rejection`) through a logged decision
(:meth:`Refusal.hold`); the service answers HTTP 429 with a ``Retry-After`` header.

**Across replicas.** ``storage: memory`` keeps the counts in this process; a Redis URL keeps
them in Redis, so every gateway (or service) process that names the same URL shares one budget
per key (the keys start with the component, ``mcp`` or ``serve``, so the two never share;
separate deployments on one Redis should use separate database numbers, ``redis://host/1``).
Windows are measured by each process's own clock: replicas need synchronised clocks.

**When the shared store is down** (it does not answer within ``storage_timeout_s``): a
mutating call fails closed, ``RATE_LIMIT_UNAVAILABLE`` ("the rate limit could not be
checked"), like every check of maitred that cannot decide. A read-only call is counted against
a budget of this process alone (the same rates, in memory), so a store outage neither stops
every read nor lets a runaway client loose: each replica still holds it to the limit, at most
the number of replicas times the limit in all. The outage and the recovery are reported once
each on stderr; the adapters count store failures in ``/metrics``.
"""

from __future__ import annotations

import hashlib
import math
import sys
import threading
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from limits import RateLimitItem, parse_many
from limits.storage import MemoryStorage, RedisStorage, Storage
from limits.strategies import STRATEGIES, RateLimiter

from maitred.actions.model import Hold, Rejection
from maitred.actions.refusals import rate_limited
from maitred.config_reader import ConfigReader, join

Scope = Literal["per_token", "per_tenant", "per_tool"]
#: every scope, in the order a call is charged
SCOPES: tuple[Scope, ...] = ("per_token", "per_tenant", "per_tool")
RATE_LIMITED = "RATE_LIMITED"
RATE_LIMIT_UNAVAILABLE = "RATE_LIMIT_UNAVAILABLE"
#: the ``limits`` strategies by name (``moving-window`` is the default: exact, and exact
#: retry-after)
STRATEGY_NAMES: tuple[str, ...] = tuple(sorted(STRATEGIES))
#: the URL schemes of a shared store (Redis, over TCP, TLS or a Unix socket)
REDIS_SCHEMES = ("redis", "rediss", "redis+unix")
_RATE_FORM = (
    "a rate such as '60/minute', '5/second' or '10 per 30 seconds' (several, each of which "
    "must hold: '5/second; 100/hour')"
)
_NOUN = {"per_token": "this token", "per_tenant": "this tenant", "per_tool": "this tool"}


@dataclass(frozen=True)
class Rate:
    """One configured rate: its text as written (``"5/second; 100/hour"``) and its items."""

    text: str
    items: tuple[RateLimitItem, ...]

    def __str__(self) -> str:
        return self.text


#: one budget a request is charged to: its scope, its rate, the key's parts
_Check = tuple[Scope, Rate, tuple[str, ...]]


@dataclass(frozen=True)
class RateLimitOptions:
    """A checked ``rate_limits`` block (see the module docstring for what each key means)."""

    per_token: Rate | None = None
    per_tenant: Rate | None = None
    per_tool: Mapping[str, Rate] = field(default_factory=dict)
    strategy: str = "moving-window"
    storage: str = "memory"
    storage_timeout_s: float = 0.5

    @property
    def shared(self) -> bool:
        """Whether the counts live outside this process (a Redis URL)."""
        return self.storage != "memory"

    @property
    def scopes(self) -> tuple[Scope, ...]:
        """The scopes that have a rate, in the order a request is charged."""
        given = (self.per_token is not None, self.per_tenant is not None, bool(self.per_tool))
        return tuple(s for s, on in zip(SCOPES, given, strict=True) if on)


def read_rate_limits(
    r: ConfigReader, value: Any, *, scopes: tuple[Scope, ...] = SCOPES, where: str = "rate_limits"
) -> RateLimitOptions | None:
    """Check a config's ``rate_limits`` block (``None``: absent, so nothing is limited).

    ``scopes`` are the scopes the component has (the service has one token per tenant, so no
    ``per_token``); the other keys are the same for both components.
    """
    if value is None:
        return None
    data = r.mapping(value, where)
    r.no_unknown(data, frozenset({*scopes, "strategy", "storage", "storage_timeout_s"}), where)
    rates = {
        s: read_rate(r, data[s], join(where, s))
        for s in ("per_token", "per_tenant")
        if data.get(s) is not None
    }
    tools = r.mapping(data.get("per_tool") or {}, join(where, "per_tool"))
    per_tool = {
        name: read_rate(r, text, join(join(where, "per_tool"), name))
        for name, text in tools.items()
    }
    strategy = data.get("strategy", "moving-window")
    if strategy not in STRATEGY_NAMES:
        r.fail(join(where, "strategy"), f"must be one of {list(STRATEGY_NAMES)}, not {strategy!r}")
    storage = r.string(data.get("storage", "memory"), join(where, "storage"))
    scheme = urllib.parse.urlparse(storage).scheme
    if storage in ("memory", "memory://"):
        storage = "memory"
    elif scheme not in REDIS_SCHEMES or not storage.split("://", 1)[-1]:
        r.fail(
            join(where, "storage"),
            f"must be 'memory' (counts kept in this process) or a Redis URL shared by every "
            f"replica (redis://127.0.0.1:6379/0, rediss://..., redis+unix:///path), not "
            f"{redacted(storage)!r}",
        )
    timeout = data.get("storage_timeout_s", 0.5)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        r.fail(
            join(where, "storage_timeout_s"),
            f"must be a positive number of seconds, not {timeout!r}",
        )
    return RateLimitOptions(
        per_token=rates.get("per_token"),
        per_tenant=rates.get("per_tenant"),
        per_tool=per_tool,
        strategy=strategy,
        storage=storage,
        storage_timeout_s=float(timeout),
    )


def read_rate(r: ConfigReader, value: Any, where: str) -> Rate:
    """One rate string, checked (the error names ``where`` and the accepted form)."""
    if not isinstance(value, str):
        r.fail(where, f"must be {_RATE_FORM}, not {value!r}")
    try:
        items = tuple(parse_many(value))
    except ValueError:
        r.fail(where, f"must be {_RATE_FORM}, not {value!r}")
    if any(item.amount < 1 for item in items):
        r.fail(where, f"allows no call at all ({value!r}); a rate's count must be at least 1")
    return Rate(value.strip(), items)


def unknown_tools(options: RateLimitOptions | None, known: frozenset[str]) -> list[str]:
    """The ``per_tool`` names that are no tool of ``known`` (a typo would limit nothing)."""
    return sorted(set(options.per_tool) - known) if options is not None else []


def redacted(url: str) -> str:
    """``url`` without its password (safe for messages and stderr)."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[-1]
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urllib.parse.urlunsplit(parts._replace(netloc=user + host))


def token_id(token: str) -> str:
    """A stable id of a bearer token for the limit's keys (never the token itself)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class Caller:
    """Whose budget a request is charged to.

    Attributes:
        token: an id of the credential (:func:`token_id` of a bearer token, or the launch
            account over stdio); ``""``: none, so ``per_token`` does not apply.
        tenant: the tenant; ``""``: none, so ``per_tenant`` does not apply and ``per_tool``
            is kept per token.
    """

    token: str = ""
    tenant: str = ""


@dataclass(frozen=True)
class Refusal:
    """Why a request was refused before anything was decided.

    Attributes:
        code: ``RATE_LIMITED`` or ``RATE_LIMIT_UNAVAILABLE``.
        scope: the exhausted scope (``None`` when the store could not be asked).
        rate: that scope's rate as configured (``""`` likewise).
        retry_after_s: whole seconds until the budget has room (``None``: unavailable).
        message: for the model (never names a tool, nor the store's address).
        reason: for people and the log (the scope, the rate, the store's error).
    """

    code: str
    scope: Scope | None
    rate: str
    retry_after_s: int | None
    message: str
    reason: str

    def hold(self) -> Hold:
        """The refusal as a :class:`~maitred.actions.model.Hold`, for the action gate to
        decide and log (the gateway)."""
        return Hold(self.code, self.message, self.reason, self.retry_after_s)

    def rejection(self, error: str = "rate_limited") -> Rejection:
        """The model-facing payload for a caller that logs no decision for it
        (:func:`maitred.actions.refusals.rate_limited`); the gateway logs its refusals
        through :meth:`hold` instead."""
        return rate_limited(self.code, self.message, self.retry_after_s, error=error)


@dataclass(frozen=True)
class Admission:
    """What :meth:`Limiter.admit` found: a refusal, or none; and whether the shared store
    failed (then a read-only request was counted by this process alone)."""

    refusal: Refusal | None = None
    store_error: str = ""


class Limiter:
    """The rate limits of one component (``mcp``: the gateway, ``serve``: the service).

    Safe to share between threads. With a shared store each :meth:`admit` asks it over the
    network (one round trip per configured scope), so an async caller runs it on a worker
    thread (:attr:`blocking`); the in-memory store answers at once.
    """

    def __init__(self, options: RateLimitOptions, component: str) -> None:
        self.options = options
        self.component = component
        self.store = _open_store(options)
        self._limiter = STRATEGIES[options.strategy](self.store)
        self._local: RateLimiter | None = None  # this process's own counts, while the store is down
        self._lock = threading.Lock()
        self._down = False

    @property
    def blocking(self) -> bool:
        """Whether :meth:`admit` waits on the network (a shared store)."""
        return self.options.shared

    @property
    def where(self) -> str:
        """The store, for messages (its password left out)."""
        return redacted(self.options.storage)

    def admit(self, caller: Caller, tool: str | None = None, *, mutates: bool = True) -> Admission:
        """Charge one request of ``caller`` (to ``tool`` when it is a call) to its budgets.

        Args:
            caller: whose budgets.
            tool: the tool called (``per_tool``); ``None`` for a request that calls none.
            mutates: whether the request may change state: when the shared store cannot be
                asked, a mutating one is refused (``RATE_LIMIT_UNAVAILABLE``) and any other is
                counted by this process alone.
        """
        checks = self._checks(caller, tool)
        if not checks:
            return Admission()
        try:
            refusal = self._charge(self._limiter, checks)
        except Exception as exc:  # the store failed: the limit cannot be decided there
            error = _describe(exc)
            self._report(error)
            if mutates:
                return Admission(self._unavailable(error), error)
            return Admission(self._charge(self._local_limiter(), checks), error)
        self._report("")
        return Admission(refusal)

    def check_store(self) -> str:
        """Ask the store whether it answers: ``""`` when it does, else the error."""
        try:
            ok = self.store.check()
        except Exception as exc:
            return _describe(exc)
        return "" if ok else "it did not answer"

    def _checks(self, caller: Caller, tool: str | None) -> list[_Check]:
        o, base = self.options, ("maitred", self.component)
        out: list[_Check] = []
        if o.per_token is not None and caller.token:
            out.append(("per_token", o.per_token, (*base, "token", caller.token)))
        if o.per_tenant is not None and caller.tenant:
            out.append(("per_tenant", o.per_tenant, (*base, "tenant", caller.tenant)))
        rate = o.per_tool.get(tool) if tool is not None else None
        if rate is not None and tool is not None and (caller.tenant or caller.token):
            whose = f"tenant:{caller.tenant}" if caller.tenant else f"token:{caller.token}"
            out.append(("per_tool", rate, (*base, "tool", whose, tool)))
        return out

    def _charge(self, limiter: RateLimiter, checks: list[_Check]) -> Refusal | None:
        for scope, rate, ids in checks:
            for item in rate.items:
                if not limiter.hit(item, *ids):
                    return self._limited(scope, rate, _retry_after(limiter, item, ids))
        return None

    def _limited(self, scope: Scope, rate: Rate, wait: int) -> Refusal:
        noun = _NOUN[scope]
        return Refusal(
            RATE_LIMITED,
            scope,
            rate.text,
            wait,
            f"too many calls for {noun} right now (at most {rate.text}); wait {wait} s "
            "and try again",
            f"rate limit {scope} {rate.text} reached; retry after {wait} s",
        )

    def _unavailable(self, error: str) -> Refusal:
        return Refusal(
            RATE_LIMIT_UNAVAILABLE,
            None,
            "",
            None,
            "this call's rate limit could not be checked, and calls that change things do not "
            "run unchecked; try again later",
            f"the rate-limit store {self.where} could not be asked ({error}); a mutating call "
            "fails closed",
        )

    def _local_limiter(self) -> RateLimiter:
        with self._lock:
            if self._local is None:
                self._local = STRATEGIES[self.options.strategy](LocalStore())
            return self._local

    def _report(self, error: str) -> None:
        """Say on stderr when the store goes down and when it answers again (once each)."""
        if bool(error) == self._down:
            return
        with self._lock:
            if bool(error) == self._down:
                return
            self._down = bool(error)
        who = f"maitred {self.component}: rate limits"
        if error:
            print(
                f"{who}: the store {self.where} cannot be asked ({error}); calls that change "
                f"things are refused ({RATE_LIMIT_UNAVAILABLE}) and read-only ones are limited "
                "by this process alone until it answers",
                file=sys.stderr,
                flush=True,
            )
        else:
            print(f"{who}: the store {self.where} answers again", file=sys.stderr, flush=True)


def _retry_after(limiter: RateLimiter, item: RateLimitItem, ids: tuple[str, ...]) -> int:
    """Whole seconds (at least 1) until ``item`` has room for one more call of ``ids``."""
    try:
        reset = limiter.get_window_stats(item, *ids).reset_time
    except Exception:  # the hit was refused; how long to wait is only a hint
        return max(1, item.get_expiry())
    return max(1, math.ceil(reset - time.time()))


class LocalStore(MemoryStorage):
    """The ``limits`` library's in-memory storage, its housekeeping done inline.

    ``MemoryStorage`` drops expired entries on a ``threading.Timer`` of 10 ms that it starts
    again on every hit that finds the last one finished: on a gateway answering a call every
    few milliseconds that is a new thread for nearly every call, about 2 ms of the event
    loop's time per call on a loaded machine (BENCHMARKS.md). The counts never depend on that
    sweep (a moving window reads its entries' times, a fixed window checks its expiry when
    read), which only keeps memory bounded; here it runs in the caller's thread at most once
    every :attr:`SWEEP_S` seconds instead.
    """

    #: seconds between two sweeps of expired entries
    SWEEP_S = 1.0

    def __init__(self) -> None:
        super().__init__()
        self._swept = time.monotonic()

    def _MemoryStorage__schedule_expiry(self) -> None:  # replaces the library's timer start
        now = time.monotonic()
        if now - self._swept >= self.SWEEP_S:
            self._swept = now
            self._MemoryStorage__expire_events()  # type: ignore[attr-defined]


def _open_store(options: RateLimitOptions) -> Storage:
    if not options.shared:
        return LocalStore()
    t = options.storage_timeout_s
    store = RedisStorage(
        options.storage, wrap_exceptions=True, socket_timeout=t, socket_connect_timeout=t
    )
    # redis-py retries a failed command three times with backoff of up to 10 s by default: a
    # store that is down must cost a call its timeout, not that. One immediate retry covers a
    # pooled connection that the server closed.
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    client: Any = store.storage
    client.set_retry(Retry(NoBackoff(), 1))
    return store


def _describe(exc: BaseException) -> str:
    """``Type: message`` of ``exc``, or of the store's error it wraps (``limits`` wraps them)."""
    inner = getattr(exc, "storage_error", None)
    found = inner if isinstance(inner, BaseException) else exc
    return f"{type(found).__name__}: {found}"
