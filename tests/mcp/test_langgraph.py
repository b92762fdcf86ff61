"""LangGraph through ``langchain-mcp-adapters`` in front of `maitred mcp` over streamable HTTP.

The adapters pin ``mcp<2`` and this project's venv has ``mcp`` 2, so the agent runs in a venv
of its own, ``.venv-langgraph/`` (``make frameworks-deps``, a prerequisite of ``make test``;
the fixture below runs it too, so a test run by hand builds it the first time). The test starts
the gateway over HTTP in front of the recording upstream of ``conftest.py`` (``http_site.py``)
and runs ``langgraph_agent.py`` with that venv's python: ``MultiServerMCPClient`` loads the
gateway's tools with the bearer token, a LangGraph agent runs them with a scripted chat model,
and the script prints as JSON what the model was offered and every tool message. The tests
show:

* a tool the account's state hides is not among the tools bound to the model; named anyway,
  LangGraph's tool node answers the model itself ("not a valid tool") and nothing reaches the
  gateway;
* a call the gateway refuses (a call policy; a tool hidden after the list was taken) reaches
  the model as a tool message with ``status="error"`` whose text is the gateway's JSON, code
  and ``decision_id`` included (the adapters drop the result's ``_meta``);
* the upstream never ran a refused call;
* tool-list caching: the tools are loaded once, before the graph is built, and never again
  (the adapters have no handler for ``list_changed``), with a session per call or one session.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.mcp.conftest import Site
from tests.mcp.http_site import TOKEN, HttpSite, serve_http

pytestmark = pytest.mark.slow  # the gateway, its upstream and the agent run as subprocesses

AGENT = Path(__file__).with_name("langgraph_agent.py")
LISTED_ON_FREE = ["get_plan", "upgrade", "crash"]


@pytest.fixture
def http(site: Site) -> Iterator[HttpSite]:
    served = serve_http(site)
    try:
        yield served
    finally:
        served.gateway.stop()


def run_agent(
    python: Path,
    http: HttpSite,
    steps: Sequence[Sequence[tuple[str, dict[str, Any]]]],
    **plan: Any,
) -> dict[str, Any]:
    """Run ``langgraph_agent.py`` on the gateway with ``steps`` (and ``plan``'s other keys)."""
    path = http.site.root / "plan.json"
    path.write_text(
        json.dumps({"url": http.url, "token": TOKEN, "steps": steps, **plan}), encoding="utf-8"
    )
    ran = subprocess.run(
        [str(python), str(AGENT), str(path)], capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    found: dict[str, Any] = json.loads(ran.stdout)
    assert found["final"] == "done"
    return found


def refusal(http: HttpSite, message: dict[str, Any]) -> dict[str, Any]:
    """The gateway's rejection as the model reads it, checked against the decision log."""
    assert message["status"] == "error"
    payload: dict[str, Any] = json.loads(message["content"])
    logged = {r["decision_id"]: r for r in http.decisions()}
    assert logged[payload["decision_id"]]["code"] == payload["code"]
    return payload


@pytest.mark.parametrize("builder", ["create_react_agent", "create_agent"])
def test_a_hidden_tool_is_not_offered_and_a_policy_refusal_reaches_the_model(
    langgraph_python: Path, http: HttpSite, builder: str
) -> None:
    step = [
        ("get_plan", {"account": "acc-1"}),
        ("export_report", {"year": 2025}),  # hidden on free: never offered
        ("upgrade", {"account": "acc-2", "plan": "pro"}),  # breaks only_own_account
    ]
    found = run_agent(langgraph_python, http, [step], builder=builder)
    assert found["offered"][0] == LISTED_ON_FREE
    plan, export, upgrade = found["messages"]
    assert (plan["name"], plan["status"], plan["content"]) == ("get_plan", "success", "free")
    # named anyway, the hidden tool is refused by LangGraph's tool node: it has no such tool
    assert export["status"] == "error" and "export_report is not a valid tool" in export["content"]
    error = refusal(http, upgrade)
    assert error["code"] == "SHOP_OTHER_ACCOUNT" and error["fields"] == ["account"]
    assert error["executed"] is False and "signed-in account" in error["message"]
    assert http.site.upstream_calls() == ["get_plan"]
    # the tool node runs a step's calls concurrently: the log's order is either
    assert sorted(r["tool"] for r in http.decisions()) == ["get_plan", "upgrade"]  # no export


@pytest.mark.parametrize("session", [False, True], ids=["session-per-call", "one-session"])
def test_a_hidden_tool_called_from_a_stale_list_is_refused_at_call_time(
    langgraph_python: Path, http: HttpSite, session: bool
) -> None:
    """Loaded on pro; the plan drops to free before the model's call: the gateway re-checks."""
    http.site.set_plan("pro")
    free = json.dumps({"acc-1": {"account": {"plan": "free"}}})
    found = run_agent(
        langgraph_python,
        http,
        [[("export_report", {"year": 2025})]],
        before={"path": str(http.site.accounts), "text": free},
        session=session,
    )
    assert "export_report" in found["offered"][0]
    error = refusal(http, found["messages"][0])
    assert error["executed"] is False
    if session:  # the session that listed it: offered then, blocked now
        assert error["code"] == "TOOL_NOT_EXECUTABLE" and "free_plan" in error["message"]
    else:  # get_tools() opens an MCP session per call: the gateway sees a session that never
        # listed, on the free plan, naming a tool hidden from it (its predicate unsaid)
        assert error["code"] == "TOOL_NOT_OFFERED" and "free_plan" not in error["message"]
    assert http.site.upstream_calls() == []


@pytest.mark.parametrize("session", [False, True], ids=["session-per-call", "one-session"])
def test_the_tool_list_is_loaded_once(
    langgraph_python: Path, http: HttpSite, session: bool
) -> None:
    """``upgrade`` moves acc-1 to pro (a write): the list the model is offered stays as loaded."""
    steps = [
        [("upgrade", {"account": "acc-1", "plan": "pro"})],
        [("get_plan", {"account": "acc-1"}), ("export_report", {"year": 2025})],
    ]
    found = run_agent(langgraph_python, http, steps, session=session)
    assert found["offered"][:2] == [LISTED_ON_FREE, LISTED_ON_FREE]
    upgrade, plan, export = found["messages"]
    assert upgrade["status"] == "success" and upgrade["content"] == "acc-1 is on pro"
    assert plan["content"] == "pro"  # the write held
    assert export["status"] == "error" and "export_report is not a valid tool" in export["content"]
    assert http.site.upstream_calls() == ["upgrade", "get_plan"]
    # the gateway announced the change on the session of the write, and nothing re-listed
    assert "ToolListChangedNotification" in found["notifications"]
    sessions = {r["session_id"] for r in http.decisions()}
    # get_tools() opens an MCP session, and so the gateway keeps a maitred session, per call
    assert len(sessions) == (1 if session else 2)
