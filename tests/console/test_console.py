"""The console's pages and their JSON twins, in process (Starlette's test client): the
filters, keyset pages, one decision with its chain checks, the what-if turn (never logged),
verify, and who may look."""

from __future__ import annotations

import hashlib
import sqlite3
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from maitred.console import Access, create_console
from maitred.errors import ConfigError
from maitred.log import open_log
from maitred.serve import load_config

from .conftest import Made

SECRET = "operator-secret-token"
JSON = {"Accept": "application/json"}


def sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _ids(client: TestClient, url: str) -> list[str]:
    r = client.get(url, headers=JSON)
    assert r.status_code == 200, r.text
    return [d["decision_id"] for d in r.json()["decisions"]]


def test_the_decisions_twin_lists_an_accounts_decisions_with_ids(
    console: TestClient, made: Made
) -> None:
    data = console.get("/decisions?account=acc-free", headers=JSON).json()
    assert data["filter"] == {"account": "acc-free", "limit": 50}
    rows = {d["decision_id"]: d for d in data["decisions"]}
    assert set(rows) == {made.turn_free, made.refused}
    assert rows[made.refused]["kind"] == "call" and rows[made.refused]["code"] == "TOOL_NOT_OFFERED"
    assert rows[made.turn_free]["kind"] == "turn" and rows[made.turn_free]["account"] == "acc-free"
    assert data["next"] is None


def test_each_filter_narrows(console: TestClient, made: Made) -> None:
    every = set(_ids(console, "/decisions"))
    assert {made.turn_free, made.turn_pro, made.refused, made.allowed} == every
    assert _ids(console, "/decisions?code=OK") == [made.allowed]
    assert _ids(console, "/decisions?tool=connect_custom_domain&session=s-free") == [made.refused]
    assert set(_ids(console, "/decisions?kind=turn")) == {made.turn_free, made.turn_pro}
    assert _ids(console, "/decisions?kind=read") == []
    assert set(_ids(console, "/decisions?tenant=acme")) == every
    assert _ids(console, "/decisions?tenant=globex") == []
    assert _ids(console, "/decisions?until=2001-01-01") == []
    assert set(_ids(console, "/decisions?since=2001-01-01")) == every


def test_pages_follow_the_cursor_without_gaps_or_repeats(console: TestClient) -> None:
    every = _ids(console, "/decisions")
    seen: list[str] = []
    url = "/decisions?limit=1"
    while url:
        data = console.get(url, headers=JSON).json()
        seen += [d["decision_id"] for d in data["decisions"]]
        url = f"/decisions?limit=1&after={quote(data['next'])}" if data["next"] else ""
    assert seen == every


def test_a_bad_filter_is_a_400_naming_it(console: TestClient) -> None:
    r = console.get("/decisions?kind=nope", headers=JSON)
    assert r.status_code == 400 and "kind 'nope'" in r.json()["message"]
    r = console.get("/decisions?colour=red", headers=JSON)
    assert r.status_code == 400 and "'colour'" in r.json()["message"]
    r = console.get("/decisions?since=yesterday")
    assert r.status_code == 400 and "since" in r.text and "<main" in r.text
    r = console.get("/decisions?after=nonsense", headers=JSON)
    assert r.status_code == 400 and "cursor" in r.json()["message"]


def test_one_decision_shows_what_log_show_shows_and_its_chain(
    console: TestClient, made: Made
) -> None:
    data = console.get(f"/decisions/{made.refused}", headers=JSON).json()
    assert data["code"] == "TOOL_NOT_OFFERED" and data["kind_shown"] == "call"
    assert data["turn"]["decision_id"] == made.turn_free  # the offering turn
    assert data["chain_ok"] and {c["check"] for c in data["checks"]} == {"hash", "link"}
    turn = console.get(f"/decisions/{quote(made.turn_free, safe='')}", headers=JSON).json()
    assert turn["kind"] == "turn" and turn["chain_ok"]
    assert [c["status"] for c in turn["checks"]] == ["ok", "ok", "ok"]
    hidden = [p for p in turn["pairs"] if not p["visible"]]
    assert hidden[0]["fired"][0]["values"] == {"account.plan": "free"}
    page = console.get(f"/decisions/{quote(made.turn_free, safe='')}").text
    assert "on_free_plan" in page and "acc-free" in page
    assert console.get("/decisions/nope", headers=JSON).status_code == 404


def test_a_row_edited_behind_the_logs_back_is_shown_broken(made: Made) -> None:
    with sqlite3.connect(made.log) as conn:
        conn.execute("DROP TRIGGER action_decisions_no_update")
        conn.execute(
            "UPDATE action_decisions SET decision_json = replace(decision_json, "
            "'TOOL_NOT_OFFERED', 'OK') WHERE decision_id = ?",
            (made.refused,),
        )
    conn.close()
    with (
        open_log(made.log, read_only=True) as log,
        TestClient(create_console(log, Access(open=True))) as client,
    ):
        data = client.get(f"/decisions/{made.refused}", headers=JSON).json()
        assert not data["chain_ok"]
        assert {c["check"]: c["status"] for c in data["checks"]}["hash"] == "broken"
        report = client.get("/verify", headers=JSON).json()
        assert not report["ok"] and report["mismatch_count"] >= 1
        assert "fault" in client.get("/verify").text


def test_the_what_if_turn_is_not_logged(console: TestClient, made: Made) -> None:
    def counts() -> tuple[int, int]:
        with sqlite3.connect(made.log) as conn:
            n = conn.execute("SELECT COUNT(*) FROM turns").fetchone()[0]
            m = conn.execute("SELECT COUNT(*) FROM action_decisions").fetchone()[0]
        conn.close()
        return int(n), int(m)

    before = counts()
    data = console.get("/accounts/acc-free?message=connect+my+custom+domain", headers=JSON).json()
    what_if = data["what_if"]
    assert what_if["logged"] is False
    tools = {t["tool"]: t for t in what_if["tools"]}
    assert not tools["connect_custom_domain"]["visible"]
    fired = tools["connect_custom_domain"]["predicates"][0]
    assert fired["predicate"] == "on_free_plan" and fired["values"] == {"account.plan": "free"}
    assert fired["message"] == "Custom domains need a paid plan."
    assert tools["list_domains"]["visible"]
    assert "not logged" in console.get("/accounts/acc-free?message=connect+domain").text
    assert counts() == before
    pro = console.get("/accounts/acc-pro?message=connect+my+domain", headers=JSON).json()
    assert all(t["visible"] for t in pro["what_if"]["tools"])


def test_the_overview_counts_the_funnel_and_the_refusals(console: TestClient) -> None:
    data = console.get("/", headers=JSON).json()
    total = data["total"]
    assert total["turns"] == 2 and total["decisions"] == 2 and total["refused"] == 1
    assert total["blocked"] == 1 and total["recalled"] == total["blocked"] + 3
    assert data["refusals"] == [{"code": "TOOL_NOT_OFFERED", "tenant": "acme", "count": 1}]
    assert [t["tenant"] for t in data["tenants"]] == ["acme"]
    assert sum(b["turns"] for b in data["buckets"]) == 2
    assert "<svg" in console.get("/").text
    assert data["span"] == "1d" and data["span_s"] == 86_400
    whole = console.get("/?span=all", headers=JSON).json()
    assert whole["total"] == total and whole["span_s"] is None
    assert console.get("/?span=2y", headers=JSON).status_code == 400


def test_off_loopback_an_operator_token_is_required(made: Made) -> None:
    with pytest.raises(ConfigError, match="operator token"):
        Access.for_bind("0.0.0.0", frozenset(), "serve.yaml")
    assert Access.for_bind("127.0.0.1", frozenset(), "serve.yaml").open
    access = Access.for_bind("0.0.0.0", frozenset({sha(SECRET)}), "serve.yaml")
    with (
        open_log(made.log, read_only=True) as log,
        TestClient(create_console(log, access)) as client,
    ):
        r = client.get("/decisions", headers=JSON)
        assert r.status_code == 401 and "Bearer" in r.headers["www-authenticate"]
        assert client.get("/decisions", follow_redirects=False).status_code == 303  # sign in
        wrong = {"Authorization": "Bearer acme-secret-token"}  # a tenant's token
        assert client.get("/decisions", headers={**JSON, **wrong}).status_code == 401
        right = {"Authorization": f"Bearer {SECRET}"}
        assert client.get("/decisions", headers={**JSON, **right}).status_code == 200
        assert client.post("/login", data={"token": "nope"}).status_code == 401
        signed = client.post("/login", data={"token": SECRET}, follow_redirects=False)
        assert signed.status_code == 303
        cookie = signed.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        assert client.get("/decisions", headers=JSON).status_code == 200  # the cookie
        assert client.get("/static/console.css").status_code == 200


def test_operators_are_read_from_the_service_config(made: Made) -> None:
    import yaml

    data = yaml.safe_load(made.config.read_text())
    data["operators"] = {"alice": {"token_sha256": sha(SECRET)}}
    made.config.write_text(yaml.safe_dump(data))
    assert load_config(made.config).operators == {"alice": sha(SECRET)}
    data["operators"] = {"bob": {"token_sha256": data["tenants"]["acme"]["token_sha256"]}}
    made.config.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"operators\.bob\.token_sha256.*tenant"):
        load_config(made.config)
    data["operators"] = {"carol": {"token": SECRET}}
    made.config.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"operators\.carol"):
        load_config(made.config)
