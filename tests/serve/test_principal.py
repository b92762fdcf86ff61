"""``maitred serve`` asks one conversation per request (issue 34, item 1): a check's logged
decision names the principal -- the tenant, the session's account and the subject of the
tenant's bearer token, named as the MCP gateway names a static token (never the token)."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from .deploy import DOMAIN_TEXT, TOKENS, auth, sha


def test_a_check_s_decision_names_the_tenant_account_and_token_subject(
    client: TestClient, deployment: Path
) -> None:
    seen: dict[str, dict[str, Any]] = {}
    for tenant, account in (("acme", "acc-pro"), ("globex", "glx-1")):
        body = {"text": DOMAIN_TEXT, "account": account, "session_id": f"s-{tenant}"}
        assert client.post("/v1/turns", json=body, headers=auth(tenant)).status_code == 200
        call = {"name": "list_domains", "arguments": {}, "id": "c-1"}
        check = {"session_id": f"s-{tenant}", "call": call}
        answer = client.post("/v1/calls/check", json=check, headers=auth(tenant))
        assert answer.status_code == 200
        seen[tenant] = answer.json()
    with closing(sqlite3.connect(deployment.parent / "log.sqlite")) as db:
        stored = dict(db.execute("SELECT decision_id, decision_json FROM action_decisions"))
    for tenant, account in (("acme", "acc-pro"), ("globex", "glx-1")):
        decision = seen[tenant]["decision"]
        subject = f"token:{sha(TOKENS[tenant])[:16]}"
        assert (decision["tenant"], decision["account"], decision["subject"]) == (
            tenant,
            account,
            subject,
        )
        assert TOKENS[tenant] not in json.dumps(decision)
        logged = json.loads(stored[seen[tenant]["decision_id"]])
        assert (logged["account"], logged["subject"]) == (account, subject)
