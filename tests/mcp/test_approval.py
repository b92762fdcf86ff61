"""Approval by a person through the gateway: a real ``fastmcp.Client`` whose elicitation handler
plays the user, the gateway in memory, the recording upstream as a real stdio process.

A call to ``upgrade`` onto a plan other than pro needs a person's yes (``approve:`` in the
sidecar); the gateway asks through MCP elicitation, logs the answer as a second decision naming
the first, and runs the call only on an explicit yes.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
import pytest
from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult
from mcp.shared.exceptions import MCPError
from tests.mcp.conftest import SIDECAR, Process, Site, child_env, http_client, sha256

from maitred.gateway import load_config
from maitred.gateway.approval import ASK_KEY
from maitred.gateway.build import gate_of, open_gateway
from maitred.gateway.channels import sealing
from maitred.gateway.http_config import HttpServer
from maitred.gateway.surfaces import DECISION_ID_META
from maitred.log.base import open_log
from maitred.log.verify import verify

ERA_SERVER = Path(__file__).with_name("era_server.py")
APPROVAL = """\
      - name: enterprise_needs_a_yes
        approve: args.plan != "pro"
        reads: [args.plan]
        message: The plans above pro are billed yearly.
"""

UPGRADE = {"account": "acc-1", "plan": "enterprise"}

Handler = Callable[..., Awaitable[Any]]


def _with_approval(site: Site) -> None:
    (site.root / "shop.maitred.yaml").write_text(SIDECAR + APPROVAL, encoding="utf-8")


def _call(
    site: Site, arguments: dict[str, Any], handler: Handler | None, mode: str = "legacy"
) -> tuple[Any, list[str], dict[str, int]]:
    """Call ``upgrade`` through the gateway; the result, the questions the user was asked,
    and the gateway's call counts by code."""
    asked: list[str] = []

    async def answer(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.append(message)
        assert handler is not None
        return await handler(message, response_type, params, context)

    async def main() -> tuple[Any, dict[str, int]]:
        server, engines = await open_gateway(load_config(site.config))
        try:
            client = Client(
                server,
                elicitation_handler=answer if handler is not None else None,
                mode=mode,  # type: ignore[arg-type]
            )
            async with client:
                result = await client.call_tool("upgrade", arguments, raise_on_error=False)
            counts = gate_of(server).metrics.render().decode("utf-8")
        finally:
            engines.close()
        return result, _counts(counts)

    result, counts = anyio.run(main)
    return result, asked, counts


def _counts(metrics: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in metrics.splitlines():
        if line.startswith("maitred_gateway_calls_total{"):
            code = line.split('code="', 1)[1].split('"', 1)[0]
            out[code] = int(float(line.rsplit(" ", 1)[1]))
    return out


def _decisions(site: Site) -> list[dict[str, Any]]:
    with open_log(str(site.log), read_only=True) as log:
        rows = sorted(log.iter_action_decisions(), key=lambda r: r["logged_at"])
        assert verify(log).ok
    return [json.loads(r["decision_json"]) for r in rows]


def _payload(result: Any) -> dict[str, Any]:
    assert result.is_error
    found: dict[str, Any] = json.loads(result.content[0].text)
    return found


async def _yes(*_: Any) -> Any:
    return ElicitResult(action="accept", content={"value": True})


#: a handshake-era connection (the gateway sends ``elicitation/create``) and a 2026-07-28 one
#: (the question goes back as an ``InputRequiredResult``; the client asks and calls again)
MODES = ["legacy", "auto"]


@pytest.mark.parametrize("mode", MODES)
def test_a_yes_runs_the_call_and_the_log_holds_the_question_and_the_answer(
    site: Site, mode: str
) -> None:
    _with_approval(site)
    result, asked, counts = _call(site, UPGRADE, _yes, mode)
    assert not result.is_error
    assert site.upstream_calls() == ["upgrade"]
    [question] = asked
    assert "upgrade" in question and '"plan": "enterprise"' in question
    assert "The plans above pro are billed yearly." in question
    first, second = _decisions(site)
    assert (first["code"], first["verdict"]) == ("APPROVAL_REQUIRED", "reject")
    assert first["approval_message"] == "The plans above pro are billed yearly."
    assert (second["code"], second["verdict"]) == ("OK", "allow")
    assert second["approval"] == {
        "of": first["decision_id"],
        "answer": "approve",
        "via": "mcp-elicitation",
    }
    assert second["call"] == first["call"]
    # the result names the decision that let the call run: the answered one
    assert result.meta[DECISION_ID_META] == second["decision_id"]
    assert counts.get("OK") == 1
    # 2026-07-28: the first round answered with the question, the second ran the call
    assert counts.get("APPROVAL_ASKED", 0) == (1 if mode == "auto" else 0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        (ElicitResult(action="decline"), "decline"),
        (ElicitResult(action="cancel"), "cancel"),
        (ElicitResult(action="accept", content={"value": False}), "decline"),
    ],
)
def test_anything_but_a_yes_is_declined_and_never_reaches_the_upstream(
    site: Site, reply: Any, answer: str, mode: str
) -> None:
    _with_approval(site)

    async def no(*_: Any) -> Any:
        return reply

    result, asked, counts = _call(site, UPGRADE, no, mode)
    payload = _payload(result)
    assert payload["code"] == "APPROVAL_DECLINED" and payload["executed"] is False
    assert len(asked) == 1 and site.upstream_calls() == []
    first, second = _decisions(site)
    assert first["code"] == "APPROVAL_REQUIRED"
    assert second["code"] == "APPROVAL_DECLINED"
    assert second["approval"]["of"] == first["decision_id"]
    assert second["approval"]["answer"] == answer
    assert payload["decision_id"] == second["decision_id"] == result.meta[DECISION_ID_META]
    assert counts.get("APPROVAL_DECLINED") == 1


@pytest.mark.parametrize("mode", MODES)
def test_a_client_that_cannot_ask_its_user_gets_approval_required(site: Site, mode: str) -> None:
    _with_approval(site)
    result, asked, counts = _call(site, UPGRADE, None, mode)
    payload = _payload(result)
    assert payload["code"] == "APPROVAL_REQUIRED" and payload["executed"] is False
    assert "cannot ask the user" in payload["hint"]
    assert asked == [] and site.upstream_calls() == []
    [only] = _decisions(site)  # nobody answered: no second decision
    assert only["code"] == "APPROVAL_REQUIRED" and "approval" not in only
    assert payload["decision_id"] == only["decision_id"]
    assert counts.get("APPROVAL_REQUIRED") == 1


def test_a_call_whose_condition_does_not_hold_runs_without_asking(site: Site) -> None:
    _with_approval(site)
    result, asked, _ = _call(site, {"account": "acc-1", "plan": "pro"}, _yes)
    assert not result.is_error and asked == []
    assert site.upstream_calls() == ["upgrade"]
    [only] = _decisions(site)
    assert only["code"] == "OK" and "approval" not in only
    assert result.meta[DECISION_ID_META] == only["decision_id"]


def test_a_call_another_rule_refuses_is_refused_without_asking(site: Site) -> None:
    _with_approval(site)
    result, asked, _ = _call(site, {"account": "acc-2", "plan": "enterprise"}, _yes)
    assert _payload(result)["code"] == "SHOP_OTHER_ACCOUNT"
    assert asked == [] and site.upstream_calls() == []


def test_the_session_is_not_locked_while_the_person_thinks(site: Site) -> None:
    """While the question is open, the same session lists its tools (which takes its lock)."""
    _with_approval(site)
    listed: list[list[str]] = []

    async def main() -> None:
        server, engines = await open_gateway(load_config(site.config))
        try:
            holder: dict[str, Client[Any]] = {}

            async def slow_yes(*_: Any) -> Any:
                held = [k.lock.locked() for k in gate_of(server).keepers.values()]
                assert held == [False]  # the question is open, the session's lock is free
                tools = await holder["client"].list_tools()  # the same session, mid-question
                listed.append([t.name for t in tools])
                return ElicitResult(action="accept", content={"value": True})

            client = Client(server, elicitation_handler=slow_yes, mode="legacy")
            holder["client"] = client
            async with client:
                result = await client.call_tool("upgrade", UPGRADE)
            assert not result.is_error
        finally:
            engines.close()

    anyio.run(main)
    assert listed == [["get_plan", "upgrade", "crash"]]
    assert site.upstream_calls() == ["upgrade"]


def test_a_2026_answer_counts_once_and_only_with_the_question_it_answers(site: Site) -> None:
    """The multi-round-trip wire by hand: a yes sent without the question's sealed state runs
    nothing (asked); the state is bound to its call; the question sent back unanswered is
    asked again; the yes with its state runs the call once, and the same yes again is refused
    ``REQUEST_STATE_REPLAYED`` (a logged decision), the upstream not called twice."""
    _with_approval(site)
    yes = {ASK_KEY: mt.ElicitResult(action="accept", content={"value": True})}

    async def main() -> None:
        server, engines = await open_gateway(load_config(site.config))
        try:
            async with Client(server, elicitation_handler=_yes, mode="auto") as client:
                session = client.session

                async def call(
                    responses: Any, state: str | None = None, args: dict[str, Any] = UPGRADE
                ) -> Any:
                    return await session.call_tool(
                        "upgrade",
                        args,
                        input_responses=responses,
                        request_state=state,
                        allow_input_required=True,
                    )

                forged = await call(yes)  # no question carried: asked, not run
                assert isinstance(forged, mt.InputRequiredResult)
                assert forged.input_requests is not None and ASK_KEY in forged.input_requests
                state = forged.request_state
                assert state and "maitred" not in state  # sealed: the round is not readable
                assert site.upstream_calls() == []
                with pytest.raises(MCPError) as other:  # the answer is for this call only
                    await call(yes, state, {**UPGRADE, "plan": "enterprise-plus"})
                assert other.value.error.code == mt.INVALID_PARAMS
                unanswered = await call(None, state)  # no answer in it: asked again
                assert isinstance(unanswered, mt.InputRequiredResult)
                ran = await call(yes, state)  # the answer with its question: runs
                assert isinstance(ran, mt.CallToolResult) and not ran.is_error
                assert site.upstream_calls() == ["upgrade"]
                again = await call(yes, state)  # the same yes again: refused, not run twice
                assert isinstance(again, mt.CallToolResult) and again.is_error
                assert _payload(again)["code"] == "REQUEST_STATE_REPLAYED"
                assert site.upstream_calls() == ["upgrade"]
        finally:
            engines.close()

    anyio.run(main)
    decisions = _decisions(site)
    codes = [d["code"] for d in decisions]
    assert codes == ["APPROVAL_REQUIRED", "APPROVAL_REQUIRED", "OK", "REQUEST_STATE_REPLAYED"]
    assert decisions[2]["approval"]["of"] == decisions[0]["decision_id"]  # its own question


@pytest.mark.slow
def test_over_http_the_official_mcp_sdk_client_answers_the_question(site: Site) -> None:
    """``maitred mcp`` over streamable HTTP in a subprocess, the ``mcp`` SDK's ClientSession
    (a handshake-era session) with an ``elicitation_callback`` playing the user."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    _with_approval(site)
    token = "tok-approval-3b9e"
    with site.config.open("a", encoding="utf-8") as config:
        config.write(
            "server: {host: 127.0.0.1, port: 0}\n"
            f"tokens:\n  - {{token_sha256: {sha256(token)}, tenant: acme, account: acc-1}}\n"
        )
    gateway = Process(
        [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(site.config)],
        child_env(),
        r"serving (http://\S+)",
    )
    asked: list[str] = []

    async def user(context: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        asked.append(params.message)
        return mt.ElicitResult(action="accept", content={"value": len(asked) == 1})

    async def main() -> tuple[Any, Any]:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            http_client(headers=headers) as http,
            streamable_http_client(gateway.match.group(1), http_client=http) as streams,
            ClientSession(streams[0], streams[1], elicitation_callback=user) as session,
        ):
            await session.initialize()
            first = await session.call_tool("upgrade", UPGRADE)  # yes
            second = await session.call_tool("upgrade", {**UPGRADE, "plan": "free"})  # no
            return first, second

    try:
        first, second = anyio.run(main)
    finally:
        gateway.stop()
    assert not first.is_error and first.meta[DECISION_ID_META]
    assert _payload(second)["code"] == "APPROVAL_DECLINED"
    assert len(asked) == 2 and site.upstream_calls() == ["upgrade"]
    codes = [(d["code"], d.get("approval", {}).get("answer")) for d in _decisions(site)]
    assert codes == [
        ("APPROVAL_REQUIRED", None),
        ("OK", "approve"),
        ("APPROVAL_REQUIRED", None),
        ("APPROVAL_DECLINED", "decline"),
    ]
    assert first.meta[DECISION_ID_META] == _decisions(site)[1]["decision_id"]


@pytest.mark.slow
def test_a_standing_yes_lasts_as_long_as_a_sealed_state(tmp_path: Path) -> None:
    """A 2026-07-28 call a person approved whose upstream then asks too (the era server's
    ``asks_name``): its next round carries the yes, so it is not asked again -- for
    ``server.request_state_ttl_s`` after the yes (30 s here), then the person is asked anew.
    The gateway's clock is moved on, not waited for."""
    era = Process([sys.executable, str(ERA_SERVER)], child_env(), r"era server: (http://\S+)")
    (tmp_path / "accounts.json").write_text('{"acc-1": {"account": {}}}', encoding="utf-8")
    (tmp_path / "eras.maitred.yaml").write_text(
        "tools:\n  asks_name:\n    policies:\n      - name: ask\n        approve: true\n",
        encoding="utf-8",
    )
    config = tmp_path / "gateway.yaml"
    config.write_text(
        "account: acc-1\nstate: accounts.json\nlog: gateway.sqlite\n"
        "server: {request_state_ttl_s: 30}\n"
        f"upstreams: [{{name: eras, url: {json.dumps(era.match.group(1))}, "
        "contracts: eras.maitred.yaml}]\n",
        encoding="utf-8",
    )
    yes = {ASK_KEY: mt.ElicitResult(action="accept", content={"value": True})}
    name = {"who": mt.ElicitResult(action="accept", content={"name": "Ada"})}
    later = [0.0]

    async def main() -> list[str]:
        server, engines = await open_gateway(load_config(config))
        approvals = gate_of(server).approvals
        assert approvals.ttl_s == 30.0
        approvals.clock = lambda: time.time() + later[0]
        seen: list[str] = []
        try:
            async with Client(server, elicitation_handler=_yes, mode="auto") as client:

                async def call(responses: Any = None, state: str | None = None) -> Any:
                    return await client.session.call_tool(
                        "asks_name",
                        {},
                        input_responses=responses,
                        request_state=state,
                        allow_input_required=True,
                    )

                for shift in (0.0, 31.0):
                    later[0] = 0.0
                    asked = await call()
                    assert isinstance(asked, mt.InputRequiredResult)
                    upstream_asks = await call(yes, asked.request_state)  # the yes: forwarded
                    assert isinstance(upstream_asks, mt.InputRequiredResult)
                    assert set(upstream_asks.input_requests or {}) == {"who"}
                    later[0] = shift
                    last = await call(name, upstream_asks.request_state)
                    if isinstance(last, mt.InputRequiredResult):
                        seen.append("asked again: " + ",".join(last.input_requests or {}))
                    else:
                        seen.append(str(last.content[0].text))
        finally:
            engines.close()
        return seen

    try:
        seen = anyio.run(main)
    finally:
        era.stop()
    assert seen == ["Hello, Ada (asked-once)", f"asked again: {ASK_KEY}"]


def test_the_sealing_policy_follows_the_config() -> None:
    """``server.request_state_ttl_s`` bounds the sealed state with or without a keys file."""
    assert sealing(HttpServer(request_state_ttl_s=42.0), "gateway.yaml").ttl == 42.0
    assert sealing(HttpServer(), "gateway.yaml").ttl == 600.0
