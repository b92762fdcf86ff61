"""Arguments a client cannot mean, through the gateway's ``tools/call``: a rejection naming the
argument (``isError``, ``ARGS_INVALID``), logged like every refusal with the arguments withheld
(the log never holds the bad value), nothing sent upstream, and the gateway keeps serving --
never a crash of the gateway or of its decision log."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from fastmcp import Client
from tests.mcp.conftest import Site
from tests.mcp.test_gateway import rejection, run_gateway
from tests.mcp.test_http import ACME, Deployment, deploy

from maitred.gateway.limits import argument_fault
from maitred.log.base import open_log
from maitred.log.storable import text_fault

BAD = {
    # a client in the same process hands the string over unparsed (was a UnicodeEncodeError)
    "surrogate-value": ({"account": "acc-\ud800"}, "account", "lone surrogate"),
    "surrogate-in-a-list": ({"account": "acc-1", "n": ["ok", "\udfff"]}, "n[1]", "lone surrogate"),
    # PostgreSQL text cannot hold a NUL: it would fail the group commit carrying it (issue 27)
    "nul-value": ({"account": "acc-\x001"}, "account", "NUL"),
    "nul-key": ({"account": "acc-1", "a\x00": 1}, "a\x00", "NUL"),
}


@pytest.mark.parametrize(("arguments", "where", "what"), BAD.values(), ids=BAD.keys())
def test_an_argument_outside_json_is_refused_and_the_gateway_keeps_serving(
    site: Site, arguments: dict[str, Any], where: str, what: str
) -> None:
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any], seen: list[Any]) -> None:
        got["bad"] = await client.call_tool("get_plan", arguments, raise_on_error=False)
        got["good"] = await client.call_tool("get_plan", {"account": "acc-1"})

    run_gateway(site, scenario)
    payload = rejection(got["bad"])
    assert payload["code"] == "ARGS_INVALID" and payload["executed"] is False
    assert f"argument {where!r}" in payload["message"] and what in payload["message"]
    assert payload["fields"] == [where.split("[")[0].replace("\x00", "\\x00")]  # storable
    assert not got["good"].is_error
    assert site.upstream_calls() == ["get_plan"]  # only the good call went upstream
    with open_log(str(site.log)) as log:
        rows = {r["code"]: r for r in log.iter_action_decisions()}
    assert sorted(rows) == ["ARGS_INVALID", "OK"] and rows["OK"]["tool"] == "get_plan"
    refused = json.loads(rows["ARGS_INVALID"]["decision_json"])
    assert refused["decision_id"] == payload["decision_id"]  # what the model saw is findable
    assert refused["call"]["name"] == "get_plan" and refused["call"]["arguments"] == {}
    assert "withheld" in refused["message"] and f"argument {where!r}" in refused["message"]


def test_a_tool_name_with_a_lone_surrogate_is_refused_and_recorded_escaped() -> None:
    found = argument_fault("upgr\ud800ade", {"a": 1})
    assert found is not None
    call, hold = found
    assert hold.code == "TOOL_UNKNOWN" and "\\ud800" in hold.message_for_model
    assert call.name == "upgr\\ud800ade" and call.arguments == {}  # storable: no surrogate
    nul = argument_fault("upgr\x00ade", {})
    assert nul is not None and nul[1].code == "TOOL_UNKNOWN" and "NUL" in nul[1].message_for_model
    assert nul[0].name == "upgr\\x00ade"
    deep: Any = 1
    for _ in range(40):
        deep = [deep]
    nested = argument_fault("upgrade", {"x": deep})
    assert nested is not None and "deeper than 32" in nested[1].message_for_model
    assert nested[0].arguments == {} and "withheld" in nested[1].reason
    assert argument_fault("upgrade", {"x": [1.5, "caf\u00e9 \U0001f600", {"y": None}]}) is None


def test_what_an_argument_fault_records_can_be_stored() -> None:
    """The call, the reason and the fields a fault is logged with hold no NUL and no lone
    surrogate, whatever the client sent (a key holding one included)."""
    for name, arguments in [
        ("upgr\ud800ade", {}),
        ("upgr\x00ade", {}),
        ("upgrade", {"a\x00": 1}),
        ("upgrade", {"a\ud800": 1}),
        ("upgrade", {"n": ["ok", "\udfff"]}),
    ]:
        found = argument_fault(name, arguments)
        assert found is not None, (name, arguments)
        call, hold = found
        texts = [call.name, hold.reason, hold.message_for_model, *hold.fields]
        assert not [t for t in texts if text_fault(t)], (name, arguments)


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp-time"
SRC = Path(__file__).resolve().parents[2] / "src"
BIN = Path(sys.executable).parent


def _rpc(id_: int | None, method: str, params: str) -> bytes:
    head = f'{{"jsonrpc": "2.0", "id": {id_}, ' if id_ is not None else '{"jsonrpc": "2.0", '
    return (head + f'"method": "{method}", "params": {params}}}\n').encode()


@pytest.mark.slow  # a gateway subprocess in front of mcp-server-time
@pytest.mark.parametrize("value", ["NaN", "Infinity", "1e400"])
def test_a_non_finite_number_on_the_wire_is_args_invalid_not_gate_unavailable(
    tmp_path: Path, value: str
) -> None:
    path = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    if shutil.which("mcp-server-time", path=path) is None:
        pytest.skip("mcp-server-time is not installed (pip install mcp-server-time)")
    for name in ("gateway.yaml", "time.maitred.yaml", "accounts.json"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    hello = (
        '{"protocolVersion": "2025-06-18", "capabilities": {}, '
        '"clientInfo": {"name": "raw", "version": "1"}}'
    )
    call = f'{{"name": "get_current_time", "arguments": {{"timezone": "UTC", "n": {value}}}}}'
    sent = (
        _rpc(1, "initialize", hello)
        + _rpc(None, "notifications/initialized", "{}")
        + _rpc(2, "tools/call", call)
    )
    gateway = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "maitred.cli.main",
            "mcp",
            "--config",
            str(tmp_path / "gateway.yaml"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={"PATH": path, "PYTHONPATH": str(SRC)},
    )
    watchdog = threading.Timer(120, gateway.kill)  # a hung gateway fails the test, not the run
    watchdog.start()
    try:
        assert gateway.stdin is not None and gateway.stdout is not None
        gateway.stdin.write(sent)
        gateway.stdin.flush()  # stdin stays open: at EOF the gateway would stop before answering
        result = None
        for line in gateway.stdout:
            answer = json.loads(line)
            if answer.get("id") == 2:
                result = answer["result"]
                break
    finally:
        watchdog.cancel()
        gateway.kill()
        gateway.wait(timeout=30)
    assert result is not None, "the gateway never answered the call"
    assert result["isError"] is True
    payload = json.loads(result["content"][0]["text"])
    assert payload["code"] == "ARGS_INVALID", payload  # was GATE_UNAVAILABLE (a LogError)
    assert payload["fields"] == ["n"] and "not a finite number" in payload["message"]
    with open_log(str(tmp_path / "gateway.sqlite")) as log:
        rows = list(log.iter_action_decisions())
    assert [(r["code"], r["decision_id"]) for r in rows] == [
        ("ARGS_INVALID", payload["decision_id"])
    ]  # logged, with its arguments withheld (a NaN cannot be stored)
    assert json.loads(rows[0]["decision_json"])["call"]["arguments"] == {}


@pytest.fixture
def http_site(tmp_path: Path) -> Iterator[Deployment]:
    site = deploy(tmp_path, time=False)  # the notes upstream over HTTP only
    try:
        yield site
    finally:
        site.gateway.stop()
        site.notes.stop()


HTTP_BAD = {
    # the SDK's reader keeps the last of two keys: the gate and the upstream could disagree
    "duplicate-name": (
        '{"name": "add_note", "name": "delete_note", "arguments": {"text": "x"}}',
        "params.name", "twice",
    ),
    "duplicate-argument": (
        '{"name": "add_note", "arguments": {"text": "x", "text": "y"}}',
        "params.arguments.text", "twice",
    ),
    "nan": ('{"name": "add_note", "arguments": {"text": "x", "n": NaN}}',
            "params.arguments.n", "not a finite number"),
    "surrogate": ('{"name": "add_note", "arguments": {"text": "\\udc00"}}',
                  "params.arguments.text", "lone surrogate"),
    "nul": ('{"name": "add_note", "arguments": {"text": "a\\u0000b"}}',
            "params.arguments.text", "NUL"),
    "nul-name": ('{"name": "add\\u0000note", "arguments": {"text": "x"}}', "params.name", "NUL"),
}  # fmt: skip


@pytest.mark.slow  # the gateway and an upstream as subprocesses
def test_json_outside_i_json_over_http_is_a_json_rpc_error_naming_the_field(
    http_site: Deployment,
) -> None:
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {ACME}",
    }
    for case, (params, field, what) in HTTP_BAD.items():
        body = '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": ' + params + "}"
        r = httpx2.post(http_site.url, content=body.encode(), headers=headers, timeout=30)
        assert r.status_code == 400, (case, r.text)
        error = r.json()["error"]
        assert error["code"] == -32602, case
        assert error["data"]["field"] == field and what in error["message"], case

    async def main() -> None:  # the same gateway still serves a good call
        async with Client(http_site.url, auth=ACME) as client:
            await client.call_tool("add_note", {"text": "still here"})

    anyio.run(main)
    assert http_site.calls == ["add_note"]
    with open_log(str(http_site.root / "gateway.sqlite")) as log:
        assert [d["tool"] for d in log.iter_action_decisions()] == ["add_note"]
