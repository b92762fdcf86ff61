"""Traces of the gateway and the service (OpenTelemetry), off unless their config turns them on.

::

    tracing:
      enabled: true                 # off by default
      exporter: otlp                # otlp (OTLP over HTTP, the `otlp` extra) | console | none
      endpoint: http://127.0.0.1:4318/v1/traces   # where otlp posts (a collector)
      headers: {}                   # sent with every export (a collector's API key)
      service_name: maitred-gateway # the resource's service.name (maitred-serve for the service)
      sample_ratio: 1.0             # of the traces that start here; a caller's choice is kept
      account: true                 # put the account id on spans (false: tenant and session only)

A :class:`Tracing` is one component's tracer. The adapters open one span per request they
serve and one per decision inside it (the gateway: a listing's turn, a call's check, the upstream
call, ``find_tools``; the service: a turn, a check), each named ``maitred.*`` and carrying the
ids that lead to the decision log: decision id, code, verdict, tool, tenant, session, turn, run.

Invariants:

* **Off costs nothing.** :data:`OFF` (a config without ``tracing.enabled``) creates no span,
  touches no context and imports no SDK: :meth:`Tracing.span` hands back one shared no-op
  context manager whose span is OpenTelemetry's invalid span, and the adapters build
  attributes only for a span that records.
* **A provider of its own.** Every :class:`Tracing` that is on owns a ``TracerProvider``; the
  process-global one is never set or read, so two gateways (or a gateway and a test) in one
  process trace apart, and a library that traces through the global provider (FastMCP does)
  is neither silenced nor doubled by maitred.
* **Ids and codes, never values.** Spans carry identifiers the operator issued (tenant,
  account, session, decision and turn ids), tool and upstream names, codes and counts. Tool
  arguments, state values, model-facing messages and exception messages (which may quote
  either) are never attributes; a failure is recorded by its exception's type only. The
  account id is the operator's own identifier; where it is personal data (an e-mail
  address), ``account: false`` leaves it out.
* **W3C trace context in, the same out.** A request's parent is read from ``traceparent`` /
  ``tracestate`` with the W3C propagator itself, not the process-global propagator, so what
  continues a caller's trace does not depend on ``OTEL_PROPAGATORS``. Which carrier wins is
  :func:`parent_of`'s rule.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from opentelemetry import context as context_api
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import AttributeValue

from maitred.config_reader import ConfigReader
from maitred.errors import MissingExtraError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

Exporter = Literal["otlp", "console", "none"]
EXPORTERS: tuple[Exporter, ...] = ("otlp", "console", "none")
DEFAULT_ENDPOINT = "http://127.0.0.1:4318/v1/traces"
#: the module the ``otlp`` exporter lives in (the ``otlp`` extra)
OTLP_MODULE = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
_KEYS = frozenset(
    {"enabled", "exporter", "endpoint", "headers", "service_name", "sample_ratio", "account"}
)
_W3C = TraceContextTextMapPropagator()
Attributes = Mapping[str, AttributeValue]


@dataclass(frozen=True)
class TracingOptions:
    """A config's ``tracing`` block (see the module docstring); off unless ``enabled``."""

    enabled: bool = False
    exporter: Exporter = "otlp"
    endpoint: str = DEFAULT_ENDPOINT
    headers: Mapping[str, str] = field(default_factory=dict)
    service_name: str = "maitred"
    sample_ratio: float = 1.0
    account: bool = True


def read_tracing(r: ConfigReader, value: Any, *, service_name: str) -> TracingOptions:
    """Check a config's ``tracing`` block (``None``: absent, so off).

    ``service_name`` is the component's default (``maitred-gateway``, ``maitred-serve``).
    An ``otlp`` exporter that is asked for and not installed is refused here, naming the extra
    to install, so the mistake shows at start rather than as traces that never arrive.
    """
    if value is None:
        return TracingOptions(service_name=service_name)
    data = r.mapping(value, "tracing")
    r.no_unknown(data, _KEYS, "tracing")
    enabled = data.get("enabled", False)
    if not isinstance(enabled, bool):
        r.fail("tracing.enabled", f"must be true or false, not {enabled!r}")
    exporter = data.get("exporter", "otlp")
    if exporter not in EXPORTERS:
        r.fail(
            "tracing.exporter",
            f"must be one of {list(EXPORTERS)}, not {exporter!r} (otlp: post to a collector; "
            "console: print each span on stderr; none: trace without exporting)",
        )
    endpoint = r.string(data.get("endpoint", DEFAULT_ENDPOINT), "tracing.endpoint")
    if not endpoint.startswith(("http://", "https://")):
        r.fail(
            "tracing.endpoint",
            f"must be an http:// or https:// URL (OTLP over HTTP, e.g. {DEFAULT_ENDPOINT}), "
            f"not {endpoint!r}",
        )
    headers = r.mapping(data.get("headers") or {}, "tracing.headers")
    for key, val in headers.items():
        if not isinstance(val, str):
            r.fail(f"tracing.headers.{key}", f"must be a string, not {val!r}")
    name = r.string(data.get("service_name", service_name), "tracing.service_name")
    ratio = data.get("sample_ratio", 1.0)
    if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or not 0 <= ratio <= 1:
        r.fail(
            "tracing.sample_ratio",
            f"must be a number from 0 to 1 (the share of new traces kept), not {ratio!r}",
        )
    account = data.get("account", True)
    if not isinstance(account, bool):
        r.fail("tracing.account", f"must be true or false, not {account!r}")
    if enabled and exporter == "otlp":
        try:
            __import__(OTLP_MODULE)
        except ImportError:
            r.fail(
                "tracing.exporter",
                "is otlp, but the OTLP exporter is not installed: install it with "
                "`pip install 'maitred[otlp]'` (or choose exporter: console or none)",
            )
    return TracingOptions(enabled, exporter, endpoint, headers, name, float(ratio), account)


class _NoSpan:
    """The context manager :data:`OFF` hands out: no span, no context change."""

    __slots__ = ()

    def __enter__(self) -> Span:
        return INVALID_SPAN

    def __exit__(self, *exc: object) -> None:
        return None


_NO_SPAN = _NoSpan()


class Tracing:
    """One component's tracer (see the module docstring); :data:`OFF` when not enabled.

    Build it with :meth:`start`, and :meth:`close` it when the component stops (that exports
    what is still buffered).

    Attributes:
        enabled: spans are made (a span that is not sampled still does not record).
        account: the account id may be an attribute.
        provider: the SDK provider it owns (``None`` when off).
    """

    def __init__(self, provider: TracerProvider | None = None, *, account: bool = True) -> None:
        self.provider = provider
        self.enabled = provider is not None
        self.account = account
        self._tracer = provider.get_tracer("maitred") if provider is not None else None

    @classmethod
    def start(
        cls, options: TracingOptions, *, exporter: SpanExporter | None = None, extra: str = "mcp"
    ) -> Tracing:
        """The tracing ``options`` ask for: :data:`OFF` when not enabled.

        Args:
            options: the checked ``tracing`` block.
            exporter: export every span to this one synchronously instead of the configured
                exporter (tests pass the SDK's ``InMemorySpanExporter``).
            extra: the extra that brings the SDK, for the message when it is missing (``mcp``
                for the gateway, ``serve`` for the service).

        Raises:
            MissingExtraError: the OpenTelemetry SDK, or the OTLP exporter, is not installed.
        """
        if not options.enabled:
            return OFF
        try:
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import (
                BatchSpanProcessor,
                ConsoleSpanExporter,
                SimpleSpanProcessor,
            )
            from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
        except ImportError as exc:
            raise MissingExtraError("tracing", extra, exc.name or "opentelemetry-sdk") from None
        provider = TracerProvider(
            sampler=ParentBased(TraceIdRatioBased(options.sample_ratio)),
            resource=Resource.create({"service.name": options.service_name}),
            shutdown_on_exit=False,  # close() flushes; an atexit hook of its own would repeat it
        )
        if exporter is not None:
            provider.add_span_processor(SimpleSpanProcessor(exporter))
        elif options.exporter == "console":  # stderr: a stdio gateway's stdout is the protocol
            provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
        elif options.exporter == "otlp":
            try:
                from maitred._otlp import OtlpExporter
            except ImportError:
                raise MissingExtraError("exporter: otlp", "otlp", OTLP_MODULE) from None
            otlp = OtlpExporter(endpoint=options.endpoint, headers=dict(options.headers))
            provider.add_span_processor(BatchSpanProcessor(otlp))
        return cls(provider, account=options.account)

    def span(
        self,
        name: str,
        *,
        parent: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes | None = None,
    ) -> AbstractContextManager[Span]:
        """A span, current for the block (a child of the current span unless ``parent`` is
        given); the shared no-op when off.

        An exception leaving the block marks the span as failed with ``error.type`` (the
        exception's type) and is re-raised; its message is not recorded (see the module
        docstring).
        """
        if self._tracer is None:
            return _NO_SPAN
        return _current(self._tracer, name, parent, kind, attributes)

    def request(
        self, name: str, *carriers: Mapping[str, Any] | None, attributes: Attributes | None = None
    ) -> AbstractContextManager[Span]:
        """The span of one request served, continuing the trace its ``carriers`` (HTTP
        headers, an MCP request's ``_meta``) name by :func:`parent_of`'s rule: ``SERVER`` when
        it starts this process's part of the trace, ``INTERNAL`` under a span already open in
        this process."""
        if self._tracer is None:
            return _NO_SPAN
        parent = parent_of(*carriers)
        kind = SpanKind.INTERNAL if parent is None else SpanKind.SERVER
        return _current(self._tracer, name, parent, kind, attributes)

    def close(self) -> None:
        """Export what is buffered and stop (nothing when off)."""
        if self.provider is not None:
            self.provider.shutdown()


#: tracing turned off: the default of every adapter
OFF = Tracing()


def parent_of(*carriers: Mapping[str, Any] | None) -> Context | None:
    """The context a request's span continues, or ``None``: the span already current here.

    In this order:

    1. a span of this process already open (FastMCP's own span when an application set a
       global SDK, an ASGI instrumentation): ``None``, so maitred's span is its child and no
       second ``SERVER`` span is made;
    2. the first carrier whose ``traceparent`` is valid W3C trace context (with its
       ``tracestate``): the gateway passes the HTTP headers before the MCP ``_meta``, so a
       tracing HTTP proxy between the client and the gateway stays in the chain;
    3. a remote context already current (one extracted by a library without a span of its
       own);
    4. otherwise an empty context: the span starts a new trace.

    A malformed ``traceparent`` is skipped, never an error.
    """
    current = trace.get_current_span().get_span_context()
    if current.is_valid and not current.is_remote:
        return None
    for carrier in carriers:
        if not carrier or "traceparent" not in carrier:
            continue
        found = {"traceparent": str(carrier["traceparent"])}
        if "tracestate" in carrier:
            found["tracestate"] = str(carrier["tracestate"])
        context = _W3C.extract(found, context=Context())
        if trace.get_current_span(context).get_span_context().is_valid:
            return context
    return trace.set_span_in_context(trace.get_current_span()) if current.is_valid else Context()


def trace_id_of(span: Span, *carriers: Mapping[str, Any] | None) -> str:
    """The W3C trace id a decision made within a request is logged with (``""``: none).

    The request's own ``span`` when it is one (tracing on: the trace it continues or began,
    sampled or not -- the id the upstream is sent too); else, with tracing off (``span`` is
    the invalid span), the first of ``carriers`` whose ``traceparent`` is valid W3C trace
    context, in :func:`parent_of`'s order: the client's own trace. A malformed ``traceparent``
    (or one that is not a string) is ignored, as the W3C recommendation says, never stored;
    no trace context is no trace id, never a made-up one. What comes back is 32 lowercase hex
    digits, not all zero (:func:`maitred.context.trace_id_fault`), or ``""``.
    """
    found = span.get_span_context()
    if found.is_valid:
        return trace.format_trace_id(found.trace_id)
    for carrier in carriers:
        value = carrier.get("traceparent") if carrier else None
        if not isinstance(value, str):
            continue
        context = _W3C.extract({"traceparent": value}, context=Context())
        remote = trace.get_current_span(context).get_span_context()
        if remote.is_valid:
            return trace.format_trace_id(remote.trace_id)
    return ""


class _Current:
    """One span, current for a ``with`` block: what ``Tracer.start_as_current_span`` does, as
    a plain object rather than a generator wrapped twice (that is most of a span's cost on
    the hot path, two spans per forwarded gateway call). An exception leaving the block is
    recorded by its type only (:func:`failed`), then the context is restored and the span
    ended."""

    __slots__ = ("_attributes", "_kind", "_name", "_parent", "_span", "_token", "_tracer")

    def __init__(
        self,
        tracer: trace.Tracer,
        name: str,
        parent: Context | None,
        kind: SpanKind,
        attributes: Attributes | None,
    ) -> None:
        self._tracer = tracer
        self._name = name
        self._parent = parent
        self._kind = kind
        self._attributes = attributes

    def __enter__(self) -> Span:
        span = self._tracer.start_span(
            self._name,
            context=self._parent,
            kind=self._kind,
            attributes=self._attributes,
            record_exception=False,
            set_status_on_exception=False,
        )
        self._span = span
        self._token = context_api.attach(trace.set_span_in_context(span))
        return span

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        span = self._span
        try:
            if kind is not None:
                failed(span, kind.__qualname__)
        finally:
            context_api.detach(self._token)
            span.end()


_current = _Current


def failed(span: Span, error_type: str) -> None:
    """Mark ``span`` as failed with ``error.type`` (a type or a code, never a message)."""
    if span.is_recording():
        span.set_attribute("error.type", error_type)
        span.set_status(StatusCode.ERROR, error_type)
