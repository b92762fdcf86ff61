"""What ``GET /metrics`` exposes, in the Prometheus text format (``prometheus-client``).

Each app has its own :class:`~prometheus_client.CollectorRegistry` (never the process-global
one), so two apps in one process -- tests, a benchmark -- count apart.

=====================================  ======================================================
``maitred_http_requests_total``        requests by route template, method and status
``maitred_http_request_seconds``       request latency by route (histogram)
``maitred_stage_seconds``              per-stage latency of each turn, from
                                       ``TurnRecord.timings_us`` (recall, gate, depth, menu)
``maitred_blocked_pairs_total``        candidates the executability gate withheld, by the
                                       predicate that fired (``cause:<cause>`` when the turn
                                       failed closed as a whole and no predicate ran)
``maitred_fail_closed_total``          fail-closed outcomes by cause: turns
                                       (``state_unavailable``, ``account_not_found``) and
                                       call decisions (``STATE_UNAVAILABLE``,
                                       ``STATE_MISSING``, ``STATE_STALE``)
``maitred_call_decisions_total``       call checks by verdict and code
``maitred_sessions``                   sessions held in memory
``maitred_engine_errors_total``        requests the engine could not serve (log or catalog
                                       broken: 503), by error class; never a client's error
``maitred_refused_requests_total``     requests refused as the client's error (4xx), by the
                                       error's code (``malformed_json``, ``invalid_field``...)
``maitred_reloads_total``              catalog reloads by outcome (``applied``, ``rejected``)
``maitred_catalog_info``               1, labelled with the live catalog's version
``maitred_log_waiting``                the log's backlog: requests decided and waiting for
                                       the commit that holds their decision
``maitred_log_commit_seconds``         how long a request waited for that commit (histogram)
``maitred_rate_limited_total``         requests refused 429 by a rate limit (``rate_limits``),
                                       by the exhausted scope (``per_tenant``, ``per_tool``)
``maitred_rate_limit_store_errors_``   requests whose rate limit the shared store could not
``total``                              check (503 for a mutating check, else counted by this
                                       process alone)
=====================================  ======================================================
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from maitred.actions.model import Decision
from maitred.pipeline import Turn

CONTENT_TYPE = CONTENT_TYPE_LATEST
FAIL_CLOSED_CALL_CODES = frozenset({"STATE_UNAVAILABLE", "STATE_MISSING", "STATE_STALE"})
_STAGE_BUCKETS = (
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
)  # fmt: skip


class Metrics:
    """The server's counters and histograms, in one registry."""

    def __init__(self, sessions: Callable[[], int]) -> None:
        self.registry = CollectorRegistry()
        reg = self.registry
        self.requests = Counter(
            "maitred_http_requests",
            "HTTP requests by route, method and status.",
            ("route", "method", "status"),
            registry=reg,
        )
        self.latency = Histogram(
            "maitred_http_request_seconds",
            "HTTP request latency by route.",
            ("route",),
            registry=reg,
        )
        self.stages = Histogram(
            "maitred_stage_seconds",
            "Per-stage latency of each routed turn.",
            ("stage",),
            buckets=_STAGE_BUCKETS,
            registry=reg,
        )
        self.blocked = Counter(
            "maitred_blocked_pairs",
            "Candidates withheld by the executability gate, by the predicate that fired.",
            ("predicate",),
            registry=reg,
        )
        self.fail_closed = Counter(
            "maitred_fail_closed",
            "Fail-closed outcomes by cause (turn causes and call codes).",
            ("cause",),
            registry=reg,
        )
        self.calls = Counter(
            "maitred_call_decisions",
            "Call checks by verdict and code.",
            ("verdict", "code"),
            registry=reg,
        )
        self.engine_errors = Counter(
            "maitred_engine_errors",
            "Requests the engine could not serve, by error class.",
            ("error",),
            registry=reg,
        )
        self.refused = Counter(
            "maitred_refused_requests",
            "Requests refused as the client's error (4xx), by error code.",
            ("code",),
            registry=reg,
        )
        self.reloads = Counter(
            "maitred_reloads",
            "Catalog reloads by outcome (applied, rejected).",
            ("outcome",),
            registry=reg,
        )
        for outcome in ("applied", "rejected"):
            self.reloads.labels(outcome)
        self.catalog = Gauge(
            "maitred_catalog_info",
            "1, labelled with the version of the catalog now serving.",
            ("version",),
            registry=reg,
        )
        self.sessions = Gauge("maitred_sessions", "Sessions held in memory.", registry=reg)
        self.log_waiting = Gauge(
            "maitred_log_waiting",
            "Requests decided and waiting for the commit that holds their decision.",
            registry=reg,
        )
        self.log_commit = Histogram(
            "maitred_log_commit_seconds",
            "How long a request waited for the commit holding its decision.",
            buckets=_STAGE_BUCKETS,
            registry=reg,
        )
        self.rate_limited = Counter(
            "maitred_rate_limited",
            "Requests refused 429 by a rate limit, by the exhausted scope.",
            ("scope",),
            registry=reg,
        )
        self.rate_limit_store_errors = Counter(
            "maitred_rate_limit_store_errors",
            "Requests whose rate limit the shared store could not check.",
            registry=reg,
        )
        self.sessions.set_function(lambda: float(sessions()))
        for cause in ("state_unavailable", "account_not_found", *FAIL_CLOSED_CALL_CODES):
            self.fail_closed.labels(cause)  # present at zero, so dashboards see the series

    def set_catalog(self, version: str) -> None:
        """Make ``version`` the one live catalog version (the previous label is removed)."""
        self.catalog.clear()
        self.catalog.labels(version).set(1)

    def observe_turn(self, turn: Turn) -> None:
        """Count one routed turn: stage timings, blocks, and a whole-turn failure."""
        rec = turn.record
        for stage, micros in rec.timings_us.items():
            self.stages.labels(stage).observe(micros / 1e6)
        cause = rec.cause
        for pair in rec.blocked:
            if pair.fired:
                for outcome in pair.fired:
                    self.blocked.labels(outcome.predicate).inc()
            else:
                self.blocked.labels(f"cause:{cause or 'unknown'}").inc()
        if cause is not None:
            self.fail_closed.labels(cause).inc()

    def observe_decision(self, decision: Decision) -> None:
        """Count one call decision, and its fail-closed code if it has one."""
        self.calls.labels(decision.verdict, decision.code).inc()
        if decision.code in FAIL_CLOSED_CALL_CODES:
            self.fail_closed.labels(decision.code).inc()

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)
