"""Bad input to the gateway over HTTP: clear JSON-RPC errors, nothing decided, the server stays up.

Malformed JSON, JSON that is not JSON-RPC, an unknown session and an oversized body, each sent
with a valid token to a real `maitred mcp --http` subprocess (the deployment of test_http.py);
after all of them the same gateway still lists and calls for that token.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from fastmcp import Client
from tests.mcp.test_http import ACME, Deployment, deploy

from maitred.gateway.http_config import HttpServer
from maitred.log.base import open_log

pytestmark = pytest.mark.slow  # starts the gateway and an upstream as subprocesses


@pytest.fixture
def http_only(tmp_path: Path) -> Iterator[Deployment]:
    site = deploy(tmp_path, time=False)  # the notes upstream over HTTP only
    try:
        yield site
    finally:
        site.gateway.stop()
        site.notes.stop()


def _post(url: str, body: bytes, **headers: str) -> httpx2.Response:
    base = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {ACME}",
    }
    return httpx2.post(url, content=body, headers={**base, **headers}, timeout=30)


def _rpc(method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()


def test_bad_requests_get_json_rpc_errors_and_the_gateway_keeps_serving(
    http_only: Deployment,
) -> None:
    url = http_only.url
    limit = HttpServer().max_body_bytes
    huge = _rpc("tools/call", {"name": "add_note", "arguments": {"text": "x" * (2 * limit)}})
    answers = {
        "not json": _post(url, b"{not json"),
        "not json-rpc": _post(url, b'{"hello": 1}'),
        "unknown session": _post(url, _rpc("tools/list", {}), **{"Mcp-Session-Id": "bogus"}),
        "oversized": _post(url, huge),
    }
    statuses = {what: r.status_code for what, r in answers.items()}
    assert statuses == {
        "not json": 400,
        "not json-rpc": 400,
        "unknown session": 404,
        "oversized": 413,
    }
    errors = {what: r.json()["error"] for what, r in answers.items()}
    assert errors["not json"]["code"] == -32700  # JSON-RPC's parse error
    assert "server.max_body_bytes" in errors["oversized"]["message"]
    assert str(limit) in errors["oversized"]["message"]

    got: dict[str, Any] = {}

    async def main() -> None:  # the same gateway, the same token, after all of that
        async with Client(url, auth=ACME) as client:
            got["tools"] = sorted(t.name for t in await client.list_tools())
            await client.call_tool("add_note", {"text": "still here"})

    anyio.run(main)
    assert "add_note" in got["tools"]
    assert http_only.calls == ["add_note"]  # only the good call reached the upstream
    with open_log(str(http_only.root / "gateway.sqlite")) as log:
        decided = [d["tool"] for d in log.iter_action_decisions()]
    assert decided == ["add_note"]  # none of the bad requests was decided or logged


def test_a_chunked_body_over_the_limit_is_refused_as_it_arrives(http_only: Deployment) -> None:
    limit = HttpServer().max_body_bytes

    def chunks() -> Iterator[bytes]:  # no Content-Length: the body's size is only seen by reading
        yield b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"text": "'
        for _ in range(3):
            yield b"y" * limit
        yield b'"}}'

    response = httpx2.post(
        http_only.url,
        content=chunks(),
        headers={
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "Authorization": f"Bearer {ACME}",
        },
        timeout=30,
    )
    assert response.status_code == 413
    assert "server.max_body_bytes" in response.json()["error"]["message"]
    assert http_only.calls == []
