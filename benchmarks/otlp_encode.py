"""CPU per span of the OTLP export request: maitred's encoder (``maitred._otlp.encode``)
against the OpenTelemetry exporter's own (``encode_spans(...).SerializePartialToString()``).

The spans are what the gateway exports for one forwarded ``tools/call`` (``maitred.call`` with
its attributes, ``maitred.upstream``), made by the real SDK, encoded in batches of 512 as the
batch processor sends them; both encoders run in one process, in turn, over the same spans,
and the ratio is printed. Needs the ``otlp`` extra.

    PYTHONPATH=src .venv/bin/python benchmarks/otlp_encode.py
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from maitred._otlp import encode
from maitred.tracing import Tracing, TracingOptions

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
BATCH = 512


def gateway_spans(calls: int) -> list[ReadableSpan]:
    """The spans of ``calls`` forwarded calls, as the gateway makes them."""
    memory = InMemorySpanExporter()
    tracing = Tracing.start(TracingOptions(enabled=True, exporter="none"), exporter=memory)
    for i in range(calls):
        with tracing.request("maitred.call", {"traceparent": TRACEPARENT}) as span:
            span.set_attributes(
                {
                    "maitred.session.id": "acme-p-3f9c2a1b7d4e8f60a1b2c3d4",
                    "maitred.tenant": "acme",
                    "maitred.account": "acc-1",
                    "maitred.decision.id": f"dec-{i:012x}",
                    "maitred.decision.code": "OK",
                    "maitred.decision.verdict": "allow",
                    "maitred.turn.id": "turn-5b1c",
                    "maitred.check.duration_ms": 0.412,
                }
            )
            upstream = {"maitred.upstream": "fs", "gen_ai.tool.name": "read_text_file"}
            with tracing.span("maitred.upstream", kind=SpanKind.CLIENT, attributes=upstream):
                pass
            span.set_attributes({"gen_ai.tool.name": "read_text_file", "maitred.code": "OK"})
    tracing.close()
    return list(memory.get_finished_spans())


def cpu_us_per_span(
    fn: Callable[[Sequence[ReadableSpan]], Any], spans: list[ReadableSpan]
) -> float:
    started = time.process_time()
    for at in range(0, len(spans), BATCH):
        fn(spans[at : at + BATCH])
    return (time.process_time() - started) / len(spans) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=4096, help="forwarded calls (2 spans each)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    spans = gateway_spans(args.calls)
    sdk: list[float] = []
    ours: list[float] = []
    for _ in range(args.rounds):  # in turn, so both see the same stretches of the machine
        sdk.append(cpu_us_per_span(lambda b: encode_spans(b).SerializePartialToString(), spans))
        ours.append(cpu_us_per_span(encode, spans))
    sdk.sort()
    ours.sort()
    mid = args.rounds // 2
    print(f"{len(spans):,} spans, batches of {BATCH}, {args.rounds} rounds (median CPU us a span):")
    print(f"  the exporter's encoder  {sdk[mid]:6.1f}")
    print(f"  maitred._otlp.encode    {ours[mid]:6.1f}")
    print(f"  ratio                   {sdk[mid] / ours[mid]:6.2f}x")


if __name__ == "__main__":
    main()
