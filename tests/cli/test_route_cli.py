"""`maitred route`: one message for one account -> the menu offered, each skill blocked, why."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from .conftest import CallMain, Invoke, Sitecare, ok

DOMAIN_MESSAGE = "I want to connect my own domain to my site"


def _route(
    invoke: Invoke, site: Sitecare, account: str, *extra: str, method: str = "bm25"
) -> dict[str, Any]:
    args = site.pipeline_args(method)
    result = ok(invoke("route", DOMAIN_MESSAGE, "--account", account, *args, *extra))
    data: dict[str, Any] = json.loads(result.stdout)
    return data


@pytest.fixture(scope="module")
def free_account(site: Sitecare) -> str:
    return site.account_where("plan = 'free'")


@pytest.fixture(scope="module")
def free_route(invoke: Invoke, site: Sitecare, free_account: str) -> dict[str, Any]:
    return _route(invoke, site, free_account, "--family", "--json")


def test_route_json_partitions_candidates_into_visible_and_blocked(free_route: dict[str, Any]):
    for key in ("visible", "exposed", "blocked", "menu", "candidates", "matched"):
        assert key in free_route
    assert free_route["matched"] is True
    candidates = {c["skill"] for c in free_route["candidates"]}
    visible = set(free_route["visible"])
    blocked = {b["skill"] for b in free_route["blocked"]}
    assert candidates == visible | blocked
    assert not visible & blocked
    assert set(free_route["exposed"]) <= visible
    # --family brings the whole sitecare family, not just the top BM25 hits
    assert len(candidates) == 11


def test_free_plan_blocks_connect_domain_with_its_state_value(free_route: dict[str, Any]):
    blocked = {b["skill"]: b for b in free_route["blocked"]}
    assert "connect-domain" in blocked
    assert "connect-domain" not in free_route["visible"]
    fired = {p["predicate"]: p for p in blocked["connect-domain"]["predicates"]}
    assert "on_free_plan" in fired
    on_free = fired["on_free_plan"]
    assert on_free["holds"] is True
    assert on_free["status"] == "ok"
    assert on_free["values"] == {"account.plan": "free"}
    assert on_free["message"] == "Custom domains need a paid plan."
    # every blocked entry names at least one predicate, each with the state it read or why not
    for entry in free_route["blocked"]:
        assert entry["predicates"], entry
        for p in entry["predicates"]:
            assert p["predicate"]
            assert p["values"] or p["detail"], p


def test_paid_plan_is_not_blocked_by_on_free_plan(invoke: Invoke, site: Sitecare):
    paid = site.account_where("plan = 'business'")
    data = _route(invoke, site, paid, "--family", "--json")
    fired = {p["predicate"] for b in data["blocked"] for p in b["predicates"]}
    assert "on_free_plan" not in fired
    assert data["account"] == paid


def test_menu_lists_exactly_the_exposed_skills(free_route: dict[str, Any]):
    assert free_route["menu_format"] == "openai"
    assert free_route["exposed"], "the free account should still be offered something"
    names = [entry["function"]["name"] for entry in free_route["menu"]]
    assert names == free_route["exposed"]
    assert all(entry["type"] == "function" for entry in free_route["menu"])
    assert free_route["menu_tokens"] > 0


@pytest.mark.parametrize("fmt", ["anthropic", "mcp", "agentskills"])
def test_format_changes_the_menu_shape(
    invoke: Invoke, site: Sitecare, free_account: str, free_route: dict[str, Any], fmt: str
):
    data = _route(invoke, site, free_account, "--family", "--json", "--format", fmt)
    assert data["menu_format"] == fmt
    assert data["exposed"] == free_route["exposed"]  # the format changes shape, not content
    menu = data["menu"]
    if fmt == "agentskills":
        assert isinstance(menu, str)
        assert menu.startswith("<available_skills>")
        for name in data["exposed"]:
            assert f"<name>{name}</name>" in menu
        assert "connect-domain" not in menu
        return
    schema_key = {"anthropic": "input_schema", "mcp": "inputSchema"}[fmt]
    assert [entry["name"] for entry in menu] == data["exposed"]
    for entry in menu:
        assert schema_key in entry
        assert "function" not in entry
        assert entry["description"]


def test_route_without_json_prints_the_tables(invoke: Invoke, site: Sitecare, free_account: str):
    result = ok(
        invoke(
            "route", DOMAIN_MESSAGE, "--account", free_account, *site.pipeline_args(), "--family"
        )
    )
    assert "blocked by the executability gate" in result.stdout
    assert "on_free_plan" in result.stdout


def test_unknown_account_fails_closed_as_account_not_found(invoke: Invoke, site: Sitecare):
    """An account no table knows is its own outcome, not "every key missing": every skill that
    reads state is withheld without asking its predicates, and the exit status is 3."""
    args = [DOMAIN_MESSAGE, "--account", "acc-999999", *site.pipeline_args(), "--family"]
    result = invoke("route", *args, "--json")
    assert result.exit_code == 3
    data = json.loads(result.stdout)
    assert data["cause"] == "account_not_found"
    assert data["provider_error"].startswith("account_not_found: ")
    assert data["blocked"] and data["exposed"] == []
    assert all(b["cause"] == "account_not_found" and not b["predicates"] for b in data["blocked"])
    shown = invoke("route", *args)
    assert shown.exit_code == 3
    assert "failed closed: account_not_found" in shown.stderr
    assert "Custom domains need a paid plan." not in shown.stdout  # no predicate message


@pytest.mark.parametrize("option", [["--top-k", "0"], ["--top-k", "-3"]])
def test_nonsense_top_k_is_a_usage_error(
    invoke: Invoke, site: Sitecare, free_account: str, option: list[str]
):
    result = invoke("route", "hi", "--account", free_account, *site.pipeline_args(), *option)
    assert result.exit_code == 2
    assert "--top-k" in result.stderr


@pytest.mark.model
def test_route_with_hybrid_recall(invoke: Invoke, site: Sitecare, free_account: str):
    data = _route(invoke, site, free_account, "--json", "--top-k", "3", method="hybrid")
    assert data["candidates"][0]["skill"] == "connect-domain"
    assert {"dense", "bm25"} <= set(data["candidates"][0]["components"])
    assert "connect-domain" in {b["skill"] for b in data["blocked"]}


@pytest.mark.parametrize("method", ["bm25", "dense"])
def test_message_that_is_not_utf8_is_routed_with_replacement_characters(
    invoke: Invoke, site: Sitecare, free_account: str, method: str
) -> None:
    """Regression: a 0xff byte crashed dense recall and reached bm25's JSON output raw."""
    text = "connect my own domain \udcff\udcfe please"  # how Python hands over bytes ff fe
    args = site.pipeline_args(method)
    result = ok(invoke("route", text, "--account", free_account, *args, "--json"))
    result.stdout.encode("utf-8")  # no lone surrogate left: valid UTF-8
    data = json.loads(result.stdout)
    assert data["message"] == "connect my own domain \ufffd\ufffd please"
    assert data["matched"] is True
    assert "not valid UTF-8: 2 undecodable byte(s) replaced by U+FFFD" in result.stderr


def test_invalid_utf8_bytes_on_the_real_command_line_give_valid_json(
    site: Sitecare, free_account: str
) -> None:
    """The same through a real process: argv bytes in, UTF-8 JSON bytes out."""
    argv = [sys.executable, "-c", "from maitred.cli.main import main; main()", "route"]
    message = b"connect my own domain \xff please"
    args = [*argv, message, "--account", free_account, *site.pipeline_args("bm25"), "--json"]
    done = subprocess.run(args, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    data = json.loads(done.stdout.decode("utf-8"))  # strict: raises on a raw 0xff
    assert data["message"] == "connect my own domain \ufffd please"


def test_a_tables_mapping_whose_table_lacks_a_read_column_is_refused(
    call_main: CallMain, site: Sitecare, tmp_path_factory: pytest.TempPathFactory
):
    """Regression (issue 16, defect 2): `domain` mapped to `mailboxes` made `domain.connected`
    missing for every account, so `on_missing: offer` predicates offered connect-domain."""
    tables = json.loads(site.tables.read_text(encoding="utf-8"))
    tables["domain"] = dict(tables["domain"], table="mailboxes")
    wrong = tmp_path_factory.mktemp("tables") / "tables.json"
    wrong.write_text(json.dumps(tables), encoding="utf-8")
    args = site.pipeline_args("bm25")
    args[args.index("--tables") + 1] = str(wrong)
    code, out, err = call_main("route", DOMAIN_MESSAGE, "--account", "acc-000001", *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert "'domain.connected'" in err and "'mailboxes'" in err and "connect-domain" in err
