"""An OTLP/HTTP trace collector on loopback, for the tracing tests: it keeps every export it is
sent and decodes them with the OTLP protobuf types (``opentelemetry-proto``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


@dataclass
class Export:
    """One POST the collector received."""

    path: str
    headers: dict[str, str]
    request: ExportTraceServiceRequest


@dataclass
class Collector:
    url: str
    exports: list[Export] = field(default_factory=list)

    def spans(self) -> list[tuple[dict[str, str], Any]]:
        """Every span received, with its resource's string attributes."""
        found = []
        for export in self.exports:
            for resource_spans in export.request.resource_spans:
                resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
                for scope in resource_spans.scope_spans:
                    found += [(resource, span) for span in scope.spans]
        return found


@contextmanager
def collecting() -> Iterator[Collector]:
    """A collector listening on a free loopback port for the block."""
    collector = Collector("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            request = ExportTraceServiceRequest.FromString(body)
            collector.exports.append(Export(self.path, dict(self.headers), request))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    collector.url = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield collector
    finally:
        server.shutdown()
        server.server_close()
