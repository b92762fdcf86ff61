"""maitred.tracing: which parent a request's span continues, sampling, the exporters (a real
OTLP post to a collector on loopback, ``tests/otlp_collector.py``), and that each Tracing
keeps to its own provider."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip(
    "opentelemetry.sdk", reason="needs the serve or mcp extra: pip install 'maitred[serve]'"
)

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import INVALID_SPAN, SpanKind
from tests.otlp_collector import collecting

from maitred.tracing import Tracing, TracingOptions, parent_of, trace_id_of

TRACE_ID, SPAN_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7
SAMPLED = f"00-{TRACE_ID:032x}-{SPAN_ID:016x}-01"
NOT_SAMPLED = f"00-{TRACE_ID:032x}-{SPAN_ID:016x}-00"
OTHER = f"00-{0xABC:032x}-{0xDEF:016x}-01"


def in_memory(**options: Any) -> tuple[Tracing, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    opts = TracingOptions(enabled=True, exporter="none", **options)
    return Tracing.start(opts, exporter=exporter), exporter


def parent_ids(span: Any) -> tuple[int, int] | None:
    return None if span.parent is None else (span.parent.trace_id, span.parent.span_id)


def test_the_first_carrier_with_a_valid_traceparent_is_the_parent() -> None:
    tracing, exporter = in_memory()
    with tracing.request("r1", None, {"traceparent": "garbage"}, {"traceparent": SAMPLED}):
        pass
    with tracing.request("r2", {"traceparent": OTHER}, {"traceparent": SAMPLED}):
        pass
    with tracing.request("r3", {}, None):
        pass
    r1, r2, r3 = exporter.get_finished_spans()
    assert parent_ids(r1) == (TRACE_ID, SPAN_ID) and r1.kind == SpanKind.SERVER
    assert parent_ids(r2) == (0xABC, 0xDEF)
    assert r3.parent is None and r3.kind == SpanKind.SERVER  # a new trace


@pytest.mark.parametrize(
    "traceparent",
    [
        "garbage",
        SAMPLED.upper(),  # W3C: lowercase hex only
        f"00-{0:032x}-{SPAN_ID:016x}-01",  # an all-zero trace id
        f"00-{TRACE_ID:032x}-{0:016x}-01",  # an all-zero parent id
        f"ff-{TRACE_ID:032x}-{SPAN_ID:016x}-01",  # version ff is invalid
        SAMPLED + "-more",  # version 00 has no more fields
        f"01-{TRACE_ID:032x}-{SPAN_ID:016x}-01-" + "x" * 600,  # past 512 characters
        7,  # _meta is JSON: not a string
        None,
    ],
)
def test_a_malformed_traceparent_gives_no_trace_id_never_a_made_up_one(traceparent: Any) -> None:
    assert trace_id_of(INVALID_SPAN, {"traceparent": traceparent}, {}, None) == ""


def test_the_trace_id_is_the_request_spans_else_the_first_valid_carriers() -> None:
    # tracing off (the invalid span): the first carrier with a valid traceparent
    carriers = ({"traceparent": "garbage"}, {"traceparent": OTHER}, {"traceparent": SAMPLED})
    assert trace_id_of(INVALID_SPAN, *carriers) == f"{0xABC:032x}"
    future = f"01-{TRACE_ID:032x}-{SPAN_ID:016x}-01-later"  # a later version's extra fields
    assert trace_id_of(INVALID_SPAN, {"traceparent": future}) == f"{TRACE_ID:032x}"
    tracing, _ = in_memory(sample_ratio=0.0)
    with tracing.request("continued", {"traceparent": SAMPLED}) as span:
        assert trace_id_of(span, {"traceparent": OTHER}) == f"{TRACE_ID:032x}"
    with tracing.request("began", {}) as span:  # not sampled: the trace it began all the same
        began = span.get_span_context().trace_id
        assert not span.is_recording() and trace_id_of(span) == f"{began:032x}" != "0" * 32


def test_the_core_refuses_a_trace_id_that_is_not_one() -> None:
    from maitred.actions.model import Decision, ToolCall
    from maitred.context import CallContext

    good = f"{TRACE_ID:032x}"
    assert CallContext(trace_id=good).trace_id == good
    assert Decision(ToolCall("t", {}), "allow", trace_id=good).to_json()["trace_id"] == good
    assert "trace_id" not in Decision(ToolCall("t", {}), "allow").to_json()  # none: its old form
    for bad in (good.upper(), "0" * 32, good[:-1], good + "0", "x" * 32):
        with pytest.raises(ValueError, match="not a W3C trace id"):
            CallContext(trace_id=bad)
        with pytest.raises(ValueError, match="not a W3C trace id"):
            Decision(ToolCall("t", {}), "allow", trace_id=bad)


def test_under_a_span_already_open_in_this_process_the_request_span_is_its_child() -> None:
    tracing, exporter = in_memory()
    with tracing.span("outer") as outer, tracing.request("inner", {"traceparent": OTHER}):
        pass
    inner, _ = exporter.get_finished_spans()
    assert parent_ids(inner) == (
        outer.get_span_context().trace_id,
        outer.get_span_context().span_id,
    )
    assert inner.kind == SpanKind.INTERNAL  # never a second SERVER span in one process


def test_a_remote_context_already_current_is_kept_when_no_carrier_names_one() -> None:
    tracing, exporter = in_memory()
    remote = trace.NonRecordingSpan(
        trace.SpanContext(TRACE_ID, SPAN_ID, is_remote=True, trace_flags=trace.TraceFlags(1))
    )
    with trace.use_span(remote):
        assert parent_of({}) is not None
        with tracing.request("r"):
            pass
    [span] = exporter.get_finished_spans()
    assert parent_ids(span) == (TRACE_ID, SPAN_ID) and span.kind == SpanKind.SERVER


def test_sampling_keeps_the_callers_choice_and_samples_new_traces_by_ratio() -> None:
    tracing, exporter = in_memory(sample_ratio=0.0)
    with tracing.request("new") as new:
        assert not new.is_recording()
    with tracing.request("sampled", {"traceparent": SAMPLED}) as sampled:
        assert sampled.is_recording()
    with tracing.request("declined", {"traceparent": NOT_SAMPLED}) as declined:
        assert not declined.is_recording()
    assert [s.name for s in exporter.get_finished_spans()] == ["sampled"]


def test_an_exception_fails_the_span_by_its_type_without_its_message() -> None:
    tracing, exporter = in_memory()
    with pytest.raises(KeyError), tracing.span("s"):
        raise KeyError("the customer's card number")
    [span] = exporter.get_finished_spans()
    assert span.attributes is not None and span.attributes["error.type"] == "KeyError"
    assert span.events == () and "card" not in (span.status.description or "")


def test_each_tracing_has_its_own_provider_and_the_global_one_is_untouched() -> None:
    first, first_out = in_memory(service_name="gw-a")
    second, second_out = in_memory(service_name="gw-b")
    with first.span("a"):
        pass
    with second.span("b"):
        pass
    assert [s.name for s in first_out.get_finished_spans()] == ["a"]
    assert [s.name for s in second_out.get_finished_spans()] == ["b"]
    [a] = first_out.get_finished_spans()
    assert a.resource.attributes["service.name"] == "gw-a"
    assert not isinstance(trace.get_tracer_provider(), TracerProvider)  # never set globally


def test_a_global_sdk_an_application_set_is_neither_used_nor_silenced() -> None:
    global_out = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(global_out))
    tracing, exporter = in_memory()
    with provider.get_tracer("app").start_as_current_span("app request"), tracing.request("r"):
        pass
    [app] = global_out.get_finished_spans()
    [ours] = exporter.get_finished_spans()
    assert app.context is not None and parent_ids(ours) == (
        app.context.trace_id,
        app.context.span_id,
    )


def test_the_console_exporter_writes_to_stderr_never_stdout(
    capfd: pytest.CaptureFixture[str],
) -> None:
    tracing = Tracing.start(TracingOptions(enabled=True, exporter="console"))
    with tracing.span("maitred.check"):
        pass
    tracing.close()
    out, err = capfd.readouterr()
    assert out == ""  # a stdio gateway's stdout is the MCP protocol
    assert '"name": "maitred.check"' in err


def test_otlp_posts_the_spans_to_the_collector_when_closed() -> None:
    with collecting() as collector:
        options = TracingOptions(
            enabled=True,
            endpoint=collector.url,
            headers={"x-api-key": "k1"},
            service_name="maitred-gateway",
        )
        tracing = Tracing.start(options)
        with tracing.request("maitred.call", {"traceparent": SAMPLED}) as span:
            span.set_attribute("maitred.decision.code", "OK")
        tracing.close()  # the batch is exported on close
    [export] = collector.exports
    assert export.path == "/v1/traces" and export.headers["x-api-key"] == "k1"
    [(resource, sent)] = collector.spans()
    assert resource["service.name"] == "maitred-gateway"
    assert sent.name == "maitred.call"
    assert sent.trace_id == TRACE_ID.to_bytes(16, "big")
    assert sent.parent_span_id == SPAN_ID.to_bytes(8, "big")
