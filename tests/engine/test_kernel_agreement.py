"""Defect 3 of issue 16: stage 2 and stage 5 decided the same exit predicates two ways.

Stage 2 knew the causes ``account_not_found`` and ``state_unavailable``; stage 5 rebuilt a
snapshot without them, so for an account the store has no record of, a mutating tool whose
predicate says ``on_missing: offer`` was hidden at stage 2 and *allowed* at stage 5. Both now
ask the one kernel (:func:`maitred.contract.kernel.decide_exit`) on the same read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from maitred import Maitred, PipelineOptions, ToolCall
from maitred.contract import CelPredicate, Contract
from maitred.skills.model import Catalog, Skill

# "no domain record: nothing locks it" -- fail-open on a missing key, on a mutating tool
LOCKED = CelPredicate(
    "domain.registrar_lock", "domain_locked", ("domain.registrar_lock",), on_missing="offer"
)
TOOL = "transfer_domain"


def _write(path: Path, accounts: dict[str, object]) -> None:
    path.write_text(json.dumps(accounts), encoding="utf-8")
    stamp = path.stat().st_mtime_ns + 1_000_000_000  # the provider notices the change
    os.utime(path, ns=(stamp, stamp))


def _engine(tmp_path: Path, accounts: Path) -> Maitred:
    catalog = Catalog(
        (
            Skill(
                TOOL,
                "Transfer the domain to another registrar.",
                kind="tool",
                contract=Contract(mutates=True, exit_predicates=(LOCKED,)),
            ),
        )
    )
    return Maitred.open(
        catalog, str(accounts), PipelineOptions(method="bm25"), log=str(tmp_path / "log.sqlite")
    )


def test_an_unknown_account_cannot_call_a_fail_open_mutating_tool(tmp_path: Path) -> None:
    accounts = tmp_path / "accounts.json"
    _write(accounts, {"acc-1": {"account": {"plan": "pro"}}})  # known, no domain record
    with _engine(tmp_path, accounts) as engine:
        known = engine.session("acc-1")
        assert TOOL in engine.turn("transfer my domain", session=known).exposed  # fail-open

        _write(accounts, {"acc-2": {"account": {"plan": "pro"}}})  # acc-1 is gone
        gone = engine.turn("transfer my domain", session=engine.session("acc-1"))
        assert TOOL not in gone.exposed and gone.record.cause == "account_not_found"

        decision = engine.check(ToolCall(TOOL, {}), session=known)  # offered before
        assert decision.reject, "stage 5 allowed what stage 2 hides"
        assert decision.code == "TOOL_NOT_EXECUTABLE"
        assert decision.to_json()["cause"] == "account_not_found"
        assert "no record of this account" in decision.message_for_model


def test_a_store_that_fails_rejects_what_it_hides(tmp_path: Path) -> None:
    accounts = tmp_path / "accounts.json"
    _write(accounts, {"acc-1": {"account": {"plan": "pro"}}})
    with _engine(tmp_path, accounts) as engine:
        known = engine.session("acc-1")
        assert TOOL in engine.turn("transfer my domain", session=known).exposed
        accounts.write_text("{ not json", encoding="utf-8")  # the store breaks
        stamp = accounts.stat().st_mtime_ns + 2_000_000_000
        os.utime(accounts, ns=(stamp, stamp))
        down = engine.turn("transfer my domain", session=engine.session("acc-1"))
        assert TOOL not in down.exposed and down.record.cause == "state_unavailable"
        decision = engine.check(ToolCall(TOOL, {}), session=known)
        assert (decision.code, decision.to_json()["cause"]) == (
            "STATE_UNAVAILABLE",
            "state_unavailable",
        )


def test_every_logged_call_has_an_id(tmp_path: Path) -> None:
    accounts = tmp_path / "accounts.json"
    _write(accounts, {"acc-1": {"account": {"plan": "pro"}}})
    with _engine(tmp_path, accounts) as engine:
        session = engine.session("acc-1")
        engine.turn("transfer my domain", session=session)
        given = engine.check(ToolCall(TOOL, {}, id="toolu_1"), session=session)
        made = engine.check({"name": TOOL, "arguments": {}}, session=session)
        assert given.call.id == "toolu_1"
        assert made.call.id.startswith("call-") and len(made.call.id) > len("call-")
        rows = {r["decision_id"]: r for r in engine.log.iter_action_decisions()}  # type: ignore[union-attr]
        assert json.loads(rows[made.decision_id]["decision_json"])["call"]["id"] == made.call.id
