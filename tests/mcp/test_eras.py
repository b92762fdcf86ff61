"""Both protocol eras on both sides: an upstream that lists a tool to one era only, reached
through ``maitred mcp`` by real clients of each era.

The upstream (``era_server.py``, FastMCP over streamable HTTP) lists ``new_era_only`` to
2026-07-28 clients and ``handshake_only`` to handshake-era ones. The gateway lists it in
every era it speaks at start and gates the union; each client is shown, and may call, what
that upstream lists to the client's own era -- the same as a direct connection gives it --
and a call by name to the other era's tool is refused ``TOOL_UNKNOWN`` and logged, never
forwarded. Clients: FastMCP's ``Client`` (2026-07-28 by default; ``mode="legacy"`` for the
handshake era).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp.shared.exceptions import MCPError
from tests.mcp.conftest import Process, child_env, sha256

from maitred.log.base import open_log

pytestmark = pytest.mark.slow  # an upstream and the gateway run as subprocesses

TOKEN = "tok-eras-51c0"
OTHER = "tok-eras-other-77d2"  # another principal: another account
ERA_SERVER = Path(__file__).with_name("era_server.py")
EVERY = {"either_era", "new_era_only", "handshake_only"}
NAME = {"who": mt.ElicitResult(action="accept", content={"name": "Ada"})}


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    server = Process([sys.executable, str(ERA_SERVER)], child_env(), r"era server: (http://\S+)")
    try:
        yield server.match.group(1)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def gateway(upstream: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("eras")
    (root / "accounts.json").write_text(
        '{"acc-1": {"account": {}}, "acc-2": {"account": {}}}', encoding="utf-8"
    )
    config = root / "gateway.yaml"
    config.write_text(
        "state: accounts.json\n"
        "log: gateway.sqlite\n"
        "server: {host: 127.0.0.1, port: 0}\n"
        f"tokens: [{{token_sha256: {sha256(TOKEN)}, tenant: t, account: acc-1}},\n"
        f"         {{token_sha256: {sha256(OTHER)}, tenant: t, account: acc-2}}]\n"
        f"upstreams: [{{name: eras, url: {json.dumps(upstream)}}}]\n",
        encoding="utf-8",
    )
    args = [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)]
    served = Process(args, child_env(), r"serving (http://\S+)")
    try:
        (root / "url").write_text(served.match.group(1), encoding="utf-8")
        yield root
    finally:
        served.stop()


@asynccontextmanager
async def connect(url: str, mode: str, token: str | None = None) -> AsyncIterator[Client[Any]]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with Client(StreamableHttpTransport(url, headers=headers), mode=mode) as client:
        yield client


async def seen(url: str, mode: str, token: str | None = None) -> dict[str, str]:
    """What a client of ``mode`` is shown, and what each tool answers it (its text)."""
    answers: dict[str, str] = {}
    async with connect(url, mode, token) as client:
        shown = {t.name for t in await client.list_tools()}
        for name in sorted(EVERY):
            result = await client.call_tool_mcp(name, {})
            text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
            answers[name] = ("listed " if name in shown else "unlisted ") + text
    return answers


@pytest.mark.parametrize(
    ("mode", "era", "mine", "other"),
    [
        ("auto", "2026-07-28", "new_era_only", "handshake_only"),
        ("legacy", "2025-11-25", "handshake_only", "new_era_only"),
    ],
)
def test_each_era_sees_and_calls_what_the_upstream_lists_to_it(
    upstream: str, gateway: Path, mode: str, era: str, mine: str, other: str
) -> None:
    url = (gateway / "url").read_text(encoding="utf-8")
    direct = anyio.run(seen, upstream, mode)
    through = anyio.run(seen, url, mode, TOKEN)
    # directly: the upstream lists and runs `mine` for this era, and not `other`
    assert direct[mine] == f"listed ran in {era}"
    assert direct["either_era"] == f"listed ran in {era}"
    assert direct[other].startswith("unlisted ") and "Unknown tool" in direct[other]
    # through the gateway: the same tools shown, and run in the client's own era
    assert through[mine] == direct[mine]
    assert through["either_era"] == direct["either_era"]
    refusal = json.loads(through[other].removeprefix("unlisted "))
    assert refusal["code"] == "TOOL_UNKNOWN"
    assert other not in refusal["message"]  # what the client was not shown stays unseen
    with open_log(str(gateway / "gateway.sqlite")) as log:
        decided = {r["decision_id"]: r for r in log.iter_action_decisions()}
    row = decided[refusal["decision_id"]]
    assert (row["tool"], row["code"]) == (other, "TOOL_UNKNOWN")


def test_an_upstream_question_round_trips_and_a_tampered_request_state_is_refused(
    gateway: Path,
) -> None:
    """A 2026-07-28 upstream's ``InputRequiredResult`` reaches the client; the client's retry
    with the answer and the ``requestState`` reaches the upstream with the upstream's own
    state; a ``requestState`` altered on the way back is refused (``-32602``) and runs
    nothing, and so is the intact state presented with another account's token. The gateway
    seals every ``requestState`` it hands out (FastMCP's request-state boundary: AES-GCM,
    bound to the caller's tenant and account, the request and an expiry)."""
    url = (gateway / "url").read_text(encoding="utf-8")

    async def main() -> None:
        async with connect(url, "auto", TOKEN) as client:
            session = client.session

            async def call(responses: Any = None, state: str | None = None) -> Any:
                return await session.call_tool(
                    "asks_name",
                    {},
                    input_responses=responses,
                    request_state=state,
                    allow_input_required=True,
                )

            asked = await call()
            assert isinstance(asked, mt.InputRequiredResult)
            assert asked.input_requests is not None and set(asked.input_requests) == {"who"}
            state = asked.request_state
            assert state and state != "asked-once"  # sealed: the upstream's own never shown
            flipped = "A" if state[-2] != "A" else "B"
            with pytest.raises(MCPError) as refused:
                await call(NAME, state[:-2] + flipped + state[-1])
            assert refused.value.error.code == mt.INVALID_PARAMS
            async with connect(url, "auto", OTHER) as other:
                with pytest.raises(MCPError) as replayed:
                    await other.session.call_tool(
                        "asks_name",
                        {},
                        input_responses=NAME,
                        request_state=state,
                        allow_input_required=True,
                    )
            assert replayed.value.error.code == mt.INVALID_PARAMS
            done = await call(NAME, state)
            assert isinstance(done, mt.CallToolResult) and not done.is_error
            assert done.content[0].text == "Hello, Ada (asked-once)"  # type: ignore[union-attr]

    anyio.run(main)


def test_an_approved_call_whose_upstream_asks_too_runs_once_with_one_yes(
    upstream: str, tmp_path: Path
) -> None:
    """A 2026-07-28 call that needs a person's yes (an approval rule) to a tool whose upstream
    then asks a question of its own: the client answers the person's question, then the
    upstream's, and the call completes -- the upstream's round, which comes back without the
    person's answer, is not asked about again."""
    accounts = '{"acc-1": {"account": {"plan": "pro"}}}'
    (tmp_path / "accounts.json").write_text(accounts, encoding="utf-8")
    (tmp_path / "eras.maitred.yaml").write_text(
        "tools:\n"
        "  asks_name:\n"
        "    policies:\n"
        "      - name: a_person_approves\n"
        "        approve: state.account.plan == 'pro'\n"
        "        reads: [state.account.plan]\n"
        "        message: Every greeting is approved by a person.\n",
        encoding="utf-8",
    )
    config = tmp_path / "gateway.yaml"
    config.write_text(
        "state: accounts.json\n"
        "log: gateway.sqlite\n"
        "server: {host: 127.0.0.1, port: 0}\n"
        f"tokens: [{{token_sha256: {sha256(TOKEN)}, tenant: t, account: acc-1}}]\n"
        f"upstreams: [{{name: eras, url: {json.dumps(upstream)}, contracts: eras.maitred.yaml}}]\n",
        encoding="utf-8",
    )
    args = [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)]
    served = Process(args, child_env(), r"serving (http://\S+)")
    asked: list[str] = []

    async def answer(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.append(message.splitlines()[-1])
        said = {"value": True} if "Approve" in message else {"name": "Ada"}
        return mt.ElicitResult(action="accept", content=said)

    async def main() -> str:
        transport = StreamableHttpTransport(
            served.match.group(1), headers={"Authorization": f"Bearer {TOKEN}"}
        )
        async with Client(transport, elicitation_handler=answer) as client:
            result = await client.call_tool("asks_name", {})
        return str(result.content[0].text)  # type: ignore[union-attr]

    try:
        said = anyio.run(main)
    finally:
        served.stop()
    assert said == "Hello, Ada (asked-once)"
    assert asked == ["Approve this call? It runs only if you say yes.", "Who?"]
    with open_log(str(tmp_path / "gateway.sqlite")) as log:
        codes = [r["code"] for r in sorted(log.iter_action_decisions(), key=_logged)]
    # asked, yes; the upstream's round: decided afresh, the standing yes satisfies it
    assert codes == ["APPROVAL_REQUIRED", "OK", "APPROVAL_REQUIRED", "OK"]


KEY_OLD = "replicas-old-" + "0" * 40
KEY_NEW = "replicas-new-" + "1" * 40


def _replica(root: Path, upstream: str, keys: Path) -> Process:
    """A gateway process of its own (its own log) whose ``server`` names ``keys``."""
    root.mkdir(exist_ok=True)
    (root / "accounts.json").write_text('{"acc-1": {"account": {}}}', encoding="utf-8")
    config = root / "gateway.yaml"
    config.write_text(
        "state: accounts.json\n"
        "log: gateway.sqlite\n"
        f"server: {{host: 127.0.0.1, port: 0, request_state_keys_file: {json.dumps(str(keys))}}}\n"
        f"tokens: [{{token_sha256: {sha256(TOKEN)}, tenant: t, account: acc-1}}]\n"
        f"upstreams: [{{name: eras, url: {json.dumps(upstream)}}}]\n",
        encoding="utf-8",
    )
    args = [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)]
    return Process(args, child_env(), r"serving (http://\S+)")


async def _ask(url: str) -> str:
    """Round one of ``asks_name`` on a connection of its own: the sealed state handed out."""
    async with connect(url, "auto", TOKEN) as client:
        asked = await client.session.call_tool("asks_name", {}, allow_input_required=True)
    assert isinstance(asked, mt.InputRequiredResult) and asked.request_state
    return asked.request_state


async def _finish(url: str, state: str) -> str:
    """Round two, with the answer and ``state``, on a connection of its own: the greeting."""
    async with connect(url, "auto", TOKEN) as client:
        done = await client.session.call_tool(
            "asks_name", {}, input_responses=NAME, request_state=state, allow_input_required=True
        )
    assert isinstance(done, mt.CallToolResult) and not done.is_error, done
    return str(done.content[0].text)  # type: ignore[union-attr]


async def _refused(url: str, state: str) -> int:
    with pytest.raises(MCPError) as refused:
        await _finish(url, state)
    return refused.value.error.code


@pytest.mark.slow
def test_a_round_started_on_one_replica_is_finished_on_another_sharing_the_keys_file(
    upstream: str, gateway: Path, tmp_path: Path
) -> None:
    """Two gateway processes naming one ``server.request_state_keys_file``: a 2026-07-28
    upstream's question asked through one is answered through the other (what a round-robin
    load balancer does). The module's gateway, which names no keys file (a key of its own
    process), refuses a state the others sealed, and they refuse its, ``-32602``. Then the
    file is rotated to ``[new, old]`` and one replica restarted on it: a state sealed under
    the old key before the rotation is still finished there, and what it seals now (under
    the new key) a replica still on ``[old]`` cannot open."""
    keys = tmp_path / "request-state.keys"
    keys.write_text(f"# shared by every replica\n{KEY_OLD}\n", encoding="utf-8")
    alone = (gateway / "url").read_text(encoding="utf-8")
    a = _replica(tmp_path / "a", upstream, keys)
    b = _replica(tmp_path / "b", upstream, keys)
    try:
        url_a, url_b = a.match.group(1), b.match.group(1)
        assert not any("request_state_security" in line for line in a.output)  # no warning

        async def shared() -> str:
            assert await _finish(url_b, await _ask(url_a)) == "Hello, Ada (asked-once)"
            assert await _finish(url_a, await _ask(url_b)) == "Hello, Ada (asked-once)"
            assert await _refused(alone, await _ask(url_a)) == mt.INVALID_PARAMS
            assert await _refused(url_b, await _ask(alone)) == mt.INVALID_PARAMS
            return await _ask(url_a)  # sealed under the old key, answered after the rotation

        pending = anyio.run(shared)
        keys.write_text(f"{KEY_NEW}\n{KEY_OLD}\n", encoding="utf-8")  # the new key seals
        b.stop()
        b = _replica(tmp_path / "b", upstream, keys)
        url_b = b.match.group(1)

        async def rotated() -> None:
            assert await _finish(url_b, pending) == "Hello, Ada (asked-once)"
            assert await _finish(url_b, await _ask(url_b)) == "Hello, Ada (asked-once)"
            # a replica not rotated yet knows only the old key: roll [old, new] out first
            assert await _refused(url_a, await _ask(url_b)) == mt.INVALID_PARAMS

        anyio.run(rotated)
    finally:
        a.stop()
        b.stop()


def _logged(row: dict[str, Any]) -> str:
    return str(row["logged_at"])
