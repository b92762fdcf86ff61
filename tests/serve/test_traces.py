"""The service's traces: a span per ``/v1`` request with the turn or the check inside it, the
caller's ``traceparent`` header as its parent, the ids on each span against the decision log;
the config's ``tracing`` block; and a real ``maitred serve`` exporting to an OTLP collector."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from starlette.testclient import TestClient
from tests.otlp_collector import collecting

from maitred.console import Access, create_console
from maitred.errors import ConfigError
from maitred.log.base import open_log
from maitred.serve import Service, create_app, load_config, parse_config
from maitred.serve.traces import Traced
from maitred.tracing import Tracing, TracingOptions

from .deploy import DOMAIN_TEXT, auth, logged_decisions
from .live import start_server

TRACE_ID, CALLER = 0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7
TRACEPARENT = f"00-{TRACE_ID:032x}-{CALLER:016x}-01"


@pytest.fixture
def traced(service: Service, deployment: Path) -> Iterator[tuple[TestClient, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    tracing = Tracing.start(TracingOptions(enabled=True, exporter="none"), exporter=exporter)
    app = create_app(service, load_config(deployment).limits, tracing=tracing)
    with TestClient(app, raise_server_exceptions=True) as client:
        yield client, exporter
    tracing.close()


def one(spans: Any, name: str) -> ReadableSpan:
    [found] = [s for s in spans if s.name == name]
    return found


def ids(span: ReadableSpan) -> tuple[int, int]:
    assert span.context is not None
    return span.context.trace_id, span.context.span_id


def parent_of(span: ReadableSpan) -> tuple[int, int] | None:
    return None if span.parent is None else (span.parent.trace_id, span.parent.span_id)


def test_a_turn_and_a_check_continue_the_callers_trace(
    traced: tuple[TestClient, InMemorySpanExporter], service: Service, deployment: Path
) -> None:
    client, exporter = traced
    headers = {**auth("acme"), "traceparent": TRACEPARENT}
    turn = client.post(
        "/v1/turns",
        json={"text": DOMAIN_TEXT, "account": "acc-free", "session_id": "s-1"},
        headers=headers,
    ).json()
    check = client.post(
        "/v1/calls/check",
        json={"session_id": "s-1", "call": {"name": "connect_custom_domain", "arguments": {}}},
        headers=headers,
    ).json()
    spans = exporter.get_finished_spans()
    turns, turn_span = one(spans, "POST /v1/turns"), one(spans, "maitred.turn")
    checks, check_span = one(spans, "POST /v1/calls/check"), one(spans, "maitred.check")
    for request in (turns, checks):
        assert parent_of(request) == (TRACE_ID, CALLER) and request.kind == SpanKind.SERVER
        assert request.attributes is not None
        assert request.attributes["http.response.status_code"] == 200
    assert parent_of(turn_span) == ids(turns) and parent_of(check_span) == ids(checks)

    with open_log(str(deployment.parent / "log.sqlite")) as log:
        [logged] = [(t["turn_id"], t["run_id"]) for t in log.iter_turns()]
    assert logged == (turn["turn_id"], service.run_ids["acme"])
    assert dict(turn_span.attributes or {}) == {
        "maitred.tenant": "acme",
        "maitred.account": "acc-free",
        "maitred.session.id": "s-1",
        "maitred.turn.id": turn["turn_id"],
        "maitred.run.id": service.run_ids["acme"],
        "maitred.tools.exposed": len(turn["exposed"]),
        "maitred.tools.blocked": 1,
    }
    assert logged_decisions(deployment.parent) == [(check["decision_id"], "TOOL_NOT_OFFERED")]
    assert dict(check_span.attributes or {}) == {
        "maitred.tenant": "acme",
        "maitred.session.id": "s-1",
        "maitred.decision.id": check["decision_id"],
        "maitred.decision.code": "TOOL_NOT_OFFERED",
        "maitred.decision.verdict": "reject",
        "gen_ai.tool.name": "connect_custom_domain",
        "maitred.turn.id": turn["turn_id"],
    }


JSON = {"Accept": "application/json"}
CHECK = {"session_id": "s-t", "call": {"name": "connect_custom_domain", "arguments": {}}}


def _console_json(root: Path, path: str) -> Any:
    """What the console over the service's log answers at ``path`` (its JSON twin)."""
    with (
        open_log(str(root / "log.sqlite"), read_only=True) as log,
        TestClient(create_console(log, Access(open=True))) as console,
    ):
        answer = console.get(path, headers=JSON)
        assert answer.status_code == 200, answer.text
        return answer.json()


def test_a_check_stores_the_trace_id_of_its_request_and_the_console_shows_it(
    client: TestClient, deployment: Path
) -> None:
    """Tracing off: the caller's ``traceparent`` header is the decision's trace id; a
    malformed one (or none) gives none, never a made-up one."""
    turn = {"text": DOMAIN_TEXT, "account": "acc-free", "session_id": "s-t"}
    assert client.post("/v1/turns", json=turn, headers=auth("acme")).status_code == 200
    sent = {
        "traced": TRACEPARENT,
        "upper": TRACEPARENT.upper(),  # W3C: lowercase hex only
        "zero": f"00-{0:032x}-{CALLER:016x}-01",  # an all-zero trace id is invalid
        "bad": "00-zz-yy-01",
        "none": None,
    }
    made = {}
    for name, header in sent.items():
        headers = {**auth("acme"), **({"traceparent": header} if header else {})}
        answer = client.post("/v1/calls/check", json=CHECK, headers=headers).json()
        made[name] = answer["decision_id"]
        assert answer["decision"].get("trace_id") == (
            f"{TRACE_ID:032x}" if header == TRACEPARENT else None
        )
    root = deployment.parent
    with open_log(str(root / "log.sqlite"), read_only=True) as log:
        stored = {r["decision_id"]: r["trace_id"] for r in log.iter_action_decisions()}
    expected = {did: (f"{TRACE_ID:032x}" if name == "traced" else "") for name, did in made.items()}
    assert stored == expected
    one_decision = _console_json(root, f"/decisions/{made['traced']}")
    assert one_decision["trace_id"] == f"{TRACE_ID:032x}" and one_decision["chain_ok"]
    for name in ("upper", "zero", "bad", "none"):
        assert _console_json(root, f"/decisions/{made[name]}")["trace_id"] is None
    by_trace = _console_json(root, f"/decisions?trace={TRACE_ID:032x}")["decisions"]
    assert [(d["decision_id"], d["trace_id"]) for d in by_trace] == [
        (made["traced"], f"{TRACE_ID:032x}")
    ]
    listed = _console_json(root, "/decisions?kind=call")["decisions"]
    assert {d["decision_id"]: d["trace_id"] for d in listed} == {
        did: trace or None for did, trace in expected.items()
    }


def test_with_tracing_on_a_check_stores_its_request_spans_trace_id(
    traced: tuple[TestClient, InMemorySpanExporter], deployment: Path
) -> None:
    """Tracing on: the request span's trace -- the caller's when it sent one, else the one
    the span began (what the exported spans carry)."""
    client, exporter = traced
    turn = {"text": DOMAIN_TEXT, "account": "acc-free", "session_id": "s-t"}
    assert client.post("/v1/turns", json=turn, headers=auth("acme")).status_code == 200
    exporter.clear()
    fresh = client.post("/v1/calls/check", json=CHECK, headers=auth("acme")).json()
    began = ids(one(exporter.get_finished_spans(), "maitred.check"))[0]
    exporter.clear()
    headers = {**auth("acme"), "traceparent": TRACEPARENT}
    continued = client.post("/v1/calls/check", json=CHECK, headers=headers).json()
    assert ids(one(exporter.get_finished_spans(), "maitred.check"))[0] == TRACE_ID
    root = deployment.parent
    assert _console_json(root, f"/decisions/{fresh['decision_id']}")["trace_id"] == f"{began:032x}"
    assert _console_json(root, f"/decisions/{continued['decision_id']}")["trace_id"] == (
        f"{TRACE_ID:032x}"
    )


def test_a_refused_request_is_one_span_with_its_status_and_probes_are_not_traced(
    traced: tuple[TestClient, InMemorySpanExporter],
) -> None:
    client, exporter = traced
    body = {"text": DOMAIN_TEXT, "account": "acc-free", "session_id": "s-2"}
    assert client.post("/v1/turns", json=body).status_code == 401
    assert client.get("/healthz").status_code == 200
    assert client.get("/metrics").status_code == 200
    [span] = exporter.get_finished_spans()
    assert span.name == "POST /v1/turns" and span.parent is None  # no traceparent: a new trace
    assert span.attributes is not None and span.attributes["http.response.status_code"] == 401
    assert span.status.status_code == StatusCode.UNSET  # a 4xx is the caller's, not a failure


def test_without_tracing_the_app_is_not_wrapped(service: Service, deployment: Path) -> None:
    assert not isinstance(create_app(service, load_config(deployment).limits), Traced)


def _config(tracing: Any) -> dict[str, Any]:
    return {
        "catalogs": ["tools.json"],
        "state": "accounts.json",
        "tenants": {"acme": {"token_sha256": "ab" * 32, "accounts": ["acc-1"]}},
        "tracing": tracing,
    }


def test_the_tracing_block_is_checked_field_by_field() -> None:
    assert parse_config(_config(None), "serve.yaml").tracing == TracingOptions(
        service_name="maitred-serve"
    )
    on = parse_config(_config({"enabled": True, "exporter": "none"}), "serve.yaml").tracing
    assert on.enabled and on.service_name == "maitred-serve"
    with pytest.raises(ConfigError, match=r"^serve\.yaml: field 'tracing\.sample' is not a known"):
        parse_config(_config({"sample": 0.5}), "serve.yaml")
    with pytest.raises(ConfigError, match=r"^serve\.yaml: field 'tracing\.exporter' must be one"):
        parse_config(_config({"exporter": "zipkin"}), "serve.yaml")


@pytest.mark.slow
def test_a_real_server_exports_its_spans_to_the_collector_when_it_stops(tmp_path: Path) -> None:
    with collecting() as collector:
        tracing = {"enabled": True, "endpoint": collector.url, "service_name": "serve-under-test"}
        base, proc = start_server(tmp_path, tracing=tracing)
        try:
            response = httpx.post(
                f"{base}/v1/turns",
                json={"text": DOMAIN_TEXT, "account": "acc-pro", "session_id": "real-1"},
                headers={**auth("acme"), "traceparent": TRACEPARENT},
                timeout=20.0,
            )
            assert response.status_code == 200
            proc.send_signal(signal.SIGTERM)  # a graceful stop flushes the batch
            proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    spans = {span.name: (resource, span) for resource, span in collector.spans()}
    resource, request = spans["POST /v1/turns"]
    _, turn = spans["maitred.turn"]
    assert resource["service.name"] == "serve-under-test"
    assert request.trace_id == TRACE_ID.to_bytes(16, "big")
    assert request.parent_span_id == CALLER.to_bytes(8, "big")
    assert turn.parent_span_id == request.span_id
    attributes = {a.key: a.value.string_value for a in turn.attributes}
    assert attributes["maitred.turn.id"] == response.json()["turn_id"]
