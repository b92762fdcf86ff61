"""Resources, prompts and skills are decided by the conversation, for its principal (issue 34,
item 1): what a list offers follows the principal's account and scopes, a read's decision is
logged naming the tenant, account, subject and era, a respelled URI is decided on its
canonical form, and a change after a write is found per conversation and by the watch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maitred.actions.model import ToolCall
from maitred.contract.model import Contract
from maitred.contract.predicate import StateView, exit_predicate
from maitred.contract.surfaces import Surface
from maitred.conversation import Principal
from maitred.errors import ConfigError

pytest.importorskip("fastmcp", reason="the MCP gateway's engines need the mcp extra")
from maitred.gateway.config import parse_config
from maitred.gateway.keeper import GatewayEngines

TOOLS = [{"name": "get_plan", "description": "Read the account's plan.", "inputSchema": {}}]


def _engines(tmp_path: Path, plans: dict[str, str]) -> GatewayEngines:
    rows = ", ".join(f'"{a}": {{"account": {{"plan": "{p}"}}}}' for a, p in plans.items())
    (tmp_path / "accounts.json").write_text("{" + rows + "}", "utf-8")
    data: dict[str, Any] = {
        "account": "acc-1",
        "state": "accounts.json",
        "log": "log.sqlite",
        "upstreams": [{"name": "docs", "command": "unused"}],
    }
    return GatewayEngines.open(parse_config(data, "g.yaml", base=tmp_path), {"docs": TOOLS})


@exit_predicate(reads=["account.plan"], message="upgrade to read it")
def free_plan(state: StateView) -> bool:
    return bool(state["account.plan"] == "free")


def _free_hides(scopes: tuple[str, ...] = ()) -> Contract:
    return Contract(exit_predicates=(free_plan,), scopes=frozenset(scopes))


def _govern(engines: GatewayEngines, ungated: Any = "pass") -> None:
    engines.govern(
        [
            Surface("resources", "docs://pricing", "docs", _free_hides()),
            Surface("resources", "docs://secrets", "docs", _free_hides(("docs:admin",))),
            Surface("prompts", "negotiate", "docs", _free_hides()),
        ],
        ungated=ungated,
        matches=lambda uri, template: False,
    )


def _read(uri: str) -> ToolCall:
    return ToolCall("resources/read", {"uri": uri})


def test_a_list_offers_what_the_principal_may_read_and_a_read_names_the_principal(
    tmp_path: Path,
) -> None:
    engines = _engines(tmp_path, {"acc-1": "pro", "acc-2": "free"})
    _govern(engines)
    uris = ["docs://pricing", "docs://secrets", "docs://handbook"]
    pro = Principal("acc-1", tenant="acme", granted=frozenset(), subject="alice@idp")
    admin = Principal("acc-1", tenant="acme", granted=frozenset({"docs:admin"}), subject="bob")
    free = Principal("acc-2", tenant="acme", granted=frozenset({"docs:admin"}), subject="carol")
    try:
        offered = {
            who.subject: engines.conversation(who).offer("resources", uris)
            for who in (pro, admin, free)
        }
        one = engines.conversation(pro, by_principal=True)
        one.offer("resources", uris)
        allowed = one.read("resources", "DOCS://pricing/./", _read("DOCS://pricing/./"), era="x")
        refused = one.read("resources", "docs://secrets", _read("docs://secrets"))
        log = engines.engine.log
        assert log is not None
        rows = dict(
            log.query(
                "SELECT decision_id, decision_json FROM action_decisions WHERE account_id = ?",
                ("acc-1",),
            )
        )
    finally:
        engines.close()
    assert offered == {
        "alice@idp": ("docs://pricing", "docs://handbook"),  # lacks the scope of secrets
        "bob": ("docs://pricing", "docs://secrets", "docs://handbook"),
        "carol": ("docs://handbook",),  # the free plan hides both
    }
    assert allowed.allow and allowed.call.arguments["canonical"] == "docs://pricing/"
    assert (allowed.tenant, allowed.account, allowed.subject, allowed.era) == (
        "acme",
        "acc-1",
        "alice@idp",
        "x",
    )
    assert refused.code == "RESOURCE_NOT_AVAILABLE" and refused.subject == "alice@idp"
    assert "secrets" not in refused.message_for_model  # never names what was not offered
    assert '"subject":"alice@idp"' in rows[allowed.decision_id]
    assert '"era":"x"' in rows[allowed.decision_id]
    assert refused.decision_id in rows


def test_a_change_is_found_after_a_write_and_by_the_watch_once(tmp_path: Path) -> None:
    engines = _engines(tmp_path, {"acc-1": "free"})
    _govern(engines)
    state = tmp_path / "accounts.json"
    try:
        one = engines.conversation(Principal("acc-1"))
        other = engines.conversation(Principal("acc-1"))
        silent = engines.conversation(Principal("acc-1"))  # never listed: nothing to tell
        assert one.recheck_surfaces() == ()  # nothing listed yet
        for c in (one, other):
            assert c.offer("resources", ["docs://pricing"]) == ()
            assert c.offer("prompts", ["negotiate"]) == ()
        assert one.listed_surfaces == {"resources", "prompts"}
        state.write_text('{"acc-1": {"account": {"plan": "pro"}}}', "utf-8")
        after_write = one.recheck_surfaces()
        again = one.recheck_surfaces()
        watched = engines.recheck_surfaces([one, other, silent])
    finally:
        engines.close()
    assert sorted(after_write) == ["prompts", "resources"]
    assert again == ()  # announced once
    assert watched[0] == () and sorted(watched[1]) == ["prompts", "resources"] and not watched[2]


def test_engines_that_govern_no_surface_refuse_to_answer_for_them(tmp_path: Path) -> None:
    engines = _engines(tmp_path, {"acc-1": "pro"})
    try:
        one = engines.conversation(Principal("acc-1"))
        with pytest.raises(ConfigError, match="govern no resources"):
            one.read("resources", "docs://pricing", _read("docs://pricing"))
        assert one.served_as("skill://a/SKILL.md") == "skill://a/SKILL.md"
    finally:
        engines.close()
