"""Agent Skills served by the gateway over the skills extension, gated by their contracts.

The gateway fronts the library server (``library_server.py``, a real MCP server over stdio) and
serves two skill folders of its own (``skills:`` in its config): ``handbook-tour`` (its
``maitred.yaml`` has no exit predicate) and ``price-negotiation`` (hidden on the free plan).
The client is a real ``fastmcp.Client`` in memory: on a 2026-07-28 connection with the skills
extension declared (``skills/list``, ``skills/get``, ``read_skill``, which checks every file
against the manifest's digests), and on a handshake-era connection, where the skills are
ordinary ``skill://`` resources.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import mcp_types as mt
import pytest
from fastmcp import Client
from fastmcp.skills import SkillsClientExtension
from mcp.shared.exceptions import MCPError
from tests.mcp.test_surfaces import Library, library_at

from maitred.errors import ConfigError
from maitred.gateway import load_config
from maitred.gateway.build import gate_of, open_gateway
from maitred.gateway.server import GateMiddleware
from maitred.log.base import open_log
from maitred.log.verify import verify

TOUR = "skill://handbook-tour/SKILL.md"
NEGOTIATION = "skill://price-negotiation/SKILL.md"
HIDDEN_SIDECAR = """\
exit_predicates:
  - name: free_plan
    expr: account.plan == "free"
    reads: [account.plan]
    message: Negotiating prices is for paid plans.
"""


def _skill(root: Path, name: str, description: str, sidecar: str) -> None:
    folder = root / "skills" / name
    (folder / "references").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\nlicense: MIT\n---\n# {name}\n\n"
        "Read references/GUIDE.md first.\n",
        encoding="utf-8",
    )
    (folder / "references" / "GUIDE.md").write_text(f"The {name} guide.\n", encoding="utf-8")
    (folder / "maitred.yaml").write_text(sidecar, encoding="utf-8")


@pytest.fixture
def site(tmp_path: Path) -> Library:
    _skill(tmp_path, "handbook-tour", "Walk a new hire through the handbook.", "cost: 1\n")
    _skill(tmp_path, "price-negotiation", "Negotiate a price with a customer.", HIDDEN_SIDECAR)
    return library_at(tmp_path, extra="skills: [skills]\n")


def serve(site: Library, scenario: Any, *, mode: str = "auto") -> None:
    """Run ``scenario(client, gate)`` against ``site``'s gateway, in memory."""
    import anyio

    async def main() -> None:
        server, engines = await open_gateway(load_config(site.config))
        extensions = [SkillsClientExtension()] if mode != "legacy" else None
        try:
            async with Client(server, mode=mode, extensions=extensions) as client:  # type: ignore[arg-type]
                await scenario(client, gate_of(server))
        finally:
            engines.close()

    anyio.run(main)


async def _refused(request: Any) -> dict[str, Any]:
    with pytest.raises(MCPError) as raised:
        await request
    assert raised.value.error.code == mt.INVALID_PARAMS
    data = raised.value.error.data
    assert isinstance(data, dict) and data["message"] == raised.value.error.message
    return data


def test_a_hidden_skill_is_not_listed_and_skills_get_refuses_it_like_no_skill_at_all(
    site: Library,
) -> None:
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any], gate: GateMiddleware) -> None:
        listed = await client.list_skills_mcp()
        got["listed"] = [s.uri for s in listed.skills]
        got["cache"] = (listed.cache_scope, listed.ttl_ms)
        got["hidden"] = await _refused(client.get_skill_mcp(NEGOTIATION))
        got["unknown"] = await _refused(client.get_skill_mcp("skill://no-such/SKILL.md"))
        got["read"] = await _refused(client.read_resource_mcp(NEGOTIATION))
        tour = await client.read_skill(TOUR)  # skills/get, then every file checked by digest
        got["tour"] = sorted(tour.files)
        entry = await client.get_skill_mcp(TOUR)
        got["entry"] = (entry.skill.frontmatter.root, entry.meta or {})
        sample = gate.metrics.registry.get_sample_value
        got["counted"] = sample(
            "maitred_gateway_surface_requests_total",
            {"method": "skills/get", "code": "SKILL_NOT_AVAILABLE"},
        )

    serve(site, scenario)
    assert got["listed"] == [TOUR]
    assert got["cache"] == ("private", 0)
    hidden, unknown = got["hidden"], got["unknown"]
    assert hidden["code"] == unknown["code"] == "SKILL_NOT_AVAILABLE"
    assert hidden["message"] == unknown["message"]  # a hidden skill is no skill at all
    assert "negotiation" not in hidden["message"] and "paid" not in hidden["message"]
    assert got["read"]["code"] == "RESOURCE_NOT_AVAILABLE"  # its files are gated too
    assert got["tour"] == ["SKILL.md", "references/GUIDE.md"]  # maitred.yaml is not served
    frontmatter, meta = got["entry"]
    assert frontmatter == {
        "name": "handbook-tour",
        "description": "Walk a new hire through the handbook.",
        "license": "MIT",
    }
    assert got["counted"] == 2.0
    logged = site.decisions()
    row = logged[hidden["decision_id"]]
    assert row["call"]["name"] == "skills/get"
    assert row["call"]["arguments"] == {"uri": NEGOTIATION}
    assert (row["verdict"], row["code"]) == ("reject", "SKILL_NOT_AVAILABLE")
    assert [o["predicate"] for o in row["outcomes"]] == ["free_plan"]  # why, for people
    assert logged[unknown["decision_id"]]["code"] == "SKILL_NOT_AVAILABLE"
    assert logged[meta["maitred/decision_id"]]["verdict"] == "allow"
    with open_log(str(site.root / "gateway.sqlite")) as log:
        assert verify(log).ok


def test_a_skill_the_session_was_shown_is_refused_with_its_reason_when_the_state_changes(
    site: Library,
) -> None:
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any], gate: GateMiddleware) -> None:
        site.set_plan("pro")  # every listing and get reads the state afresh
        got["pro"] = [s.uri for s in await client.list_skills()]
        got["entry"] = (await client.get_skill(NEGOTIATION)).uri
        site.set_plan("free")
        got["refused"] = await _refused(client.get_skill_mcp(NEGOTIATION))

    serve(site, scenario)
    assert got["pro"] == [TOUR, NEGOTIATION] and got["entry"] == NEGOTIATION
    refused = got["refused"]
    assert refused["code"] == "SKILL_NOT_AVAILABLE"
    assert "Negotiating prices is for paid plans." in refused["message"]  # it was shown


def test_a_handshake_era_client_sees_skill_files_as_resources_gated_the_same(
    site: Library,
) -> None:
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any], gate: GateMiddleware) -> None:
        got["version"] = client.protocol_version
        got["uris"] = sorted(str(r.uri) for r in await client.list_resources())
        got["refused"] = await _refused(
            client.read_resource_mcp("skill://price-negotiation/references/GUIDE.md")
        )
        read = await client.read_resource_mcp("skill://handbook-tour/references/GUIDE.md")
        got["guide"] = read.contents[0].text  # type: ignore[union-attr]

    serve(site, scenario, mode="legacy")
    assert got["version"] not in ("2026-07-28",)
    skill_files = [u for u in got["uris"] if u.startswith("skill://")]
    assert skill_files and all(u.startswith("skill://handbook-tour/") for u in skill_files)
    assert "skill://handbook-tour/references/GUIDE.md" in skill_files
    assert got["refused"]["code"] == "RESOURCE_NOT_AVAILABLE"
    assert got["guide"] == "The handbook-tour guide.\n"


def test_a_broken_skill_contract_stops_the_start_naming_its_file(site: Library) -> None:
    sidecar = site.root / "skills" / "price-negotiation" / "maitred.yaml"
    sidecar.write_text("exit_predicates:\n  - name: x\n    expr: account.plan ==\n", "utf-8")
    import anyio

    with pytest.raises(ConfigError) as raised:
        anyio.run(open_gateway, load_config(site.config))
    assert "field 'skills'" in str(raised.value) and "maitred.yaml" in str(raised.value)


def test_a_skills_entry_that_is_not_a_folder_is_a_config_error(site: Library) -> None:
    text = site.config.read_text(encoding="utf-8").replace("skills: [skills]", "skills: [nope]")
    site.config.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"skills\[0\]"):
        load_config(site.config)


GUIDES = Path(__file__).with_name("skills_server.py")
UPSTREAM_SIDECAR = """\
tools:
  ping: {}
resources:
  skill://open-guide/SKILL.md: {}
  skill://paid-guide/SKILL.md:
    exit_predicates:
      - name: free_plan
        expr: account.plan == "free"
        reads: [account.plan]
"""


def test_an_upstreams_skills_pass_through_gated_by_its_sidecar(tmp_path: Path) -> None:
    for name in ("open-guide", "paid-guide", "stray-guide"):  # stray-guide: no sidecar entry
        _skill(tmp_path / "upstream", name, f"The {name}.", "")
        (tmp_path / "upstream" / "skills" / name / "maitred.yaml").unlink()
    env = {"SKILLS_DIR": str(tmp_path / "upstream" / "skills"), "CALLS_FILE": str(tmp_path / "c")}
    (tmp_path / "guides.maitred.yaml").write_text(UPSTREAM_SIDECAR, encoding="utf-8")
    (tmp_path / "gateway.yaml").write_text(
        "account: acc-1\nstate: accounts.json\nlog: gateway.sqlite\nupstreams:\n"
        f"  - name: guides\n    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(GUIDES))}]\n    env: {json.dumps(env)}\n"
        "    contracts: guides.maitred.yaml\n",
        encoding="utf-8",
    )
    site = Library(tmp_path, tmp_path / "gateway.yaml")
    site.set_plan("free")
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any], gate: GateMiddleware) -> None:
        got["free"] = [s.uri for s in await client.list_skills()]
        got["paid"] = await _refused(client.get_skill_mcp("skill://paid-guide/SKILL.md"))
        got["stray"] = await _refused(client.get_skill_mcp("skill://stray-guide/SKILL.md"))
        got["file"] = await _refused(
            client.read_resource_mcp("skill://paid-guide/references/GUIDE.md")
        )
        got["open"] = sorted((await client.read_skill("skill://open-guide/SKILL.md")).files)
        site.set_plan("pro")
        got["pro"] = [s.uri for s in await client.list_skills()]

    serve(site, scenario)
    assert got["free"] == ["skill://open-guide/SKILL.md"]
    assert got["paid"]["code"] == got["stray"]["code"] == "SKILL_NOT_AVAILABLE"
    assert got["paid"]["message"] == got["stray"]["message"]
    assert got["file"]["code"] == "RESOURCE_NOT_AVAILABLE"  # the entry governs its folder
    assert got["open"] == ["SKILL.md", "references/GUIDE.md"]
    assert got["pro"] == ["skill://open-guide/SKILL.md", "skill://paid-guide/SKILL.md"]
    reads = (tmp_path / "c").read_text(encoding="utf-8")
    assert "paid-guide" not in reads and "open-guide/SKILL.md" in reads  # refused: never asked
