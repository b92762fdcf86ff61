"""maitred._otlp: the request it writes parses to exactly the message the installed OTLP
exporter's own encoder builds from the same spans (arbitrary spans made by the real SDK), what
it does not write goes the exporter's own way, and the exporter posts it to a collector."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip(
    "opentelemetry.exporter.otlp.proto.http",
    reason="needs the otlp extra: pip install 'maitred[otlp]'",
)

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState
from tests.otlp_collector import collecting

from maitred._otlp import OtlpExporter, encode, fast_path
from maitred.tracing import Tracing, TracingOptions

texts = st.text(max_size=12)
ints = st.integers(min_value=-(2**63), max_value=2**63 - 1)
floats = st.floats(allow_nan=True, allow_infinity=True)
scalars = st.one_of(texts, st.booleans(), ints, floats)
values = st.one_of(
    scalars,
    st.lists(texts, max_size=3).map(tuple),
    st.lists(st.booleans(), max_size=3).map(tuple),
    st.lists(ints, max_size=3).map(tuple),
    st.lists(floats, max_size=3).map(tuple),
)
attributes = st.dictionaries(st.text(min_size=0, max_size=8), values, max_size=5)
parents = st.one_of(
    st.none(),
    st.tuples(
        st.integers(1, 2**128 - 1),
        st.integers(1, 2**64 - 1),
        st.booleans(),
        st.dictionaries(
            st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=5),
            st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=5),
            max_size=2,
        ),
    ),
)
span_specs = st.tuples(
    texts,
    st.sampled_from(list(SpanKind)),
    attributes,
    parents,
    st.sampled_from([None, StatusCode.OK, StatusCode.ERROR]),
    st.one_of(st.none(), texts),
    st.sampled_from(["maitred", "other"]),
)


def made(specs: list[Any], resources: list[Resource]) -> list[ReadableSpan]:
    """The finished spans the real SDK makes for ``specs``, over ``resources`` in turn."""
    spans: list[ReadableSpan] = []
    for i, (name, kind, attrs, parent, code, description, scope) in enumerate(specs):
        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=resources[i % len(resources)])
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        context = None
        if parent is not None:
            trace_id, span_id, remote, state = parent
            parent_ctx = SpanContext(
                trace_id, span_id, remote, TraceFlags(1), TraceState(list(state.items()))
            )
            context = trace.set_span_in_context(trace.NonRecordingSpan(parent_ctx))
        tracer = provider.get_tracer(scope, "1.0" if scope == "maitred" else None)
        span = tracer.start_span(name, context=context, kind=kind, attributes=attrs)
        if code is not None:
            span.set_status(Status(code, description if code is StatusCode.ERROR else None))
        span.end()
        spans += exporter.get_finished_spans()
    return spans


def same_message(ours: bytes | None, spans: list[ReadableSpan]) -> None:
    assert ours is not None
    theirs = encode_spans(spans)
    parsed = ExportTraceServiceRequest.FromString(ours)
    # compared as serialized, deterministically: field order is free, NaN is no value
    assert parsed.SerializeToString(deterministic=True) == theirs.SerializeToString(
        deterministic=True
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(span_specs, min_size=1, max_size=6), st.integers(1, 3))
def test_the_request_is_the_exporters_own(specs: list[Any], n_resources: int) -> None:
    resources = [Resource.create({"service.name": f"svc-{k}", "k": k}) for k in range(n_resources)]
    spans = made(specs, resources)
    same_message(encode(spans), spans)


def test_equal_resources_of_two_providers_are_one_group_as_the_exporter_makes_them() -> None:
    specs = [("a", SpanKind.SERVER, {}, None, None, None, "maitred")] * 2
    spans = made(
        specs, [Resource.create({"service.name": "x"}), Resource.create({"service.name": "x"})]
    )
    assert spans[0].resource is not spans[1].resource  # two providers, equal resources
    same_message(encode(spans), spans)
    parsed = ExportTraceServiceRequest.FromString(encode(spans) or b"")
    assert len(parsed.resource_spans) == 1 and len(parsed.resource_spans[0].scope_spans) == 1


def test_what_it_does_not_write_goes_the_exporters_way() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("t").start_as_current_span("with an event") as span:
        span.add_event("happened")
    assert encode(exporter.get_finished_spans()) is None


def test_the_installed_exporter_takes_the_fast_path_and_a_collector_reads_it() -> None:
    """An SDK upgrade that moves the exporter's internals would silently fall back to the
    slow encoder: this fails instead, so the fast path is re-checked against it."""
    with collecting() as collector:
        exporter = OtlpExporter(endpoint=collector.url, headers={"x-key": "v"})
        assert fast_path(exporter)
        specs = [
            ("maitred.call", SpanKind.SERVER, {"gen_ai.tool.name": "t", "n": 3}, None,
             None, None, "maitred"),
            ("maitred.upstream", SpanKind.CLIENT, {"ok": True}, None, StatusCode.ERROR,
             "tool_error", "maitred"),
        ]  # fmt: skip
        spans = made(specs, [Resource.create({"service.name": "maitred-gateway"})])
        assert exporter.export(spans) == SpanExportResult.SUCCESS
        exporter.shutdown()
    [export] = collector.exports
    assert export.headers["x-key"] == "v"
    assert export.request.SerializeToString(deterministic=True) == encode_spans(
        spans
    ).SerializeToString(deterministic=True)
    names = [s.name for _, s in collector.spans()]
    assert names == ["maitred.call", "maitred.upstream"]


def test_tracing_posts_through_it() -> None:
    with collecting() as collector:
        tracing = Tracing.start(TracingOptions(enabled=True, endpoint=collector.url))
        processor = tracing.provider._active_span_processor._span_processors[0]  # type: ignore[union-attr]
        assert isinstance(processor._batch_processor._exporter, OtlpExporter)  # type: ignore[attr-defined]
        with tracing.request("maitred.call") as span:
            span.set_attribute("maitred.code", "OK")
        tracing.close()
    assert [s.name for _, s in collector.spans()] == ["maitred.call"]


def test_values_equal_in_python_but_not_on_the_wire_are_written_apart() -> None:
    """``True == 1`` and ``0.0 == -0.0``: the cache of encoded pairs must not mix them."""
    pairs: list[dict[str, Any]] = [{"k": True}, {"k": 1}, {"k": 0.0}, {"k": -0.0}, {"k": 1.0}]
    specs = [("s", SpanKind.INTERNAL, attrs, None, None, None, "maitred") for attrs in pairs]
    spans = made(specs, [Resource.create({"service.name": "x"})])
    same_message(encode(spans), spans)
    same_message(encode(spans[::-1]), spans[::-1])
