"""Every decision a conversation makes names its principal: the account and the credential's
subject, and for a call the upstream it goes to and the client's protocol era; an operator's
filter by account finds a decision made before any turn (issue 34, item 8)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maitred.actions.model import Hold, ToolCall
from maitred.conversation import Principal
from maitred.log.lookup import DecisionFilter, list_decisions

pytest.importorskip("fastmcp", reason="the MCP gateway's engines need the mcp extra")
from maitred.gateway.config import parse_config
from maitred.gateway.keeper import GatewayEngines

TOOLS = [
    {
        "name": "merge_pull_request",
        "description": "Merge a pull request into the main branch of the repository.",
        "inputSchema": {"type": "object", "properties": {"number": {"type": "integer"}}},
    },
]


def _engines(tmp_path: Path) -> GatewayEngines:
    (tmp_path / "accounts.json").write_text('{"acc-1": {"account": {"plan": "pro"}}}', "utf-8")
    data: dict[str, Any] = {
        "account": "acc-1",
        "state": "accounts.json",
        "log": "log.sqlite",
        "upstreams": [{"name": "repo", "command": "unused"}],
    }
    return GatewayEngines.open(parse_config(data, "g.yaml", base=tmp_path), {"repo": TOOLS})


def test_a_call_s_decision_names_account_subject_upstream_and_era(tmp_path: Path) -> None:
    engines = _engines(tmp_path)
    who = Principal("acc-1", tenant="acme", granted=frozenset(), subject="alice@idp")
    try:
        one = engines.conversation(who, by_principal=True)
        one.visible()
        allowed = one.check("merge_pull_request", {"number": 7}, era="2026-07-28")
        log = engines.engine.log
        assert log is not None
        row = log.query(
            "SELECT account_id, decision_json FROM action_decisions WHERE decision_id = ?",
            (allowed.decision_id,),
        )
    finally:
        engines.close()
    assert allowed.allow
    assert (allowed.account, allowed.subject) == ("acc-1", "alice@idp")
    assert (allowed.upstream, allowed.era, allowed.tenant) == ("repo", "2026-07-28", "acme")
    account_id, text = row[0]
    assert account_id == "acc-1"
    for stored in ('"subject":"alice@idp"', '"upstream":"repo"', '"era":"2026-07-28"'):
        assert stored in text


def test_a_refusal_before_any_turn_is_found_by_its_account(tmp_path: Path) -> None:
    """A decision linked to no turn (nothing was listed yet) once had no account in a
    listing, so ``log list --account`` missed it."""
    engines = _engines(tmp_path)
    try:
        one = engines.conversation(Principal("acc-1", subject="token:0123"))
        refused = one.refuse(
            ToolCall("merge_pull_request", {}), Hold("RATE_LIMITED", "past the rate", "a test")
        )
        log = engines.engine.log
        assert log is not None
        log.flush()
        found = list_decisions(log, DecisionFilter(account="acc-1", kind="action"))
        other = list_decisions(log, DecisionFilter(account="acc-2", kind="action"))
    finally:
        engines.close()
    assert not refused.turn_id  # linked to no turn
    assert [d.decision_id for d in found.decisions] == [refused.decision_id]
    assert found.decisions[0].account == "acc-1"
    assert other.decisions == ()


def test_a_decision_without_a_principal_s_extras_keeps_its_earlier_form(tmp_path: Path) -> None:
    """The new keys appear only when known, so decisions made without them hash as before."""
    engines = _engines(tmp_path)
    try:
        one = engines.conversation(Principal("acc-1"))
        one.visible()
        decision = one.check("nope", {})
    finally:
        engines.close()
    data = decision.to_json()
    assert "subject" not in data and "era" not in data and "upstream" not in data
    assert data["account"] == "acc-1"


def test_each_call_s_context_names_its_own_era_and_upstream(tmp_path: Path) -> None:
    """The contexts a conversation's decisions are made with are kept per (upstream, era),
    and a decision in one era never carries another's."""
    engines = _engines(tmp_path)
    who = Principal("acc-1", tenant="acme", granted=frozenset(), subject="alice@idp")
    try:
        one = engines.conversation(who, by_principal=True)
        one.visible()
        eras = ["2026-07-28", "2025-11-25", "2026-07-28", ""]
        decided = [one.check("merge_pull_request", {"number": 7}, era=era) for era in eras]
        again = one.origin("merge_pull_request", "2025-11-25")
        assert again is one.origin("merge_pull_request", "2025-11-25")
        for n in range(80):  # more eras than are kept: the contexts stay right
            assert one.origin("merge_pull_request", f"era-{n}").era == f"era-{n}"
        assert one.origin("merge_pull_request", "2025-11-25") == again
    finally:
        engines.close()
    assert [d.era for d in decided] == eras
    assert {d.upstream for d in decided} == {"repo"}
    assert {(d.subject, d.account) for d in decided} == {("alice@idp", "acc-1")}
    assert again.granted == frozenset() and again.subject == "alice@idp"
