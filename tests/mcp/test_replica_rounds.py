"""Rounds finished on another replica, once (issue 34 item 4, issue 35 item 4).

Two ``maitred mcp`` processes over HTTP with one config: one PostgreSQL decision log (a schema
of the test server), one ``server.request_state_keys_file``, the recording shop upstream (a
stdio child of each) and the era server (HTTP, shared), and a round-robin forwarder in front
(:mod:`tests.mcp.forwarder`): every round below is a connection of its own, so consecutive
rounds land on alternate replicas. A 2026-07-28 client's approval asked through one process
is answered through the other and the call runs once; the same yes brought back again is
refused ``REQUEST_STATE_REPLAYED`` on both. An upstream's own question on a mutating tool is
finished on the other replica, and its state replayed is refused on both, the upstream not
called again. A state sealed for one grant of scopes is refused to another token of the same
account (``REQUEST_STATE_NOT_YOURS``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from tests.mcp.conftest import SIDECAR, UPSTREAM, Process, child_env, sha256
from tests.mcp.forwarder import Forwarder

from maitred.gateway.approval import ASK_KEY
from maitred.log.base import open_log
from maitred.log.verify import verify

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

ERA_SERVER = Path(__file__).with_name("era_server.py")
TOKEN = "tok-rounds-4b1f"
NARROW = "tok-rounds-narrow-90ce"  # the same tenant and account, another grant of scopes
KEY = "rounds-shared-key-" + "7" * 40
UPGRADE = {"account": "acc-1", "plan": "enterprise"}
YES = {ASK_KEY: mt.ElicitResult(action="accept", content={"value": True})}
NAME = {"who": mt.ElicitResult(action="accept", content={"name": "Ada"})}
SHOP = SIDECAR + (
    "      - name: enterprise_needs_a_yes\n"
    '        approve: args.plan != "pro"\n'
    "        reads: [args.plan]\n"
    "        message: The plans above pro are billed yearly.\n"
)


@dataclass
class Deployment:
    """Two replicas behind a forwarder, and where to look."""

    url: str
    replicas: list[str]
    forwarder: Forwarder
    calls: Path
    log: str

    def upstream_calls(self) -> list[str]:
        if not self.calls.exists():
            return []
        lines = self.calls.read_text(encoding="utf-8").splitlines()
        return [json.loads(line)["name"] for line in lines]

    def codes(self) -> list[str]:
        """The logged action decisions' codes, in the order they were logged; verified."""
        with open_log(self.log, read_only=True) as log:
            rows = sorted(log.iter_action_decisions(), key=lambda r: r["logged_at"])
            report = verify(log)
        assert report.ok, report.mismatches
        return [str(r["code"]) for r in rows]


def _config(root: Path, log: str, era_url: str) -> Path:
    (root / "shop.maitred.yaml").write_text(SHOP, encoding="utf-8")
    (root / "eras.maitred.yaml").write_text(
        "tools:\n  asks_name: {mutates: true}\n", encoding="utf-8"
    )
    (root / "accounts.json").write_text(
        json.dumps({"acc-1": {"account": {"plan": "free"}}}), encoding="utf-8"
    )
    (root / "request-state.keys").write_text(f"{KEY}\n", encoding="utf-8")
    config = root / "gateway.yaml"
    calls = root / "calls.jsonl"
    config.write_text(
        "state: accounts.json\n"
        f"log: '{log}'\n"
        "server: {host: 127.0.0.1, port: 0, request_state_keys_file: request-state.keys}\n"
        "tokens:\n"
        f"  - {{token_sha256: {sha256(TOKEN)}, tenant: acme, account: acc-1, "
        "scopes: [shop, notes]}\n"
        f"  - {{token_sha256: {sha256(NARROW)}, tenant: acme, account: acc-1, scopes: [shop]}}\n"
        "upstreams:\n"
        "  - name: shop\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(UPSTREAM))}]\n"
        f"    env: {{CALLS_FILE: {json.dumps(str(calls))}, "
        f"ACCOUNTS: {json.dumps(str(root / 'accounts.json'))}}}\n"
        "    contracts: shop.maitred.yaml\n"
        f"  - {{name: eras, url: {json.dumps(era_url)}, contracts: eras.maitred.yaml}}\n",
        encoding="utf-8",
    )
    return config


@pytest.fixture
def deployment(tmp_path: Path, pg_schema: tuple[str, str]) -> Iterator[Deployment]:
    url, schema = pg_schema
    log = f"{url}?schema={schema}"
    era = Process([sys.executable, str(ERA_SERVER)], child_env(), r"era server: (http://\S+)")
    config = _config(tmp_path, log, era.match.group(1))
    args = [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)]
    started: list[Process] = []
    try:
        for _ in range(2):
            started.append(Process(args, child_env(), r"serving (http://\S+)"))
        urls = [p.match.group(1) for p in started]
        ports = [int(u.rsplit(":", 1)[1].split("/", 1)[0]) for u in urls]
        forwarder = Forwarder([("127.0.0.1", port) for port in ports])
        yield Deployment("", urls, forwarder, tmp_path / "calls.jsonl", log)
    finally:
        for process in started:
            process.stop()
        era.stop()


async def _call(
    url: str,
    name: str,
    arguments: dict[str, Any],
    responses: Any = None,
    state: str | None = None,
    token: str = TOKEN,
) -> Any:
    """One round, over a connection of its own (so the forwarder picks the next replica), by
    a client that declares elicitation (it can ask its user; the rounds are driven here)."""
    transport = StreamableHttpTransport(url, headers={"Authorization": f"Bearer {token}"})
    async with Client(transport, elicitation_handler=_unused) as client:
        return await client.session.call_tool(
            name,
            arguments,
            input_responses=responses,
            request_state=state,
            allow_input_required=True,
        )


async def _unused(*_: Any) -> Any:
    raise AssertionError("the rounds are answered by hand")


def _code(result: Any) -> str:
    assert isinstance(result, mt.CallToolResult), result
    if not result.is_error:
        return "OK"
    return str(json.loads(result.content[0].text)["code"])  # type: ignore[union-attr]


def _served_by(forwarder: Forwarder, before: dict[int, int]) -> list[int]:
    """The replicas that took a connection since ``before``."""
    return sorted(i for i, n in forwarder.served.items() if n > before.get(i, 0))


def test_an_approval_asked_on_one_replica_is_answered_on_the_other_once(
    deployment: Deployment,
) -> None:
    forwarder = deployment.forwarder

    async def main() -> dict[str, Any]:
        await forwarder.start()
        url = f"http://127.0.0.1:{forwarder.port}/mcp"
        out: dict[str, Any] = {}
        try:
            before = dict(forwarder.served)
            asked = await _call(url, "upgrade", UPGRADE)
            out["asked_on"] = _served_by(forwarder, before)
            assert isinstance(asked, mt.InputRequiredResult), asked
            assert asked.input_requests is not None and ASK_KEY in asked.input_requests
            assert asked.request_state
            before = dict(forwarder.served)
            answered = await _call(url, "upgrade", UPGRADE, YES, asked.request_state)
            out["answered_on"] = _served_by(forwarder, before)
            out["answered"] = _code(answered)
            out["calls_after_yes"] = deployment.upstream_calls()
            out["replays"] = [  # the same yes again: through the forwarder, then each replica
                _code(await _call(u, "upgrade", UPGRADE, YES, asked.request_state))
                for u in [url, *deployment.replicas]
            ]
            out["narrow"] = _code(  # another grant of scopes of the same account
                await _call(url, "upgrade", UPGRADE, YES, asked.request_state, NARROW)
            )
        finally:
            await forwarder.close()
        return out

    out = anyio.run(main)
    assert len(out["asked_on"]) == 1 and len(out["answered_on"]) == 1
    assert out["asked_on"] != out["answered_on"]  # asked on one replica, answered on the other
    assert out["answered"] == "OK"
    assert out["calls_after_yes"] == ["upgrade"]
    assert out["replays"] == ["REQUEST_STATE_REPLAYED"] * 3
    assert out["narrow"] == "REQUEST_STATE_NOT_YOURS"
    assert deployment.upstream_calls() == ["upgrade"]  # ran once
    assert deployment.codes() == [
        "APPROVAL_REQUIRED",
        "OK",
        *["REQUEST_STATE_REPLAYED"] * 3,
        "REQUEST_STATE_NOT_YOURS",
    ]


def test_a_replayed_round_of_a_mutating_call_is_refused_on_every_replica(
    deployment: Deployment,
) -> None:
    forwarder = deployment.forwarder

    async def main() -> dict[str, Any]:
        await forwarder.start()
        url = f"http://127.0.0.1:{forwarder.port}/mcp"
        out: dict[str, Any] = {}
        try:
            before = dict(forwarder.served)
            asked = await _call(url, "asks_name", {})
            out["asked_on"] = _served_by(forwarder, before)
            assert isinstance(asked, mt.InputRequiredResult) and asked.request_state, asked
            before = dict(forwarder.served)
            done = await _call(url, "asks_name", {}, NAME, asked.request_state)
            out["done_on"] = _served_by(forwarder, before)
            assert isinstance(done, mt.CallToolResult) and not done.is_error, done
            out["greeting"] = done.content[0].text  # type: ignore[union-attr]
            out["replays"] = [
                _code(await _call(u, "asks_name", {}, NAME, asked.request_state))
                for u in [url, *deployment.replicas]
            ]
        finally:
            await forwarder.close()
        return out

    out = anyio.run(main)
    assert out["asked_on"] != out["done_on"]
    assert out["greeting"] == "Hello, Ada (asked-once)"
    assert out["replays"] == ["REQUEST_STATE_REPLAYED"] * 3
    assert deployment.codes() == ["OK", "OK", *["REQUEST_STATE_REPLAYED"] * 3]
