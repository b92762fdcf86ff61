"""``POST /v1/calls/check`` on a call that needs a person's yes: a refusal the caller acts on."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from maitred.serve import Service, create_app, load_config, open_engine

from .deploy import auth, write_deployment


def test_the_service_check_refuses_with_approval_required(tmp_path: Path) -> None:
    config_path = write_deployment(tmp_path)
    sidecar = (tmp_path / "tools.maitred.yaml").read_text(encoding="utf-8")
    sidecar = sidecar.replace(
        "  list_domains: {}",
        "    policies:\n"
        "      - name: a_person_connects_domains\n"
        "        approve: true\n"
        "        message: A person connects domains.\n"
        "  list_domains: {}",
    )
    (tmp_path / "tools.maitred.yaml").write_text(sidecar, encoding="utf-8")
    config = load_config(config_path)
    engine = open_engine(config)
    try:
        service = Service(engine, config.tenants, config.limits)
        with TestClient(create_app(service, config.limits)) as client:
            body = {"text": "connect my custom domain", "account": "acc-pro", "session_id": "s"}
            assert client.post("/v1/turns", json=body, headers=auth("acme")).status_code == 200
            check = {
                "session_id": "s",
                "call": {"name": "connect_custom_domain", "arguments": {"domain": "a.example"}},
            }
            got = client.post("/v1/calls/check", json=check, headers=auth("acme")).json()
    finally:
        engine.close()
    assert (got["allow"], got["code"]) == (False, "APPROVAL_REQUIRED")
    assert got["tool_result"]["code"] == "APPROVAL_REQUIRED"
    assert got["decision"]["approval_message"] == "A person connects domains."
