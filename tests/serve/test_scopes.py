"""Scopes through the service and the library: the same grant gives the same menu and code.

The deployment's ``connect_custom_domain`` requires ``domains:write``. For each grant (none
said, none, the scope, another one) a turn and a call check go through ``POST /v1/turns`` and
``POST /v1/calls/check`` with ``scopes``, and the same message and call through the library
(:meth:`Maitred.turn` / :meth:`Maitred.check` with a :class:`CallContext`) on a second engine
over the same files: what is exposed and the code must agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from maitred import ToolCall
from maitred.context import CallContext
from maitred.serve import Service, create_app, load_config, open_engine

from .deploy import DOMAIN_TEXT, auth, write_deployment

TOOL = "connect_custom_domain"
GRANTS: dict[str, list[str] | None] = {
    "not said": None,
    "nothing": [],
    "the scope": ["domains:write"],
    "another": ["domains:read"],
}


def _scoped(tmp_path: Path) -> Path:
    path = write_deployment(tmp_path)
    sidecar = tmp_path / "tools.maitred.yaml"
    text = sidecar.read_text(encoding="utf-8")
    sidecar.write_text(
        text.replace("    mutates: true\n", "    mutates: true\n    scopes: [domains:write]\n"),
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("grant", list(GRANTS))
def test_the_service_and_the_library_decide_scopes_alike(tmp_path: Path, grant: str) -> None:
    scopes = GRANTS[grant]
    config = load_config(_scoped(tmp_path))
    call = {"name": TOOL, "arguments": {"domain": "a.example"}}
    with_scopes: dict[str, Any] = {} if scopes is None else {"scopes": scopes}
    engine = open_engine(config)
    try:
        service = Service(engine, config.tenants, config.limits)
        with TestClient(create_app(service, config.limits)) as client:
            turn = {"text": DOMAIN_TEXT, "account": "acc-pro", "session_id": "s", **with_scopes}
            served = client.post("/v1/turns", json=turn, headers=auth("acme"))
            check = {"session_id": "s", "call": call, **with_scopes}
            checked = client.post("/v1/calls/check", json=check, headers=auth("acme"))
    finally:
        engine.close()
    assert served.status_code == 200 and checked.status_code == 200, checked.text

    context = CallContext(granted=None if scopes is None else frozenset(scopes))
    library = open_engine(config)
    try:
        session = library.session("acc-pro")
        exposed = library.turn(DOMAIN_TEXT, session=session, context=context).exposed
        decision = library.check(
            ToolCall(TOOL, call["arguments"]), session=session, context=context
        )
    finally:
        library.close()

    allowed = scopes is None or "domains:write" in scopes
    assert (TOOL in served.json()["exposed"]) == (TOOL in exposed) == allowed
    assert checked.json()["code"] == decision.code == ("OK" if allowed else "INSUFFICIENT_SCOPE")
    if not allowed:  # one rejection payload, with the decision id, naming the missing scope
        result = checked.json()["tool_result"]
        assert result["code"] == "INSUFFICIENT_SCOPE" and "domains:write" in result["message"]
        assert result["decision_id"] == checked.json()["decision_id"]
        blocked = {b["skill"]: b for b in served.json()["blocked"]}
        assert [p["predicate"] for p in blocked[TOOL]["predicates"]] == ["scopes"]


def test_scopes_that_are_not_scope_tokens_are_a_422_naming_the_field(tmp_path: Path) -> None:
    config = load_config(_scoped(tmp_path))
    engine = open_engine(config)
    try:
        service = Service(engine, config.tenants, config.limits)
        with TestClient(create_app(service, config.limits)) as client:
            bad = {"text": "x", "account": "acc-pro", "session_id": "s", "scopes": ["a b"]}
            answer = client.post("/v1/turns", json=bad, headers=auth("acme"))
            not_list = {**bad, "scopes": "domains:write"}
            other = client.post("/v1/turns", json=not_list, headers=auth("acme"))
    finally:
        engine.close()
    assert answer.status_code == 422 and answer.json()["error"]["field"] == "scopes[0]"
    assert other.status_code == 422 and other.json()["error"]["field"] == "scopes"


def test_require_scopes_makes_scopes_a_required_field_of_turns_and_checks(
    tmp_path: Path,
) -> None:
    config = load_config(write_deployment(tmp_path, require_scopes=True))
    assert config.require_scopes
    engine = open_engine(config)
    call = {"name": TOOL, "arguments": {"domain": "a.example"}}
    try:
        service = Service(engine, config.tenants, config.limits, require_scopes=True)
        with TestClient(create_app(service, config.limits)) as client:
            turn = {"text": DOMAIN_TEXT, "account": "acc-pro", "session_id": "s"}
            unsaid = client.post("/v1/turns", json=turn, headers=auth("acme"))
            said = client.post("/v1/turns", json={**turn, "scopes": []}, headers=auth("acme"))
            check = {"session_id": "s", "call": call}
            unsaid_check = client.post("/v1/calls/check", json=check, headers=auth("acme"))
            said_check = client.post(
                "/v1/calls/check", json={**check, "scopes": []}, headers=auth("acme")
            )
    finally:
        engine.close()
    for refused in (unsaid, unsaid_check):
        assert refused.status_code == 422 and refused.json()["error"]["field"] == "scopes"
        assert "require_scopes" in refused.json()["error"]["message"]
    assert said.status_code == 200 and said_check.status_code == 200
    assert said.json()["turn_id"]  # the refused turn logged nothing; this one is the offer


def test_require_scopes_and_the_clock_skew_are_checked_in_the_config(tmp_path: Path) -> None:
    from maitred.errors import ConfigError

    for name in "abc":
        (tmp_path / name).mkdir()
    with pytest.raises(ConfigError, match="'require_scopes' must be true or false"):
        load_config(write_deployment(tmp_path / "a", require_scopes="yes"))
    with pytest.raises(ConfigError, match="'state_clock_skew_s' must be a number"):
        load_config(write_deployment(tmp_path / "b", state_clock_skew_s=-1))
    skewed = load_config(write_deployment(tmp_path / "c", state_clock_skew_s=30))
    assert skewed.state_clock_skew_s == 30
