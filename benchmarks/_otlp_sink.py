"""An OTLP/HTTP trace collector on loopback for ``benchmarks/gateway.py --production``.

A process of its own (as a real collector is), so decoding the gateway's exports takes no time
from the benchmark's client. It accepts OTLP over HTTP (protobuf, ``POST /v1/traces``), decodes
every export with the OTLP types (``opentelemetry-proto``) and counts the spans it received by
name; ``GET /counts`` answers those counts as JSON (``{"exports": N, "spans": {name: n}}``).
It prints ``serving http://127.0.0.1:N/v1/traces`` on stderr once the socket is bound, and runs
until it is terminated.

    python benchmarks/_otlp_sink.py
"""

from __future__ import annotations

import json
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def main() -> None:
    spans: Counter[str] = Counter()
    exports = [0]
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path != "/v1/traces":
                self.send_error(404)
                return
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            request = ExportTraceServiceRequest.FromString(body)  # a bad body: the handler fails
            names = [
                span.name
                for resource in request.resource_spans
                for scope in resource.scope_spans
                for span in scope.spans
            ]
            with lock:
                exports[0] += 1
                spans.update(names)
            self._answer(200, b"", "application/x-protobuf")

        def do_GET(self) -> None:
            if self.path != "/counts":
                self.send_error(404)
                return
            with lock:
                found = {"exports": exports[0], "spans": dict(spans)}
            self._answer(200, json.dumps(found).encode(), "application/json")

        def _answer(self, status: int, body: bytes, media: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", media)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"serving http://127.0.0.1:{server.server_address[1]}/v1/traces", file=sys.stderr)
    sys.stderr.flush()
    try:
        server.serve_forever()
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
