"""What the HTTP gateway's ``GET /metrics`` exposes, in the Prometheus text format.

Each gateway has its own :class:`~prometheus_client.CollectorRegistry` (never the process-global
one), so two gateways in one process -- tests, a benchmark -- count apart. Over stdio there is
no HTTP endpoint; the counters are kept all the same (a test, or an embedding program, can read
them from :attr:`GatewayMetrics.registry`).

=====================================  ======================================================
``maitred_gateway_calls_total``        ``tools/call`` outcomes by code: ``OK`` for a call
                                       forwarded upstream, else the refusal's code
                                       (``TOOL_NOT_OFFERED``, ``GATE_UNAVAILABLE``...)
``maitred_gateway_listings_total``     ``tools/list`` answers served
``maitred_gateway_upstream_failures``  calls allowed whose upstream then failed, by upstream
``maitred_gateway_sessions``           gatekeepers (sessions) held in memory
``maitred_gateway_upstream_up``        1 while an upstream is serving, else 0 (starting,
                                       down, refused), by upstream
``maitred_gateway_definition_changes`` tool definitions found to differ from their pins, by
                                       upstream and tool (each new definition once; calls
                                       refused for it count as ``TOOL_DEFINITION_CHANGED``)
``maitred_gateway_surface_requests``   ``resources/read`` and ``prompts/get`` outcomes by
                                       ``method`` and ``code``: ``OK`` when forwarded,
                                       else the refusal's code (``RESOURCE_NOT_AVAILABLE``...)
``maitred_gateway_rate_limited``       calls refused ``RATE_LIMITED``, by the exhausted scope
                                       (``per_token``, ``per_tenant``, ``per_tool``)
``maitred_gateway_rate_limit_store_``  calls whose rate limit the shared store could not
``errors``                             check (refused ``RATE_LIMIT_UNAVAILABLE`` when they
                                       mutate, else counted by this process alone)
=====================================  ======================================================

A capability that refuses calls for a reason of its own (rate limits, changed definitions)
counts them here under its code, so one series answers "what did the gateway refuse, and why".
An allowed call is counted under ``OK``, the code its decision carries in the decision log,
in ``Decision.code``, in the service's metrics and on the gateway's spans (earlier builds
counted it here as ``ALLOWED``; docs/gateway/config.md notes the rename for dashboards).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    generate_latest,
)

from maitred.actions.model import OK

#: the content type of :meth:`GatewayMetrics.render`'s output
CONTENT_TYPE = CONTENT_TYPE_LATEST

__all__ = ["CONTENT_TYPE", "GatewayMetrics"]


class GatewayMetrics:
    """The gateway's counters, in one registry of its own."""

    def __init__(self, sessions: Callable[[], int]) -> None:
        self.registry = CollectorRegistry()
        reg = self.registry
        self.calls = Counter(
            "maitred_gateway_calls",
            "tools/call outcomes by code (OK: forwarded upstream).",
            ("code",),
            registry=reg,
        )
        self.listings = Counter(
            "maitred_gateway_listings", "tools/list answers served.", registry=reg
        )
        self.upstream_failures = Counter(
            "maitred_gateway_upstream_failures",
            "Allowed calls whose upstream failed, by upstream.",
            ("upstream",),
            registry=reg,
        )
        self.sessions = Gauge(
            "maitred_gateway_sessions", "Gatekeepers (sessions) held in memory.", registry=reg
        )
        self.sessions.set_function(lambda: float(sessions()))
        self.upstream_up = Gauge(
            "maitred_gateway_upstream_up",
            "1 while the upstream is serving (its tools are in the catalog and it answers), "
            "else 0.",
            ("upstream",),
            registry=reg,
        )
        self.definition_changes = Counter(
            "maitred_gateway_definition_changes",
            "Tool definitions found to differ from their pins, by upstream and tool.",
            ("upstream", "tool"),
            registry=reg,
        )
        self.surface_requests = Counter(
            "maitred_gateway_surface_requests",
            "resources/read and prompts/get outcomes by method and code (OK: forwarded).",
            ("method", "code"),
            registry=reg,
        )
        self.rate_limited = Counter(
            "maitred_gateway_rate_limited",
            "Calls refused RATE_LIMITED, by the exhausted scope.",
            ("scope",),
            registry=reg,
        )
        self.rate_limit_store_errors = Counter(
            "maitred_gateway_rate_limit_store_errors",
            "Calls whose rate limit the shared store could not check.",
            registry=reg,
        )
        for code in (OK, "TOOL_NOT_OFFERED", "GATE_UNAVAILABLE", "AUTH_REQUIRED"):
            self.calls.labels(code)  # present at zero, so dashboards see the series

    def limits_on(self, scopes: Sequence[str]) -> None:
        """Show the rate-limit series at zero (the gateway has limits on these ``scopes``)."""
        for code in ("RATE_LIMITED", "RATE_LIMIT_UNAVAILABLE"):
            self.calls.labels(code)
        for scope in scopes:
            self.rate_limited.labels(scope)

    def count_served(self, code: str, limited: str | None = None, failed: str = "") -> None:
        """Count one ``tools/call`` answered with ``code`` (``OK``: forwarded); refused past
        a rate (``limited``: the limit's scope, ``""`` when the store could not be asked,
        which ``calls{code=RATE_LIMIT_UNAVAILABLE}`` counts); failed by the upstream
        ``failed``."""
        self.calls.labels(code).inc()
        if limited:
            self.rate_limited.labels(limited).inc()
        if failed:
            self.upstream_failures.labels(failed).inc()

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)
