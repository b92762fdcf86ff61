"""Shadow mode: a rule named in ``shadow`` is evaluated and logged, and never blocks.

These tests drive the gatekeeper directly (no MCP processes): the middleware only forwards
what it decides.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from tests.mcp.conftest import Site

from maitred.errors import ConfigError
from maitred.gateway import GatewayConfig, GatewayEngines, load_config
from maitred.log.base import open_log


def _schema(**props: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {k: {"type": v} for k, v in props.items()},
        "required": list(props),
    }


TOOLS = [
    {"name": "get_plan", "description": "Say the plan.", "inputSchema": _schema(account="string")},
    {"name": "export_report", "description": "Export.", "inputSchema": _schema(year="integer")},
    {
        "name": "upgrade",
        "description": "Change the plan.",
        "inputSchema": _schema(account="string", plan="string"),
    },
]


def _config(site: Site, *shadow: str) -> GatewayConfig:
    config = load_config(site.config)
    return replace(config, upstreams=(replace(config.upstream, shadow=shadow),))


def test_shadowed_rules_are_logged_under_their_own_session_and_never_block(site: Site) -> None:
    engines = GatewayEngines.open(_config(site, "free_plan", "only_own_account"), {"shop": TOOLS})
    keeper = engines.keeper("acc-1")
    try:
        assert keeper.visible() == ("get_plan", "export_report", "upgrade")
        assert keeper.check("export_report", {"year": 2025}).allow
        assert keeper.check("upgrade", {"account": "acc-2", "plan": "pro"}).allow
        assert keeper.check("get_plan", {"account": 7}).code == "ARGS_INVALID"  # schemas hold
    finally:
        engines.close()
    with open_log(str(site.log)) as log:
        rows = list(log.iter_action_decisions())
        runs = {t["run_id"]: t for t in log.iter_turns()}
    shadow = {(r["tool"], r["code"]) for r in rows if r["session_id"].endswith("-shadow")}
    enforced = {(r["tool"], r["code"]) for r in rows if not r["session_id"].endswith("-shadow")}
    assert enforced == {("export_report", "OK"), ("upgrade", "OK"), ("get_plan", "ARGS_INVALID")}
    assert shadow == {
        ("export_report", "TOOL_NOT_OFFERED"),
        ("upgrade", "SHOP_OTHER_ACCOUNT"),
        ("get_plan", "ARGS_INVALID"),
    }
    shadow_turn = next(t for run, t in runs.items() if "-shadow-" in run)
    hidden = [p["skill"] for p in shadow_turn["pairs"] if not p["visible"]]
    assert hidden == ["export_report"]  # what full enforcement would have listed


def test_a_shadow_name_that_is_no_rule_is_refused_with_the_known_ones(site: Site) -> None:
    with pytest.raises(ConfigError, match=r"'shadow'.*'free_plan'"):
        GatewayEngines.open(_config(site, "free_plan", "fre_plan"), {"shop": TOOLS})
