"""The promise through ``maitred mcp``: a fastmcp client -> the gateway -> a real upstream.

Each example writes a contract sidecar drawn from the predicate grammar for the recording
upstream of tests/mcp (``get_plan``, ``export_report``, ``upgrade``; ``upgrade`` mutates) and an
accounts file drawn from the typed fields, opens the gateway, lists the tools and calls each one
with valid arguments (and, in the full domain, one made-up name). Then:

* ``tools/list`` shows only tools the reference model finds executable for the account;
* a call reaches the upstream only if it was listed and the model allows it;
* a rejection never names a tool the session was not listed (besides the one called);
* every call has its decision in the log, and ``log verify`` passes.

Fewer examples than the library (each launches an upstream process): see conftest.py.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from maitred.log import open_log, verify

from . import spec
from .conftest import SOUNDNESS, examples

fastmcp = pytest.importorskip("fastmcp", reason="the MCP gateway needs the mcp extra")

UPSTREAM = Path(__file__).parents[1] / "mcp" / "upstream_server.py"
ARGS = {
    "get_plan": {"account": "acc-1"},
    "export_report": {"year": 2025},
    "upgrade": {"account": "acc-1", "plan": "team"},
}
MUTATES = {"upgrade"}
FIELDS = tuple(k for k in spec.FIELDS if k.startswith("account."))


@st.composite
def contracts(draw: st.DrawFn) -> spec.CatalogSpec:
    tools = []
    for name in ARGS:
        n = draw(st.integers(0, 2))
        preds = tuple(draw(spec.preds(f"{name}_stop_{i}", keys=FIELDS)) for i in range(n))
        tools.append(spec.ToolSpec(name, name in MUTATES, preds))
    return spec.CatalogSpec(tuple(tools))


@st.composite
def worlds(draw: st.DrawFn, *, untyped: bool, unknown: bool) -> spec.World:
    world = spec.World()
    exists = draw(st.booleans()) if unknown else True
    world.roots["acc-1"] = {"account"} if exists else set()
    world.accounts["acc-1"] = {
        k: draw(spec.raw_values(k, untyped=untyped)) for k in draw(st.sets(st.sampled_from(FIELDS)))
    }
    if exists:  # upgrade rewrites the plan: the upstream needs the account's record
        world.accounts["acc-1"].setdefault("account.plan", "free")
    return world


def _sidecar(catalog: spec.CatalogSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"tools": {}}
    for t in catalog.tools:
        entry: dict[str, Any] = {"mutates": t.mutates}
        if t.preds:
            entry["exit_predicates"] = [p.sidecar() for p in t.preds]
        out["tools"][t.name] = entry
    return out


def _site(root: Path, catalog: spec.CatalogSpec, world: spec.World) -> Path:
    accounts: dict[str, Any] = {}
    if world.roots["acc-1"]:
        accounts["acc-1"] = spec.tree_of(world.accounts["acc-1"], {"account"})
    (root / "accounts.json").write_text(json.dumps(accounts), encoding="utf-8")
    (root / "shop.maitred.yaml").write_text(yaml.safe_dump(_sidecar(catalog)), encoding="utf-8")
    config = {
        "account": "acc-1",
        "state": "accounts.json",
        "log": "gateway.sqlite",
        "upstreams": [
            {
                "name": "shop",
                "command": sys.executable,
                "args": [str(UPSTREAM)],
                "env": {
                    "CALLS_FILE": str(root / "calls.jsonl"),
                    "ACCOUNTS": str(root / "accounts.json"),
                },
                "contracts": "shop.maitred.yaml",
            }
        ],
    }
    path = root / "gateway.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _through_the_gateway(catalog: spec.CatalogSpec, world: spec.World, junk: bool) -> None:
    world = dataclasses.replace(world, typed=False)  # the gateway's JSON store declares no types
    from maitred.gateway import load_config
    from maitred.gateway.build import open_gateway

    with tempfile.TemporaryDirectory(prefix="maitred-soundness-mcp-") as tmp:
        root = Path(tmp)
        config = _site(root, catalog, world)
        calls = [*ARGS, *(["junk_mail"] if junk else [])]
        results: dict[str, Any] = {}

        async def main() -> list[str]:
            proxy, keeper = await open_gateway(load_config(config))
            try:
                async with fastmcp.Client(proxy) as client:
                    listed = [t.name for t in await client.list_tools()]
                    for name in calls:
                        results[name] = await client.call_tool(
                            name, ARGS.get(name, {}), raise_on_error=False
                        )
                    return listed
            finally:
                keeper.close()

        listed = anyio.run(main)
        tools = catalog.by_name()
        wrong = [t for t in listed if t in tools and not spec.executable(tools[t], "acc-1", world)]
        assert not wrong, f"tools/list showed {wrong}, which cannot run for acc-1 now"
        reached = _reached(root / "calls.jsonl")
        for name in reached:
            assert name in listed and spec.executable(tools[name], "acc-1", world), (
                f"{name} reached the upstream; the model refuses it"
            )
        for name, result in results.items():
            if name in reached:
                continue
            said = " ".join(getattr(c, "text", "") for c in result.content)
            leaked = {t for t in tools if t in said} - set(listed) - {name}
            assert not leaked, f"the rejection of {name} names unlisted {leaked}: {said}"
        with open_log(root / "gateway.sqlite", read_only=True) as log:
            decided = [r["tool"] for r in log.iter_action_decisions()]
            assert sorted(decided) == sorted(calls), decided
            report = verify(log)
            assert report.ok, report.mismatches


def _reached(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [json.loads(line)["name"] for line in path.read_text(encoding="utf-8").splitlines()]


MCP = settings(SOUNDNESS, max_examples=examples(0.02, floor=4))


@MCP
@given(catalog=contracts(), world=worlds(untyped=False, unknown=False))
def test_the_core_promise_holds_through_the_mcp_gateway(
    catalog: spec.CatalogSpec, world: spec.World
) -> None:
    """Typed values of an existing account: listing, calls and the log keep the promise."""
    _through_the_gateway(catalog, world, junk=False)


@MCP
@given(catalog=contracts(), world=worlds(untyped=True, unknown=True))
def test_the_whole_promise_holds_through_the_mcp_gateway(
    catalog: spec.CatalogSpec, world: spec.World
) -> None:
    """Untyped values (SQLite-style 0/1, junk of the wrong kind, in an ``accounts.json`` with no
    ``$types``), an account that may not exist, and a call to a made-up tool name."""
    _through_the_gateway(catalog, world, junk=True)


def test_an_untyped_value_of_the_wrong_kind_hides_the_tool_through_the_gateway() -> None:
    """The counterexample the 10,000-example run of the test above found: ``accounts.json``
    has no ``$types`` and stores the plan as ``0``; ``account.plan == "free"`` was quietly
    false (CEL's equality across types), so the gateway listed the mutating ``upgrade``. The
    value does not fit the expression: an evaluation error, and the tool is hidden."""
    on_free = spec.Pred("on_free", "eq", "account.plan", "free")
    catalog = spec.CatalogSpec(
        (
            spec.ToolSpec("get_plan", False, ()),
            spec.ToolSpec("export_report", False, ()),
            spec.ToolSpec("upgrade", True, (on_free,)),
        )
    )
    world = spec.World()
    world.roots["acc-1"] = {"account"}
    world.accounts["acc-1"] = {"account.plan": 0}
    _through_the_gateway(catalog, world, junk=False)


def test_defect_6_a_gateway_rejection_never_names_a_hidden_tool() -> None:
    """defect 6 through MCP: export_report is hidden (free plan); a call to a made-up name
    must not name it to the model."""
    hidden = spec.Pred("on_free", "eq", "account.plan", "free")
    catalog = spec.CatalogSpec(
        (
            spec.ToolSpec("get_plan", False, ()),
            spec.ToolSpec("export_report", False, (hidden,)),
            spec.ToolSpec("upgrade", True, ()),
        )
    )
    world = spec.World()
    world.roots["acc-1"] = {"account"}
    world.accounts["acc-1"] = {"account.plan": "free"}
    _through_the_gateway(catalog, world, junk=True)
