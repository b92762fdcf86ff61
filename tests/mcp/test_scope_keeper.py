"""Scopes inside the gateway's gatekeeper, without HTTP: one grant decides the listing, the
state watch's probe, ``find_tools`` and the call alike (the kernel's rule, passed per call)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maitred.conversation.finding import CALL_TOOL
from maitred.gateway.config import parse_config
from maitred.gateway.keeper import FIND_TOOLS, GatewayEngines

TOOLS = [
    {
        "name": "merge_pull_request",
        "description": "Merge a pull request into the main branch of the repository.",
        "inputSchema": {"type": "object", "properties": {"number": {"type": "integer"}}},
    },
    {
        "name": "list_pull_requests",
        "description": "List the open pull requests of the repository.",
        "inputSchema": {"type": "object"},
    },
]
SIDECAR = """\
tools:
  merge_pull_request:
    mutates: true
    scopes: [repo:write]
"""


def _engines(tmp_path: Path, disclosure: str = "all") -> GatewayEngines:
    (tmp_path / "accounts.json").write_text('{"acc-1": {"account": {"plan": "pro"}}}', "utf-8")
    (tmp_path / "repo.maitred.yaml").write_text(SIDECAR, encoding="utf-8")
    data: dict[str, Any] = {
        "account": "acc-1",
        "state": "accounts.json",
        "log": "log.sqlite",
        "disclosure": disclosure,
        "upstreams": [{"name": "repo", "command": "unused", "contracts": "repo.maitred.yaml"}],
    }
    return GatewayEngines.open(parse_config(data, "g.yaml", base=tmp_path), {"repo": TOOLS})


@pytest.mark.parametrize(
    ("granted", "sees"),
    [
        (None, True),  # stdio: no scopes said
        (frozenset(), False),
        (frozenset({"repo:read"}), False),
        (frozenset({"repo:read", "repo:write"}), True),
    ],
)
def test_one_grant_decides_the_listing_the_watch_and_the_call(
    tmp_path: Path, granted: frozenset[str] | None, sees: bool
) -> None:
    engines = _engines(tmp_path)
    try:
        keeper = engines.keeper("acc-1", tenant="acme", granted=granted)
        listed = keeper.visible()
        probe = keeper.would_list(engines.engine.read_state("acc-1", engines.tool_names))
        decision = keeper.check("merge_pull_request", {"number": 7})
        assert engines.engine.log is not None
        turns = list(engines.engine.log.iter_turns())
    finally:
        engines.close()
    assert ("merge_pull_request" in listed) == sees
    assert probe == listed  # the watch decides as the listing did: nothing to announce
    assert decision.allow == sees
    if not sees:
        assert decision.code == "INSUFFICIENT_SCOPE" and decision.tenant == "acme"
    pairs = [p for t in turns for p in t["pairs"] if p["skill"] == "merge_pull_request"]
    assert pairs and all(p["visible"] == sees for p in pairs)


def test_find_tools_never_names_a_tool_out_of_scope(tmp_path: Path) -> None:
    engines = _engines(tmp_path, disclosure="find_tools")
    try:
        reader = engines.keeper("acc-1", tenant="acme", granted=frozenset({"repo:read"}))
        answer = reader.find("merge the pull request into main")
        listed = reader.visible()
        writer = engines.keeper("acc-1", tenant="acme", granted=frozenset({"repo:write"}))
        found = writer.find("merge the pull request into main")
    finally:
        engines.close()
    named = [t["name"] for t in answer["tools"]] + [b["name"] for b in answer["blocked"]]
    assert "merge_pull_request" not in named and "merge_pull_request" not in str(answer)
    assert listed[0] == FIND_TOOLS and "merge_pull_request" not in listed
    assert "merge_pull_request" in [t["name"] for t in found["tools"]]


def test_find_tools_with_several_needs_names_no_tool_out_of_scope(tmp_path: Path) -> None:
    engines = _engines(tmp_path, disclosure="find_tools")
    needs = ["merge the pull request into main", "list the open pull requests"]
    try:
        reader = engines.keeper("acc-1", tenant="acme", granted=frozenset({"repo:read"}))
        answer = reader.find(needs)
        listed = reader.visible()
        disclosed = reader.engine.offered(reader.session)
        writer = engines.keeper(
            "acc-1", tenant="acme", granted=frozenset({"repo:read", "repo:write"})
        )
        found = writer.find(needs)
    finally:
        engines.close()
    assert [n["need"] for n in answer["needs"]] == needs
    assert "merge_pull_request" not in str(answer)  # for no need, found or blocked
    assert listed == (FIND_TOOLS, CALL_TOOL) and disclosed == {"list_pull_requests"}
    shown = [t["name"] for n in found["needs"] for t in n["tools"]]
    assert "merge_pull_request" in shown and len(shown) == len(set(shown))
