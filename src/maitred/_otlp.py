"""OTLP/HTTP export of finished spans, with the request written straight in protobuf's wire
format.

The OTLP exporter's own encoder builds one protobuf object per span, attribute and value, and
groups spans by resource through ``Resource.__hash__``, which dumps the resource's attributes
as JSON for every span: about 90 µs of CPU a span on the machines BENCHMARKS.md was measured
on, on the export thread, which shares the GIL and the cores with the requests being served.
:func:`encode` writes the same ``ExportTraceServiceRequest`` with byte strings instead (about
a sixth of that), and :class:`OtlpExporter` is the SDK's ``OTLPSpanExporter`` (its transport,
retries, compression, headers, TLS options and environment variables) sending those bytes.

The bytes parse to exactly the message the exporter's encoder builds from the same spans
(``tests/test_otlp.py`` checks it for arbitrary spans, against the installed encoder). What
:func:`encode` does not write -- span events and links, map-valued attributes, an integer
outside int64 -- makes it answer ``None`` and that batch goes through the exporter's own
encoder; maitred's spans carry none of them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import SpanKind

__all__ = ["OtlpExporter", "encode"]

_INT64 = range(-(2**63), 2**63)
#: the flags every span carries: whether its parent was remote is known (and, 0x200, it was)
_HAS_IS_REMOTE, _IS_REMOTE = 0x100, 0x200
_KIND = {
    SpanKind.INTERNAL: 1,
    SpanKind.SERVER: 2,
    SpanKind.CLIENT: 3,
    SpanKind.PRODUCER: 4,
    SpanKind.CONSUMER: 5,
}
_fixed64 = struct.Struct("<Q").pack
_fixed32 = struct.Struct("<I").pack
_double = struct.Struct("<d").pack


class _Unwritten(Exception):
    """Something :func:`encode` does not write: the exporter's own encoder takes the batch."""


_SMALL = [bytes((i,)) for i in range(0x80)]


def _varint(n: int) -> bytes:
    if n < 0x80:
        return _SMALL[n]
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field (a string, bytes or an embedded message)."""
    n = len(payload)
    return tag + (_SMALL[n] if n < 0x80 else _varint(n)) + payload


def _text(tag: bytes, value: str | None) -> bytes:
    """A plain ``string`` field: absent when empty (proto3)."""
    return _field(tag, value.encode()) if value else b""


def _any(value: Any) -> bytes:
    """An ``AnyValue`` (a oneof: each member is written even when it is zero or empty)."""
    if value is None:
        return b""
    if value is True or value is False:
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, str):
        return _field(b"\x0a", value.encode())
    if isinstance(value, int):
        if value not in _INT64:
            raise _Unwritten("an integer outside int64")
        return b"\x18" + _varint(value if value >= 0 else value + 2**64)
    if isinstance(value, float):
        return b"\x21" + _double(value)
    if isinstance(value, bytes):
        return _field(b"\x3a", value)
    if isinstance(value, (tuple, list)):
        return _field(b"\x2a", b"".join(_field(b"\x0a", _any(v)) for v in value))
    raise _Unwritten(f"a {type(value).__name__} value")


#: encoded ``KeyValue`` bodies of recent (key, type, value) pairs whose encoding the pair
#: decides (text, integers, booleans: the type is part of the key, ``True == 1``); most of a
#: span's attributes repeat from span to span. Emptied when full.
_PAIRS: dict[tuple[str, type, Any], bytes] = {}
_PAIRS_MAX = 4096


def _pair(key: str, value: Any) -> bytes:
    kind = type(value)
    if kind is not str and kind is not int and kind is not bool:
        return _text(b"\x0a", key) + _field(b"\x12", _any(value))
    memo = (key, kind, value)
    body = _PAIRS.get(memo)
    if body is None:
        if len(_PAIRS) >= _PAIRS_MAX:
            _PAIRS.clear()
        body = _PAIRS[memo] = _text(b"\x0a", key) + _field(b"\x12", _any(value))
    return body


def _attributes(tag: bytes, attributes: Any) -> bytes:
    """Repeated ``KeyValue`` (a key, then its value, always present)."""
    if not attributes:
        return b""
    return b"".join([_field(tag, _pair(key, value)) for key, value in attributes.items()])


def _count(tag: bytes, n: int | None) -> bytes:
    return tag + _varint(n) if n else b""


def _span(span: ReadableSpan) -> bytes:
    if span.events or span.links:
        raise _Unwritten("span events or links")
    context = span.context
    assert context is not None  # a finished SDK span has one
    parent = span.parent
    state = context.trace_state
    flags = _HAS_IS_REMOTE | (_IS_REMOTE if parent is not None and parent.is_remote else 0)
    status = span.status
    return b"".join(
        (
            _field(b"\x0a", context.trace_id.to_bytes(16, "big")),
            _field(b"\x12", context.span_id.to_bytes(8, "big")),
            _text(b"\x1a", ",".join(f"{k}={v}" for k, v in state.items()) if state else ""),
            _field(b"\x22", parent.span_id.to_bytes(8, "big")) if parent is not None else b"",
            _text(b"\x2a", span.name),
            b"\x30" + _varint(_KIND[span.kind]),
            b"\x39" + _fixed64(span.start_time) if span.start_time else b"",
            b"\x41" + _fixed64(span.end_time) if span.end_time else b"",
            _attributes(b"\x4a", span.attributes),
            _count(b"\x50", span.dropped_attributes),
            _count(b"\x60", span.dropped_events),
            _count(b"\x70", span.dropped_links),
            _field(
                b"\x7a",
                _text(b"\x12", status.description) + _count(b"\x18", status.status_code.value),
            ),
            b"\x85\x01" + _fixed32(flags),
        )
    )


def _grouped(items: Sequence[Any], key: Callable[[Any], Any]) -> list[tuple[Any, list[Any]]]:
    """``items`` grouped by ``key``, equal keys together, in order of first appearance (a key
    is compared by identity first: one provider's spans share one resource object)."""
    groups: list[tuple[Any, list[Any]]] = []
    last: tuple[Any, list[Any]] | None = None
    for item in items:
        k = key(item)
        if last is None or (last[0] is not k and last[0] != k):
            last = next((g for g in groups if g[0] is k or g[0] == k), None)
            if last is None:
                last = (k, [])
                groups.append(last)
        last[1].append(item)
    return groups


def encode(spans: Sequence[ReadableSpan]) -> bytes | None:
    """The serialized ``ExportTraceServiceRequest`` of ``spans`` (resource, then scope, then
    spans, each group in order of first appearance), or ``None`` when a span holds something
    this encoder does not write (see the module docstring)."""
    try:
        out = []
        for resource, of_resource in _grouped(spans, lambda s: s.resource):
            scoped = []
            for scope, of_scope in _grouped(of_resource, lambda s: s.instrumentation_scope):
                head = b""
                if scope is not None:
                    head = (
                        _text(b"\x0a", scope.name)
                        + _text(b"\x12", scope.version)
                        + _attributes(b"\x1a", scope.attributes)
                    )
                body = _field(b"\x0a", head) + b"".join(_field(b"\x12", _span(s)) for s in of_scope)
                if scope is not None:
                    body += _text(b"\x1a", scope.schema_url)
                scoped.append(_field(b"\x12", body))
            entry = (
                _field(b"\x0a", _attributes(b"\x0a", resource.attributes))
                + b"".join(scoped)
                + _text(b"\x1a", resource.schema_url)
            )
            out.append(_field(b"\x0a", entry))
        return b"".join(out)
    except _Unwritten:
        return None


class OtlpExporter(OTLPSpanExporter):
    """The SDK's OTLP/HTTP span exporter, sending :func:`encode`'s bytes (see the module
    docstring); a batch :func:`encode` does not write, a request over the exporter's size
    limit, and an exporter whose internals are not the ones this was written against
    (:func:`fast_path`) are exported by the SDK's own code path, unchanged."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        body = encode(spans) if fast_path(self) and not self._shutdown else None
        limit = getattr(self, "_max_request_size", 0)
        if body is None or 0 < limit < len(body):
            return super().export(spans)
        with self._metrics.export_operation(len(spans)) as result:
            sent = self._client.export(body)
            if not sent.success:
                result.error = sent.error
                if sent.status_code is not None:
                    result.error_attrs = {"http.response.status_code": sent.status_code}
                return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS


def fast_path(exporter: OTLPSpanExporter) -> bool:
    """Whether ``exporter`` has the internals :class:`OtlpExporter` sends through (the
    installed SDK's HTTP client and export metrics); else it exports the SDK's way."""
    client = getattr(exporter, "_client", None)
    metrics = getattr(exporter, "_metrics", None)
    return (
        callable(getattr(client, "export", None))
        and callable(getattr(metrics, "export_operation", None))
        and isinstance(getattr(exporter, "_shutdown", None), bool)
    )
