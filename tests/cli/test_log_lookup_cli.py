"""`maitred log show ID` and `maitred log list`: a decision found from what an operator holds,
on a SQLite file and a PostgreSQL log written by a real engine, as text and as JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from maitred import CallContext, Maitred, MemoryStateProvider, PipelineOptions, ToolCall
from maitred.lab.domains import sitecare

from .conftest import CallMain, Invoke, ok

STATE = {
    "acc-1": {
        "account": {"plan": "free", "email_verified": True},
        "site": {"status": "published", "version_count": 4},
    }
}
#: the W3C trace id of the request the allowed call came in
TRACED = "4bf92f3577b34da6a3ce929d0e0e4736"


@dataclass(frozen=True)
class Logged:
    url: str
    turn_id: str
    refused_id: str
    allowed_id: str
    allowed_tool: str


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def logged(request: pytest.FixtureRequest, tmp_path: Path) -> Logged:
    """One turn of tenant acme's session conv-7 and two calls on its menu, logged."""
    if request.param == "sqlite":
        url = str(tmp_path / "log.sqlite")
    else:
        server, schema = request.getfixturevalue("pg_schema")
        url = f"{server}?schema={schema}"
    options = PipelineOptions(method="bm25", top_k=5, family=True)
    engine = Maitred.open([sitecare.skills_dir()], MemoryStateProvider(STATE), options, log=url)
    try:
        run = CallContext(run_id=engine.begin_run(tenant="acme"))  # the tenant's run, as served
        session = engine.session("acc-1", id="conv-7", tenant="acme")
        turn = engine.turn("how do I use my own domain name?", session=session, context=run)
        refused = engine.check(ToolCall("connect-domain", {"domain": "x.com"}), session=session)
        traced = CallContext(trace_id=TRACED)  # the request's W3C trace, as an edge read it
        allowed = engine.check(ToolCall(turn.exposed[0], {}), session=session, context=traced)
    finally:
        engine.close()
    assert (refused.code, allowed.code) == ("TOOL_NOT_OFFERED", "OK")
    return Logged(url, turn.turn_id, refused.decision_id, allowed.decision_id, turn.exposed[0])


def test_list_then_show_finds_a_refused_call_without_sqlite3(invoke: Invoke, logged: Logged):
    text = ok(invoke("log", "list", "--log", logged.url, "--code", "TOOL_NOT_OFFERED")).stdout
    header, row = text.splitlines()
    assert header.split()[:3] == ["time", "(UTC)", "kind"]
    assert row.split()[1:7] == [
        "action",
        logged.refused_id,  # whole, whatever the terminal's width
        "acme",
        "conv-7",
        "acc-1",
        "TOOL_NOT_OFFERED",
    ]
    shown = ok(invoke("log", "show", logged.refused_id, "--log", logged.url)).stdout
    lines = [" ".join(line.split()) for line in shown.splitlines()]
    assert lines[0] == f"action decision {logged.refused_id}"
    for expected in (
        "tool connect-domain",
        'arguments {"domain": "x.com"}',
        "verdict reject TOOL_NOT_OFFERED",
        f"turn {logged.turn_id}",
        "account acc-1",
        "trace id - (the request carried no trace context)",
    ):
        assert expected in lines, expected
    allowed = ok(invoke("log", "show", logged.allowed_id, "--log", logged.url)).stdout
    assert f"trace id {TRACED}" in [" ".join(line.split()) for line in allowed.splitlines()]
    assert any(line.startswith("hash c1:") and "(matches its content)" in line for line in lines)


def test_show_of_a_turn_lists_its_candidates_state_and_calls(invoke: Invoke, logged: Logged):
    shown = ok(invoke("log", "show", logged.turn_id, "--log", logged.url)).stdout
    lines = [" ".join(line.split()) for line in shown.splitlines()]
    assert lines[0] == f"turn {logged.turn_id}"
    assert "message how do I use my own domain name?" in lines
    assert "candidates" in lines and 'account.plan "free"' in lines
    connect = next(line for line in lines if " connect-domain " in line)
    assert connect.split()[3:5] == ["no", "no"] and "on_free_plan (ok)" in connect  # hidden
    assert "action decisions on this menu" in lines
    assert any(logged.allowed_id in line and " OK " in line for line in lines)


def test_json_forms_carry_the_whole_decision(invoke: Invoke, logged: Logged):
    turn = json.loads(
        ok(invoke("log", "show", logged.turn_id, "--log", logged.url, "--json")).stdout
    )
    assert (turn["kind"], turn["turn_id"], turn["tenant"]) == ("turn", logged.turn_id, "acme")
    assert turn["hash_ok"] is True and turn["message"]["conversation"] == "conv-7"
    assert [a["decision_id"] for a in turn["actions"]] == [logged.refused_id, logged.allowed_id]
    action = json.loads(
        ok(invoke("log", "show", logged.allowed_id, "--log", logged.url, "--json")).stdout
    )
    assert (action["code"], action["call"]["name"]) == ("OK", logged.allowed_tool)
    assert action["turn"]["decision_id"] == logged.turn_id and action["trace_id"] == TRACED
    listed = json.loads(
        ok(invoke("log", "list", "--log", logged.url, "--account", "acc-1", "--json")).stdout
    )
    ids = [d["decision_id"] for d in listed["decisions"]]
    assert ids == [logged.allowed_id, logged.refused_id, logged.turn_id]  # newest first
    assert listed["filter"] == {"account": "acc-1", "limit": 50} and listed["more"] is False


def test_tenant_scoping_and_filters_from_the_command_line(invoke: Invoke, logged: Logged):
    def ids(*args: str) -> list[str]:
        out = ok(invoke("log", "list", "--log", logged.url, "--json", *args)).stdout
        return [d["decision_id"] for d in json.loads(out)["decisions"]]

    assert ids("--tenant", "acme", "--kind", "turn") == [logged.turn_id]
    assert ids("--tenant", "acm") == []  # tenants are matched exactly
    assert ids("--session", "conv-7", "--code", "OK") == [logged.allowed_id]
    assert ids("--since", "2h", "--limit", "1") == [logged.allowed_id]
    assert ids("--until", "2000-01-01") == []
    assert ids("--trace", TRACED) == [logged.allowed_id]  # action decisions of that trace
    assert ids("--trace", "1" * 32) == []
    more = json.loads(
        ok(invoke("log", "list", "--log", logged.url, "--limit", "2", "--json")).stdout
    )
    assert more["more"] is True
    cut = ok(invoke("log", "list", "--log", logged.url, "--limit", "2")).stdout
    assert cut.splitlines()[-1].startswith("(the newest 2; more match")


def test_an_unknown_or_foreign_id_is_one_line_and_exit_2(call_main: CallMain, logged: Logged):
    code, out, err = call_main(
        "log", "show", logged.refused_id, "--log", logged.url, "--tenant", "other"
    )
    assert (code, out) == (2, "")
    assert err.startswith(f"error: no turn or action decision {logged.refused_id!r} of tenant")
    assert len(err.strip().splitlines()) == 1
    code, _, err = call_main("log", "list", "--log", logged.url, "--since", "yesterday")
    assert code == 2 and "--since 'yesterday' is not a time" in err
    code, _, err = call_main("log", "list", "--log", logged.url, "--kind", "call")
    assert code == 2 and "choose one of turn, action" in err
    code, _, err = call_main("log", "list", "--log", logged.url, "--trace", TRACED.upper())
    assert code == 2 and "is not a W3C trace id" in err
    code, _, err = call_main("log", "list", "--log", logged.url, "--limit", "0")
    assert code == 2 and "--limit" in err


def test_an_empty_listing_says_so(invoke: Invoke, logged: Logged):
    text = ok(invoke("log", "list", "--log", logged.url, "--session", "nobody")).stdout
    assert text.strip() == "no decision matches"
