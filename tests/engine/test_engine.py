"""The entry object: a tools file from an MCP ``tools/list`` with a contract sidecar, routed,
gated before exposure, checked at call time, and linked in the decision log."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from maitred import Maitred, PipelineOptions, ToolCall
from maitred.errors import ConfigError, LogError
from maitred.log import open_log

TOOLS_LIST = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {
        "tools": [
            {
                "name": "connect_custom_domain",
                "description": "Connect a custom domain name to the website.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"domain": {"type": "string"}},
                    "required": ["domain"],
                },
            },
            {
                "name": "list_domains",
                "description": "List the domain names connected to the website.",
                "inputSchema": {"type": "object", "properties": {}},
            },
        ]
    },
}
SIDECAR = """
tools:
  connect_custom_domain:
    mutates: true
    exit_predicates:
      - name: on_free_plan
        expr: account.plan == "free"
        reads: [account.plan]
        message: Custom domains need a paid plan.
    policies:
      - name: domain_too_long
        expr: size(args.domain) > 63
        code: DOMAIN_TOO_LONG
        reads: [args.domain]
        fields: [domain]
        message: A domain label has at most 63 characters.
  list_domains: {}
"""


def _accounts(path: Path, plan: str) -> None:
    path.write_text(json.dumps({"acc-1": {"account": {"plan": plan}}}), encoding="utf-8")
    stamp = path.stat().st_mtime_ns + 1_000_000_000  # a reload notices the change
    os.utime(path, ns=(stamp, stamp))


@pytest.fixture
def shop(tmp_path: Path) -> dict[str, Path]:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS_LIST), encoding="utf-8")
    (tmp_path / "tools.maitred.yaml").write_text(SIDECAR, encoding="utf-8")
    accounts = tmp_path / "accounts.json"
    _accounts(accounts, "free")
    return {"tools": tools, "accounts": accounts, "log": tmp_path / "log.sqlite"}


def _engine(shop: dict[str, Path]) -> Maitred:
    options = PipelineOptions(method="bm25", top_k=5)
    return Maitred.open([shop["tools"]], str(shop["accounts"]), options, log=str(shop["log"]))


def test_paths_open_the_log_and_the_state_and_the_engine_closes_the_log_it_opened(
    shop: dict[str, Path],
) -> None:
    """``Path`` objects are taken where strings are (was an AttributeError on ``log=``)."""
    options = PipelineOptions(method="bm25", top_k=5)
    engine = Maitred.open([shop["tools"]], shop["accounts"], options, log=shop["log"])
    with engine:
        turn = engine.turn("connect my custom domain name", session=engine.session("acc-1"))
    assert engine.log is not None
    with pytest.raises(LogError, match="closed"):  # opened by the engine, closed by it
        engine.log.committed_turn("", "any")
    with open_log(str(shop["log"]), read_only=True) as log:
        assert [t["turn_id"] for t in log.iter_turns()] == [turn.turn_id]


def test_a_tenants_session_is_logged_with_its_tenant_and_its_offer_is_found_again(
    shop: dict[str, Path],
) -> None:
    """A session opened for a tenant: its turns are logged under a run of that tenant, so its
    checks find the turn that offered the tool (was TOOL_NOT_OFFERED: the turn went to the
    engine's own run, without the tenant the checks look under)."""
    with _engine(shop) as engine:
        session = engine.session("acc-1", tenant="acme")
        turn = engine.turn("connect my custom domain name", session=session)
        offered = turn.exposed[0]
        decision = engine.check(ToolCall(offered, {}), session=session)
        assert decision.code == "OK" and decision.tenant == "acme"
        again = engine.session("acc-1", id=session.id, tenant="acme")  # a restart, say
        assert engine.check(ToolCall(offered, {}), session=again).code == "OK"
        other = engine.session("acc-1", id=session.id, tenant="globex")  # another tenant's
        assert engine.check(ToolCall(offered, {}), session=other).code == "TOOL_NOT_OFFERED"
        assert engine.run_for("acme") == engine.run_for("acme") != engine.run_for("globex")
    with open_log(str(shop["log"]), read_only=True) as log:
        [row] = list(log.iter_turns())
    assert row["tenant"] == "acme" and row["run_id"] == engine.run_for("acme")


def test_hidden_tool_is_not_offered_and_its_call_is_rejected_and_linked(
    shop: dict[str, Path],
) -> None:
    with _engine(shop) as engine:
        session = engine.session("acc-1")
        turn = engine.turn("connect my custom domain name to my website", session=session)
        assert "connect_custom_domain" not in turn.exposed
        assert "connect_custom_domain" in [p.skill for p in turn.record.blocked]
        call = ToolCall("connect_custom_domain", {"domain": "example.com"})
        decision = engine.check(call, session=session)
        assert decision.reject and decision.code == "TOOL_NOT_OFFERED"
        assert decision.turn_id == turn.turn_id and decision.session_id == session.id
    with open_log(str(shop["log"]), read_only=True) as log:
        turns = {t["turn_id"] for t in log.iter_turns()}
        rows = list(log.iter_action_decisions())
    assert turn.turn_id in turns
    assert [(r["decision_id"], r["turn_id"], r["code"]) for r in rows] == [
        (decision.decision_id, turn.turn_id, "TOOL_NOT_OFFERED")
    ]


def test_offered_tool_is_re_checked_when_state_changes(shop: dict[str, Path]) -> None:
    _accounts(shop["accounts"], "pro")
    with _engine(shop) as engine:
        session = engine.session("acc-1")
        turn = engine.turn("connect my custom domain name to my website", session=session)
        assert "connect_custom_domain" in turn.exposed
        ok = engine.check(
            {"name": "connect_custom_domain", "arguments": {"domain": "example.com"}},
            session=session,
        )
        assert ok.allow and ok.turn_id == turn.turn_id
        engine.record(ok.call, {"ok": True}, session=session)
        assert session.writes == ["connect_custom_domain"]
        too_long = engine.check(
            ToolCall("connect_custom_domain", {"domain": "x" * 64}), session=session
        )
        assert (too_long.code, too_long.fields) == ("DOMAIN_TOO_LONG", ("domain",))
        bad_type = engine.check(ToolCall("connect_custom_domain", {"domain": 7}), session=session)
        assert (bad_type.code, bad_type.fields) == ("ARGS_INVALID", ("domain",))
        _accounts(shop["accounts"], "free")  # downgraded after the menu was shown
        late = engine.check(
            ToolCall("connect_custom_domain", {"domain": "example.com"}), session=session
        )
        assert late.code == "TOOL_NOT_EXECUTABLE" and late.fired[0].predicate == "on_free_plan"
        assert "Custom domains need a paid plan." in late.message_for_model


def test_a_call_before_any_turn_was_offered_nothing(shop: dict[str, Path]) -> None:
    with _engine(shop) as engine:
        d = engine.check(ToolCall("list_domains", {}), session=engine.session("acc-1"))
        assert d.code == "TOOL_NOT_OFFERED" and d.turn_id == ""
        assert engine.check(ToolCall("rm_rf", {}), session=engine.session("acc-1")).code == (
            "TOOL_UNKNOWN"
        )


class _Down:
    def fetch(self, account: str, keys: Any) -> Any:
        raise ConnectionError("state store at 127.0.0.1:1 refused the connection")


def test_state_store_down_fails_closed_with_its_own_code(shop: dict[str, Path]) -> None:
    _accounts(shop["accounts"], "pro")
    with _engine(shop) as engine:
        session = engine.session("acc-1")
        engine.turn("connect my custom domain name to my website", session=session)
        engine.pipeline.executability_gate.provider = _Down()
        d = engine.check(ToolCall("connect_custom_domain", {"domain": "a.com"}), session=session)
        assert d.code == "STATE_UNAVAILABLE" and "refused" in d.message


def test_turn_needs_an_account_and_the_turn_knows_its_json(shop: dict[str, Path]) -> None:
    with _engine(shop) as engine:
        with pytest.raises(ConfigError, match="needs an account"):
            engine.turn("hello")
        turn = engine.turn("list my domains", account="acc-1")
        data = json.loads(json.dumps(turn.to_json()))
        assert data["turn_id"] == turn.turn_id and data["exposed"] == list(turn.exposed)
        blocked = {b["skill"]: b for b in data["blocked"]}
        fired = blocked["connect_custom_domain"]["predicates"][0]
        assert fired["message"] == "Custom domains need a paid plan."


def test_an_engine_over_a_policy_pack_uses_its_clock_and_rules() -> None:
    from maitred.actions.packs import tau2_airline
    from maitred.actions.packs.tau2_airline._common import wall_seconds

    engine = Maitred.for_pack("tau2-airline")
    assert engine.rulebook.name == "tau2-airline"
    assert engine.action_gate.clock() == wall_seconds(tau2_airline.DEFAULT_NOW)
    session = engine.session("user")
    session.offer(engine.catalog.names)  # a front end that lists every tool says so
    call = ToolCall("cancel_reservation", {"reservation_id": "NOPE"})
    db: dict[str, Any] = {"reservations": {}, "flights": {}, "users": {}}
    d = engine.check(call, session=session, state=db)
    assert d.code == "AIRLINE_MUST_READ_RESERVATION"


def test_an_engine_says_whether_it_decides_without_a_network_round_trip(
    shop: dict[str, Path],
) -> None:
    """``in_process``: JSON or memory state and a SQLite log (or none) are this process's
    memory and files; a provider that does not say so (a callable, PostgreSQL) may wait on a
    network, and an adapter on an event loop then decides on a worker thread."""
    from maitred.state.callables import CallableStateProvider
    from maitred.state.memory import MemoryStateProvider
    from maitred.state.sql import SqlStateProvider

    options = PipelineOptions(method="bm25", top_k=5)
    with _engine(shop) as engine:  # a JSON state file and a SQLite log
        assert engine.in_process
    memory = MemoryStateProvider({"acc-1": {"account": {"plan": "free"}}})
    with Maitred.open([shop["tools"]], memory, options) as engine:  # no log at all
        assert engine.in_process
    fetched = CallableStateProvider({"account": lambda account: {"plan": "free"}})
    with Maitred.open([shop["tools"]], fetched, options, log=str(shop["log"])) as engine:
        assert not engine.in_process
    assert SqlStateProvider(f"sqlite:///{shop['log']}", {"account": "accounts"}).in_process
    pytest.importorskip(
        "psycopg", reason="needs the postgres extra: pip install 'maitred[postgres]'"
    )
    remote = SqlStateProvider("postgresql://127.0.0.1:5432/test", {"account": "accounts"})
    assert not remote.in_process


def test_the_needs_of_one_task_are_routed_together_each_a_logged_turn(
    shop: dict[str, Path],
) -> None:
    """``turn_steps``: a turn per need, in order, logged; with top_k 1 the second need, whose
    own best tool the first need already showed, brings the other tool instead."""
    _accounts(shop["accounts"], "pro")
    options = PipelineOptions(method="bm25", top_k=1)
    needs = ["list the domain names", "list the domain names again"]
    with Maitred.open([shop["tools"]], str(shop["accounts"]), options, log=str(shop["log"])) as e:
        alone = [e.turn(n, account="acc-1").exposed for n in needs]
        session = e.session("acc-1")
        turns = e.turn_steps(needs, session=session)
    assert alone == [("list_domains",), ("list_domains",)]  # apart: the same tool twice
    assert [t.exposed for t in turns] == [("list_domains",), ("connect_custom_domain",)]
    assert session.turn_id == turns[-1].turn_id
    with open_log(str(shop["log"]), read_only=True) as log:
        rows = [t for t in log.iter_turns() if t["conversation_id"] == session.id]
    assert [r["turn_id"] for r in rows] == [t.turn_id for t in turns]
    assert [r["message_text"] for r in rows] == needs
