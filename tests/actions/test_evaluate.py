"""The gated-agent evaluation: scripted agents, the retail control, pass^k, the llm loop."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from maitred.actions import ToolCall
from maitred.actions.packs import retail_control
from maitred.cli.main import app
from maitred.engine import Maitred
from maitred.errors import ConfigError
from maitred.lab.agents import (
    GoldAgent,
    LLMAgent,
    RecklessAgent,
    evaluate_agent,
    load_domain,
    paired_bootstrap,
    pass_hat_k,
)
from maitred.lab.agents.run import run_task
from maitred.lab.sim.retail import RetailSim, RetailToolError, generate_db, violations
from maitred.log import open_log, verify


def test_pass_hat_k_is_the_unbiased_estimate() -> None:
    assert pass_hat_k(4, 4, 4) == 1.0 and pass_hat_k(3, 4, 4) == 0.0
    assert pass_hat_k(3, 4, 1) == 0.75
    assert pass_hat_k(3, 5, 2) == pytest.approx(3 / 10)
    with pytest.raises(ValueError, match="1 <= k <= trials"):
        pass_hat_k(1, 2, 3)


@given(st.lists(st.floats(0, 1), min_size=1, max_size=20))
def test_bootstrap_interval_holds_the_point_and_zero_for_equal_arms(xs: list[float]) -> None:
    same = paired_bootstrap(xs, xs, rounds=200)
    assert (same.diff, same.low, same.high) == (0.0, 0.0, 0.0)
    ys = [x / 2 for x in xs]
    ci = paired_bootstrap(xs, ys, rounds=200)
    assert ci.low - 1e-12 <= ci.diff <= ci.high + 1e-12


@pytest.mark.parametrize("pack", ["tau2-airline", "retail-control"])
def test_gold_passes_everything_with_and_without_gates(pack: str) -> None:
    report = evaluate_agent(load_domain(pack), GoldAgent(), n_tasks=12, trials=2, seed=1)
    assert all(all(r.passed_on) and all(r.passed_off) for r in report.results)
    assert sum(r.rejections for r in report.results) == 0


def test_reckless_pass1_rises_with_gates_on_airline() -> None:
    report = evaluate_agent(
        load_domain("tau2-airline"), RecklessAgent(0.5), n_tasks=16, trials=4, seed=0
    )
    ci = report.interval(1)
    assert ci.low > 0, ci
    assert report.interval(1, "not_fired").contains(0.0)
    fired = report.to_json()["strata"]["fired"]
    assert fired["n_tasks"] > 0 and fired["pass^1"]["on"] == 1.0
    codes = {c for r in report.results for c in r.codes}
    assert codes and all(c.startswith("AIRLINE_") for c in codes)


def test_retail_control_gates_have_no_effect() -> None:
    report = evaluate_agent(
        load_domain("retail-control"), RecklessAgent(0.7), n_tasks=18, trials=4, seed=0
    )
    assert sum(r.rejections for r in report.results) > 0  # the gates did fire ...
    assert report.interval(1).contains(0.0)  # ... and changed nothing
    assert report.interval(4).contains(0.0)


def test_retail_tools_refuse_what_the_gates_reject() -> None:
    gate = retail_control.make_gate()
    for seed in range(3):
        db = generate_db(seed)
        for v in violations(db, seed):
            last = v["calls"][-1]
            before = json.dumps(db, sort_keys=True)
            decision = gate.check(ToolCall(last["name"], last["arguments"]), db)
            assert decision.code == v["expect"]
            with pytest.raises(RetailToolError):
                RetailSim(db).call(last["name"], last["arguments"])
            assert json.dumps(db, sort_keys=True) == before


def test_gated_decisions_go_to_the_log(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    with open_log(path) as log:
        report = evaluate_agent(
            load_domain("tau2-airline"), RecklessAgent(1.0), n_tasks=3, trials=2, log=log
        )
    with open_log(path, read_only=True) as log:
        rows = list(log.iter_action_decisions())
        assert verify(log).ok
    rejected = [r for r in rows if r["verdict"] == "reject"]
    assert len(rejected) == sum(r.rejections for r in report.results) > 0
    assert all(r["session_id"].endswith("/on") for r in rows)


# -- the llm agent, against a scripted OpenAI-compatible server ---------------------------------


class _Script(BaseHTTPRequestHandler):
    """Answers with the next scripted tool call; records every request body."""

    calls: ClassVar[list[dict[str, Any]]] = []
    seen: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        n = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if n < len(self.calls):
            c = self.calls[n]
            tc = {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
            }
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [tc]}
        else:
            message = {"role": "assistant", "content": "Done."}
        data = json.dumps({"choices": [{"message": message}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = HTTPServer(("127.0.0.1", 0), _Script)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_llm_agent_gets_rejections_as_tool_results(server: str) -> None:
    domain = load_domain("tau2-airline")
    task = next(t for t in domain.tasks(8) if t.task.kind == "cancel_recent")
    rid = task.task.calls[-1]["arguments"]["reservation_id"]
    premature = {"name": "cancel_reservation", "arguments": {"reservation_id": rid}}
    _Script.calls, _Script.seen = [premature, *task.task.calls], []
    agent = LLMAgent(domain, server, "scripted")
    result = run_task(domain, domain.make_gate(), task, agent, trials=1, seed=0)
    # gates on: the premature cancel is rejected, returned as its tool result, then the
    # scripted model reads and cancels; gates off: the unread cancel runs, the second one
    # refunds again -- a silent wrong state
    assert result.passed_on == (True,) and result.passed_off == (False,)
    assert result.codes == ("AIRLINE_MUST_READ_RESERVATION",)
    tool_results = [m for b in _Script.seen for m in b["messages"] if m["role"] == "tool"]
    assert any("rejected_by_policy" in m["content"] for m in tool_results)
    first = _Script.seen[0]
    assert rid in first["messages"][1]["content"] and first["model"] == "scripted"
    assert {t["function"]["name"] for t in first["tools"]} >= {"cancel_reservation"}


def test_llm_agent_endpoint_errors_say_what_to_check() -> None:
    domain = load_domain("retail-control")
    with pytest.raises(ConfigError, match="must be an http"):
        LLMAgent(domain, "localhost:1", "m")
    agent = LLMAgent(domain, "http://127.0.0.1:9/v1", "m", timeout_s=2)
    with pytest.raises(ConfigError, match=r"failed.*--base-url"):
        evaluate_agent(domain, agent, n_tasks=1, trials=1)


def test_cli_eval_agent_json_and_table() -> None:
    runner = CliRunner()
    args = ["eval", "agent", "--pack", "retail-control", "--tasks", "4", "--trials", "2"]
    out = runner.invoke(app, [*args, "--agent", "reckless", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["strata"]["all"]["pass^1"]["diff"] == 0.0
    table = runner.invoke(app, [*args, "--agent", "gold"])
    assert "pass^1" in table.output and "95% CI" in table.output
    bad = runner.invoke(app, [*args, "--agent", "nobody"])
    assert bad.exit_code != 0


@pytest.mark.parametrize("pack", ["tau2-airline", "retail-control"])
def test_the_evaluated_gate_is_the_one_the_engine_holds(
    pack: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`eval agent` gates through the entry object, as `actions check` does."""
    built: list[Maitred] = []
    real = Maitred.for_pack

    def spy(pack_name: Any, settings: Any = None, **kwargs: Any) -> Maitred:
        engine = real(pack_name, settings, **kwargs)
        built.append(engine)
        return engine

    monkeypatch.setattr(Maitred, "for_pack", staticmethod(spy))
    gate = load_domain(pack).make_gate()
    assert [e.action_gate for e in built] == [gate]
    assert gate.rulebook.name == pack
