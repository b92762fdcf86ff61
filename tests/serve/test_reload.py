"""Hot reload of the catalog files: a valid change is swapped in whole, an invalid one is
refused with the old set kept, and requests never go without a policy set meanwhile."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from maitred.errors import ConfigError
from maitred.serve import (
    Reloader,
    Service,
    create_app,
    load_config,
    open_engine,
    parse_config,
)
from maitred.serve.reload import fingerprint

from .deploy import DOMAIN_TEXT, SIDECAR, auth, logged_turns, write_deployment

# connect_custom_domain is now withheld from every account that has a plan at all
HIDING = SIDECAR.replace('expr: account.plan == "free"', 'expr: account.plan != "none"')
BROKEN = SIDECAR.replace("mutates: true", "mutates: maybe")


@pytest.fixture
def reloader(service: Service, deployment: Path) -> Reloader:
    return Reloader(service, load_config(deployment))


@pytest.fixture
def client(service: Service, deployment: Path) -> Iterator[TestClient]:
    # no reloader in the app: each test drives reloader.check() itself
    with TestClient(create_app(service, load_config(deployment).limits)) as tc:
        yield tc


def _write_sidecar(root: Path, text: str, tick: list[int] = [0]) -> None:  # noqa: B006
    """Write the sidecar with a modification time no earlier write had (coarse clocks)."""
    path = root / "tools.maitred.yaml"
    path.write_text(text, encoding="utf-8")
    tick[0] += 1
    stamp = path.stat().st_mtime + 10 * tick[0]
    os.utime(path, (stamp, stamp))


def _post_turn(client: TestClient, session: str, account: str = "acc-pro") -> tuple[int, Any]:
    body = {"text": DOMAIN_TEXT, "account": account, "session_id": session}
    r = client.post("/v1/turns", json=body, headers=auth("acme"))
    return r.status_code, r.json()


def _turn(client: TestClient, session: str, account: str = "acc-pro") -> dict[str, Any]:
    status, body = _post_turn(client, session, account)
    assert status == 200
    return dict(body)


def _check(client: TestClient, session: str, name: str) -> dict[str, object]:
    args = {"domain": "example.com"} if name.startswith("connect") else {}
    call = {"name": name, "arguments": args, "id": "c1"}
    r = client.post(
        "/v1/calls/check", json={"session_id": session, "call": call}, headers=auth("acme")
    )
    assert r.status_code == 200
    return dict(r.json())


def _reloads(client: TestClient, outcome: str) -> float:
    text = client.get("/metrics").text
    line = f'maitred_reloads_total{{outcome="{outcome}"}} '
    [value] = [ln.removeprefix(line) for ln in text.splitlines() if ln.startswith(line)]
    return float(value)


def _reload_detail(client: TestClient) -> str:
    body = client.get("/readyz").json()
    assert body["ready"] is True
    return str(body["checks"]["catalog"]["detail"])


def test_a_sidecar_caught_half_written_is_not_read_until_it_holds_still(
    client: TestClient,
    reloader: Reloader,
    service: Service,
    deployment: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A file rewritten in place is empty between its truncation and the writer's last byte,
    and an empty sidecar is a valid one without rules. Found by the fault test under load (a
    reload "applied" while the broken sidecar was being written): such a moment is never
    read; the change is taken once it holds still, whole."""
    import maitred.serve.reload as reload_module

    old_version = service.engine.catalog.version
    _write_sidecar(deployment.parent, "")  # truncated: the writer has not written yet
    writes = iter([HIDING])

    def writer_finishes(seconds: float) -> None:  # the settle wait: the writer goes on
        if (text := next(writes, None)) is not None:
            _write_sidecar(deployment.parent, text)

    monkeypatch.setattr(reload_module.time, "sleep", writer_finishes)
    assert reloader.check() is None  # it moved while settling: not read
    assert service.engine.catalog.version == old_version
    assert reloader.check() == "applied"  # the whole file, once still
    assert [b["skill"] for b in _turn(client, "s-1")["blocked"]] == ["connect_custom_domain"]
    assert (_reloads(client, "applied"), _reloads(client, "rejected")) == (1, 0)


def test_nothing_changed_means_no_reload(client: TestClient, reloader: Reloader) -> None:
    assert reloader.check() is None
    assert (_reloads(client, "applied"), _reloads(client, "rejected")) == (0, 0)


def test_a_valid_sidecar_change_is_applied_and_hides_the_tool(
    client: TestClient, reloader: Reloader, service: Service, deployment: Path
) -> None:
    old_version = service.engine.catalog.version
    assert "connect_custom_domain" in _turn(client, "s-1")["exposed"]
    _write_sidecar(deployment.parent, HIDING)
    assert reloader.check() == "applied"
    new_version = service.engine.catalog.version
    assert new_version != old_version
    turn = _turn(client, "s-1")
    assert turn["exposed"] == ["list_domains"]
    assert [b["skill"] for b in turn["blocked"]] == ["connect_custom_domain"]
    assert _reloads(client, "applied") == 1
    assert _reload_detail(client) == f"2 skills and tools, live catalog version {new_version}"
    assert f'maitred_catalog_info{{version="{new_version}"}} 1.0' in client.get("/metrics").text
    assert old_version not in client.get("/metrics").text
    # the same run continues in the same log: both turns are there, under one run id
    assert logged_turns(deployment.parent) == 2
    assert turn["turn_id"].startswith(service.run_ids["acme"] + "/")


def test_an_invalid_sidecar_is_rejected_the_old_set_kept_and_a_fix_applied(
    client: TestClient,
    reloader: Reloader,
    service: Service,
    deployment: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    before = _turn(client, "s-1", "acc-free")
    version = service.engine.catalog.version
    _write_sidecar(deployment.parent, BROKEN)
    with caplog.at_level(logging.ERROR, logger="maitred.serve"):
        assert reloader.check() == "rejected"
    [line] = [r.getMessage() for r in caplog.records if r.name == "maitred.serve"]
    assert "tools.maitred.yaml" in line and "mutates" in line
    assert reloader.check() is None  # the same broken files are not retried every tick
    assert service.engine.catalog.version == version
    after = _turn(client, "s-1", "acc-free")
    assert (after["exposed"], after["blocked"]) == (before["exposed"], before["blocked"])
    # calls are still checked with the old rules: the free plan's tool is not offered
    assert _check(client, "s-1", "connect_custom_domain")["code"] == "TOOL_NOT_OFFERED"
    assert _reloads(client, "rejected") == 1
    detail = _reload_detail(client)
    assert "last reload rejected" in detail and "tools.maitred.yaml" in detail
    assert "mutates" in detail
    _write_sidecar(deployment.parent, HIDING)
    assert reloader.check() == "applied"
    assert "rejected" not in _reload_detail(client)
    assert _turn(client, "s-2")["exposed"] == ["list_domains"]


def test_a_session_survives_a_reload_and_a_removed_tool_becomes_unknown(
    client: TestClient, reloader: Reloader, deployment: Path
) -> None:
    assert "connect_custom_domain" in _turn(client, "s-1")["exposed"]
    tools = deployment.parent / "tools.json"
    tools.write_text(tools.read_text().replace("connect_custom_domain", "attach_domain"))
    _write_sidecar(deployment.parent, SIDECAR.replace("connect_custom_domain", "attach_domain"))
    assert reloader.check() == "applied"
    assert _check(client, "s-1", "connect_custom_domain")["code"] == "TOOL_UNKNOWN"
    kept = _check(client, "s-1", "list_domains")
    assert (kept["allow"], kept["code"]) == (True, "OK")


def test_requests_during_reloads_are_all_served_with_a_policy_set(
    client: TestClient, reloader: Reloader, deployment: Path
) -> None:
    stop = threading.Event()
    outcomes: list[str | None] = []

    def churn() -> None:  # valid, invalid, valid... while the requests run
        texts = [HIDING, BROKEN, SIDECAR]
        i = 0
        while not stop.is_set():
            _write_sidecar(deployment.parent, texts[i % 3])
            outcomes.append(reloader.check())
            i += 1

    def one(i: int) -> tuple[int, list[str]]:
        status, body = _post_turn(client, f"s-{i % 4}")
        return status, body.get("exposed", [])

    worker = threading.Thread(target=churn)
    worker.start()
    try:
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(one, range(60)))
    finally:
        stop.set()
        worker.join()
    assert {status for status, _ in results} == {200}
    # every answer came from a whole policy set: the old one or the hiding one
    assert all("list_domains" in exposed for _, exposed in results)
    assert {"applied", "rejected"} <= set(outcomes)


def test_the_reload_interval_is_read_and_checked() -> None:
    base = {"catalogs": ["t.json"], "state": "x.json", "tenants": {}}
    tenants = {"a": {"token_sha256": "0" * 64, "accounts": ["x"]}}
    config = parse_config({**base, "tenants": tenants, "reload": {"interval_s": 0.5}}, "s.yaml")
    assert config.reload_interval_s == 0.5
    assert parse_config({**base, "tenants": tenants}, "s.yaml").reload_interval_s == 2.0
    with pytest.raises(ConfigError, match=r"s.yaml: field 'reload.interval_s'.*positive"):
        parse_config({**base, "tenants": tenants, "reload": {"interval_s": 0}}, "s.yaml")
    with pytest.raises(ConfigError, match=r"'reload.every'.*not a known field"):
        parse_config({**base, "tenants": tenants, "reload": {"every": 1}}, "s.yaml")


def test_the_app_polls_while_it_runs(service: Service, deployment: Path) -> None:
    config = load_config(deployment)
    fast = Reloader(service, dataclasses.replace(config, reload_interval_s=0.01))
    with TestClient(create_app(service, config.limits, reloader=fast)) as tc:
        _write_sidecar(deployment.parent, HIDING)
        for _ in range(500):  # bounded: at most a few seconds
            if _reloads(tc, "applied") == 1:
                break
            threading.Event().wait(0.01)
        assert _reloads(tc, "applied") == 1
    assert fast._thread is None  # stopped with the app


def test_skill_folders_are_watched_by_their_skill_and_contract_files(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    (skills / "a" / "scripts").mkdir(parents=True)
    (skills / "a" / "SKILL.md").write_text("x")
    (skills / "a" / "scripts" / "run.py").write_text("x")  # not part of the catalog
    before = fingerprint([str(skills), str(tmp_path / "tools.json")])
    assert set(before) == {str(skills / "a" / "SKILL.md")}
    (skills / "b").mkdir()
    (skills / "b" / "SKILL.md").write_text("y")
    (skills / "a" / "maitred.yaml").write_text("z")
    (tmp_path / "tools.maitred.yaml").write_text("tools: {}")
    after = fingerprint([str(skills), str(tmp_path / "tools.json")])
    assert set(after) - set(before) == {
        str(skills / "b" / "SKILL.md"),
        str(skills / "a" / "maitred.yaml"),
        str(tmp_path / "tools.maitred.yaml"),
    }


def test_a_change_lenient_loading_would_skip_is_refused_not_dropped(tmp_path: Path) -> None:
    # with a second tools file, a lenient load would skip the broken one and serve the rest:
    # a reload must refuse instead of silently withdrawing its tools
    extra = {"tools": [{"name": "ping", "description": "Ping the website.", "inputSchema": {}}]}
    (tmp_path / "extra.json").write_text(json.dumps(extra), encoding="utf-8")
    config = load_config(write_deployment(tmp_path, catalogs=["tools.json", "extra.json"]))
    engine = open_engine(config)
    try:
        service = Service(engine, config.tenants, config.limits)
        names = set(service.engine.catalog.names)
        reloader = Reloader(service, config)
        _write_sidecar(tmp_path, BROKEN)
        assert reloader.check() == "rejected"
        assert set(service.engine.catalog.names) == names
    finally:
        engine.close()
