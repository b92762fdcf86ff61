"""The simulator, its tasks and violations, shadow replay and `maitred actions check`."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from maitred.actions.packs import load_pack, tau2_airline
from maitred.actions.replay import load_trajectories, replay
from maitred.cli.main import app
from maitred.errors import ConfigError, InputError
from maitred.lab.sim import make_executor
from maitred.lab.sim.airline import AirlineSim, generate_db, make_tasks, violations
from maitred.lab.sim.airline.tools import state_hash

from .builders import make_db

SEEDS = range(6)
EXAMPLES = Path(__file__).parents[2] / "examples" / "airline"


def _replay(db: dict[str, Any], items: list[dict[str, Any]]) -> tuple[list[Any], dict[str, Any]]:
    entry = load_pack("tau2-airline")
    gate = entry.make_gate(None)
    kept: dict[str, Any] = {}

    def make(work: dict[str, Any]) -> Any:
        kept["db"] = work
        return make_executor("tau2-airline", work, gate.rulebook.settings)

    return list(replay(gate, db, items, make, carry_state=True)), kept["db"]


def test_generator_is_seeded() -> None:
    assert generate_db(3) == generate_db(3)
    assert generate_db(3) != generate_db(4)


@pytest.mark.parametrize("seed", SEEDS)
def test_gold_trajectories_pass_with_zero_rejections(seed: int) -> None:
    db = generate_db(seed)
    tasks = make_tasks(db, seed)
    assert len(tasks) >= 6
    for task in tasks:
        rows, final = _replay(db, [task.to_json()])
        assert [r.decision for r in rows] == ["allow"] * len(rows), rows
        assert all("failed" not in r.message for r in rows)
        assert state_hash(final) == task.expected_state, task.id


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_violations_get_their_rules_code(seed: int) -> None:
    db = generate_db(seed)
    before = copy.deepcopy(db)
    for item in violations(db, seed):
        rows, final = _replay(db, [item])
        assert rows[-1].decision == "reject" and rows[-1].code == item["expect"], rows[-1]
        assert final == before  # a rejected write never reaches the tools
    assert db == before


def test_violations_cover_every_reachable_code() -> None:
    seen = {v["expect"] for seed in SEEDS for v in violations(generate_db(seed), seed)}
    # a reservation that does not exist cannot be read first, so replay cannot reach it
    assert set(tau2_airline.codes()) - seen == {"AIRLINE_RESERVATION_NOT_FOUND"}


def test_the_simulator_is_policy_permissive() -> None:
    """Without the gate, every violating write succeeds silently (the failure mode)."""
    db = generate_db(0)
    for item in violations(db, 0):
        sim = AirlineSim(copy.deepcopy(db))
        for c in item["calls"]:
            sim.call(c["name"], c["arguments"])  # no exception


def test_replay_applies_allowed_writes_for_later_calls() -> None:
    db = generate_db(0)
    task = next(t for t in make_tasks(db, 0) if t.kind == "cancel_business")
    twice = {"id": "twice", "context": {}, "calls": [*task.calls, task.calls[-1]]}
    rows, _ = _replay(db, [twice])
    assert [r.code for r in rows] == ["OK", "AIRLINE_CANCEL_ALREADY_CANCELLED"]
    booked = next(t for t in make_tasks(db, 0) if t.kind == "book")
    rows, final = _replay(db, [booked.to_json()])
    rid = next(r for r in final["reservations"] if r not in db["reservations"])
    change = {"name": "update_reservation_passengers",
              "arguments": {"reservation_id": rid, "passengers": []}}  # fmt: skip
    item = {"id": "b", "calls": [*booked.calls, change]}
    rows, _ = _replay(db, [item])  # booked in the session counts as read
    assert [r.code for r in rows] == ["OK", "AIRLINE_PASSENGER_COUNT_CHANGED"]


def test_cli_check_prints_one_line_per_mutating_call() -> None:
    result = CliRunner().invoke(app, [
        "actions", "check", "--pack", "tau2-airline", "--db", str(EXAMPLES / "db.json"),
        "--trajectories", str(EXAMPLES / "trajectories.jsonl"),
    ])  # fmt: skip
    assert result.exit_code == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    items = load_trajectories(EXAMPLES / "trajectories.jsonl")
    assert len(rows) == len(items)  # each example has exactly one write
    for row in rows:
        assert list(row) == ["trajectory", "index", "name", "decision", "code", "message"]
        expect = row["trajectory"].removeprefix("violates-").upper()
        if row["trajectory"].startswith("violates-"):
            assert (row["decision"], row["code"]) == ("reject", expect)
        else:
            assert (row["decision"], row["code"]) == ("allow", "OK")


def test_cli_now_changes_the_clock(tmp_path: Path) -> None:
    db = make_db()
    db["reservations"]["ECO"]["created_at"] = "2024-05-15T10:00:00"
    calls = [{"name": "get_reservation_details", "arguments": {"reservation_id": "ECO"}},
             {"name": "cancel_reservation", "arguments": {"reservation_id": "ECO"}}]  # fmt: skip
    (tmp_path / "db.json").write_text(json.dumps(db))
    (tmp_path / "t.jsonl").write_text(json.dumps({"id": "t", "calls": calls}) + "\n")
    args = ["actions", "check", "--pack", "tau2-airline", "--db", str(tmp_path / "db.json"),
            "--trajectories", str(tmp_path / "t.jsonl")]  # fmt: skip
    first = json.loads(CliRunner().invoke(app, args).stdout)
    later = json.loads(CliRunner().invoke(app, [*args, "--now", "2024-05-20T15:00:00"]).stdout)
    assert first["decision"] == "allow"
    assert later["code"] == "AIRLINE_CANCEL_NOT_ELIGIBLE"


def test_cli_errors_name_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "t.jsonl"
    bad.write_text('{"id": "a", "calls": []}\n{"id": "b"}\n')
    with pytest.raises(InputError, match=r"t.jsonl:2"):
        load_trajectories(bad)
    with pytest.raises(ConfigError, match="choose one of"):
        load_pack("tau3-airline")
    with pytest.raises(ConfigError, match="is not an ISO time"):
        tau2_airline.make_gate({"now": "yesterday"})
    with pytest.raises(ConfigError, match="no setting"):
        tau2_airline.make_gate({"clock": 1})


def test_each_trajectory_starts_from_the_initial_database() -> None:
    """A write in one trajectory is not seen by the next unless carry_state is asked for."""
    db = make_db()
    gate = tau2_airline.make_gate()
    cancel = {"name": "cancel_reservation", "arguments": {"reservation_id": "BIZ"}}
    read = {"name": "get_reservation_details", "arguments": {"reservation_id": "BIZ"}}
    items = [{"id": "first", "calls": [read, cancel]}, {"id": "second", "calls": [read, cancel]}]

    def make(work: dict[str, Any]) -> Any:
        return make_executor("tau2-airline", work, gate.rulebook.settings)

    fresh = [r.code for r in replay(gate, db, items, make)]
    carried = [r.code for r in replay(gate, db, items, make, carry_state=True)]
    assert fresh == ["OK", "OK"]
    assert carried == ["OK", "AIRLINE_CANCEL_ALREADY_CANCELLED"]
    assert db["reservations"]["BIZ"].get("status") != "cancelled"  # the input is untouched


def test_bad_trajectory_lines_are_all_reported_and_the_good_ones_kept(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"id": "a", "calls": []}\n'
        "not json\n"
        '{"id": "a", "calls": []}\n'
        "\n"
        '{"calls": [{"arguments": {}}]}\n'
        '{"calls": []}\n',
        encoding="utf-8",
    )
    bad: list[InputError] = []
    items = load_trajectories(path, on_error=bad.append)
    assert [i["id"] for i in items] == ["a", "line-6"]
    assert [(e.line, e.path) for e in bad] == [(2, str(path)), (3, str(path)), (5, str(path))]
    assert "used by an earlier line" in str(bad[1])
