"""The promise through the HTTP service (see :mod:`tests.soundness.service_machine`), and the
minimal counterexamples found there, kept as named regression tests."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

pytest.importorskip("starlette", reason="needs the serve extra: pip install 'maitred[serve]'")

from starlette.testclient import TestClient

from maitred import Maitred
from maitred.serve import Service, create_app

from . import spec
from .conftest import SOUNDNESS, examples
from .harness import Store, names_in, refusing_commits
from .machine import OPTIONS
from .service_machine import (
    LIMITS,
    CoreServiceMachine,
    FullServiceMachine,
    OddServiceMachine,
    auth,
    tenants,
)

HTTP_SHARE = 0.4


def test_the_core_promise_holds_over_http() -> None:
    """Two tenants, turns, calls (some whose commit fails), reloads and restarts over HTTP."""
    run_state_machine_as_test(
        CoreServiceMachine, settings=settings(SOUNDNESS, max_examples=examples(HTTP_SHARE))
    )


def test_the_whole_promise_holds_over_http() -> None:
    """The same with failed turn commits, calls to unknown tools, cross-tenant run ids and
    untyped values."""
    run_state_machine_as_test(
        FullServiceMachine, settings=settings(SOUNDNESS, max_examples=examples(HTTP_SHARE))
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_odd_bytes_over_http_are_a_4xx_alone_or_stored_exactly(
    request: pytest.FixtureRequest, backend: str
) -> None:
    """Issue 27 over HTTP, on SQLite and on PostgreSQL: turns and checks whose text, session
    id, account, tool name or arguments hold NULs, lone surrogates, 4-byte characters or long
    runs, among the other tenant's ordinary traffic and restarts: a 4xx (never 413 or 5xx) for
    what cannot be held, else 200 and stored exactly; every other decision stays on record."""
    server = request.getfixturevalue("pg_server") if backend == "postgres" else None
    seen: Counter[str] = Counter()
    machine = type(
        "OddHttpOn" + backend.title(), (OddServiceMachine,), {"postgres": server, "seen": seen}
    )
    run_state_machine_as_test(
        machine, settings=settings(SOUNDNESS, max_examples=examples(HTTP_SHARE))
    )
    wanted = {
        "turn refused",
        "turn stored",
        "4-byte characters stored",
        "call refused",
        "call stored",
    }
    assert wanted <= set(seen), f"the odd rule never reached {wanted - set(seen)}: {seen}"


# -- minimal counterexamples ------------------------------------------------------------------

PAID = spec.Pred("on_free", "eq", "account.plan", "free")
SHOP = spec.CatalogSpec(
    (spec.ToolSpec("deploy_site", True, (PAID,)), spec.ToolSpec("export_ledger", False, ()))
)


def _client(tmp: Path, world: spec.World) -> tuple[TestClient, Service]:
    tools = spec.write_catalog(tmp / "catalog", SHOP)
    engine = Maitred.open(
        [str(tools)], Store(world), OPTIONS, log=str(tmp / "log.sqlite"), cache_dir=tmp / "cache"
    )
    service = Service(engine, tenants(), LIMITS)
    return TestClient(create_app(service, LIMITS), raise_server_exceptions=False), service


def _world(plan: str) -> spec.World:
    world = spec.World()
    for account in ("acc-a", "eu-1"):
        world.roots[account] = {"account"}
        world.accounts[account] = {"account.plan": plan}
    return world


def _turn(client: TestClient, sid: str = "s1", tenant: str = "acme", account: str = "acc-a"):  # type: ignore[no-untyped-def]
    body = {"text": spec.message_for(SHOP), "account": account, "session_id": sid}
    return client.post("/v1/turns", json=body, headers=auth(tenant))


def _check(client: TestClient, name: str, sid: str = "s1", tenant: str = "acme"):  # type: ignore[no-untyped-def]
    body = {"session_id": sid, "call": {"name": name, "arguments": {"n": 0}, "id": "c1"}}
    return client.post("/v1/calls/check", json=body, headers=auth(tenant))


def test_defect_4_a_turn_whose_commit_failed_never_becomes_the_offer(tmp_path: Path) -> None:
    """defect 4: free plan -> turn 1 offers export_ledger only; the plan becomes paid; turn 2's
    commit fails (503); deploy_site, never shown, must still be TOOL_NOT_OFFERED."""
    world = _world("free")
    client, service = _client(tmp_path, world)
    with client:
        assert _turn(client).json()["exposed"] == ["export_ledger"]
        world.accounts["acc-a"]["account.plan"] = "pro"
        service.engine.provider.refresh()  # type: ignore[attr-defined]
        with refusing_commits(tmp_path / "log.sqlite"):
            assert _turn(client).status_code == 503
        decision = _check(client, "deploy_site").json()
        assert (decision["allow"], decision["code"]) == (False, "TOOL_NOT_OFFERED")


def test_defect_5_a_tenant_whose_name_is_a_prefix_cannot_read_the_other_s_runs(
    tmp_path: Path,
) -> None:
    """defect 5: 'acme' is a prefix of 'acme-eu'; acme's token must not open acme-eu's run."""
    client, service = _client(tmp_path, _world("pro"))
    with client:
        assert _turn(client, tenant="acme-eu", account="eu-1").status_code == 200
        run = service.run_ids["acme-eu"]
        r = client.get("/v1/funnel", params={"run_id": run}, headers=auth("acme"))
        assert r.status_code == 404, r.text


def test_defect_6_an_http_rejection_never_names_a_hidden_tool(tmp_path: Path) -> None:
    """defect 6: deploy_site is hidden (free plan); a call to a made-up name must not name it."""
    client, _ = _client(tmp_path, _world("free"))
    with client:
        assert _turn(client).json()["exposed"] == ["export_ledger"]
        out = _check(client, "junk_mail").json()
        said = f"{out['message_for_model']}\n{json.dumps(out['tool_result'])}"
        assert out["code"] == "TOOL_UNKNOWN"
        assert names_in(said, SHOP.names) <= {"export_ledger"}


def _edge(why: str, body: str) -> object:
    return pytest.param(body, id=why)


_CALL = '{"session_id": "s1", "call": {"name": "export_ledger", "arguments": {"n": %s}}}'
EDGES = [
    _edge(
        "JSON nested 1,100 deep is a 500 RecursionError",
        '{"session_id": "s1", "call": {"name": "export_ledger", "arguments": '
        + '{"a": ' * 1100
        + "1"
        + "}" * 1100
        + "}}",
    ),
    _edge(
        "a lone surrogate in call.name is a 500 UnicodeEncodeError",
        '{"session_id": "s1", "call": {"name": "\\ud800", "arguments": {}}}',
    ),
    _edge("a lone surrogate in an argument is a 500", _CALL % '"\\udfff"'),
    _edge("NaN in an argument is a 503 engine_unavailable", _CALL % "NaN"),
    _edge("1e400 in an argument is a 503 engine_unavailable", _CALL % "1e400"),
    _edge(
        "duplicate JSON keys are accepted",
        '{"session_id": "s1", "call": {"name": "export_ledger", "name": "export_ledger", '
        '"arguments": {"n": 0}}}',
    ),
]


@pytest.mark.parametrize("body", EDGES)
def test_bad_input_to_a_check_is_a_4xx_and_decides_nothing(tmp_path: Path, body: str) -> None:
    """issue 16 item 7: a client's error is a 4xx, never a 500 or 503 (no decision logged)."""
    client, service = _client(tmp_path, _world("pro"))
    with client:
        assert _turn(client).status_code == 200
        r = client.post(
            "/v1/calls/check",
            content=body.encode("utf-8", "surrogatepass"),
            headers={**auth("acme"), "Content-Type": "application/json"},
        )
        assert 400 <= r.status_code < 500, (r.status_code, r.text[:300])
        assert service.engine.log is not None
        assert list(service.engine.log.iter_action_decisions()) == []
