"""The service's side of rate limits (``rate_limits:`` in its config; :mod:`maitred.ratelimit`).

**What counts.** ``POST /v1/turns`` and ``POST /v1/calls/check`` are charged to the tenant's
budget (``per_tenant``), a check also to the tenant's budget for the tool it names
(``per_tool``). A request is charged once it is authenticated and well formed (a 401, 413, 400
or 422 is the client's error and costs nothing), before the engine sees it. The service has one
token per tenant, so it has no ``per_token``. ``/v1/funnel`` and the operator's routes are not
limited.

**The answer.** A request over a rate is answered ``429`` with a ``Retry-After`` header (whole
seconds) and the service's error body, ``{"error": {"status": 429, "code": "rate_limited",
"message", "retry_after_s", "scope"}}``. It is not a decision: nothing is decided or logged
(like a 401 or a 413), because the call has not been checked yet -- the application retries it
once the wait has passed, and that check is the call's decision. Counted in
``maitred_rate_limited_total{scope}`` and ``maitred_refused_requests_total{code="rate_limited"}``.

**When the shared store is down**, a check of a tool that ``mutates`` (or that the catalog does
not know) is answered ``503`` ``rate_limit_unavailable``; a turn or a read-only check is counted
by this process alone (see :mod:`maitred.ratelimit`).
"""

from __future__ import annotations

import sys
from functools import partial

import anyio.to_thread

from maitred.engine import Maitred
from maitred.errors import ConfigError
from maitred.ratelimit import RATE_LIMIT_UNAVAILABLE, Caller, Limiter, unknown_tools
from maitred.serve.config import ServeConfig, Tenant
from maitred.serve.metrics import Metrics
from maitred.serve.requests import Problem


def open_limiter(config: ServeConfig, engine: Maitred) -> Limiter | None:
    """The service's limiter (``None`` without ``rate_limits``), checked against the catalog.

    A shared store that does not answer at start is reported on stderr, not fatal.

    Raises:
        ConfigError: ``per_tool`` names a tool the catalog does not have.
    """
    options = config.rate_limits
    if options is None:
        return None
    known = frozenset(s.name for s in engine.catalog)
    unknown = unknown_tools(options, known)
    if unknown:
        raise ConfigError(
            f"{config.source}: field 'rate_limits.per_tool.{unknown[0]}' names no tool of the "
            "catalogs; write a tool name as the tools file lists it"
        )
    limiter = Limiter(options, "serve")
    if options.shared:
        error = limiter.check_store()
        if error:
            print(
                f"maitred serve: rate limits: the store {limiter.where} does not answer "
                f"({error}); checks of tools that change things will be answered 503 until "
                "it does",
                file=sys.stderr,
                flush=True,
            )
    return limiter


async def admit(
    limiter: Limiter | None,
    metrics: Metrics,
    tenant: Tenant,
    tool: str | None = None,
    *,
    mutates: bool = False,
) -> None:
    """Charge one request of ``tenant`` (a check of ``tool``) to its budgets.

    Raises:
        Problem: 429 when a budget is exhausted; 503 when the shared store cannot be asked
            and the request is a mutating check.
    """
    if limiter is None:
        return
    charge = partial(limiter.admit, Caller(tenant=tenant.name), tool, mutates=mutates)
    admission = await anyio.to_thread.run_sync(charge) if limiter.blocking else charge()
    if admission.store_error:
        metrics.rate_limit_store_errors.inc()
    refusal = admission.refusal
    if refusal is None:
        return
    if refusal.code == RATE_LIMIT_UNAVAILABLE:
        raise Problem(
            503,
            "rate_limit_unavailable",
            "this check could not be counted against its rate limits (the shared rate-limit "
            "store does not answer), and a tool that changes things is never let through "
            "uncounted; try again later",
        )
    wait = refusal.retry_after_s or 1
    if refusal.scope is not None:
        metrics.rate_limited.labels(refusal.scope).inc()
    raise Problem(
        429,
        "rate_limited",
        f"too many requests for this {'tool' if refusal.scope == 'per_tool' else 'tenant'} "
        f"(at most {refusal.rate}); retry after {wait} s",
        headers={"Retry-After": str(wait)},
        extra={"retry_after_s": wait, "scope": refusal.scope},
    )


def mutates(engine: Maitred, tool: str) -> bool:
    """Whether a check of ``tool`` is of a tool that may change state (unknown: yes, so a
    check the store cannot count fails closed)."""
    rules = engine.rulebook.tools.get(tool)
    return rules is None or rules.mutates
