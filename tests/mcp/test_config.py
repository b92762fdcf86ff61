"""The gateway config: every mistake names the file and the field, paths follow the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maitred.errors import ConfigError, ContractError
from maitred.gateway import Upstream, catalog_from_tools, load_config, parse_config
from maitred.gateway.http_config import request_state_keys

GOOD = {
    "account": "acc-1",
    "state": "accounts.json",
    "log": "log.sqlite",
    "upstreams": [{"name": "time", "command": "mcp-server-time", "args": ["--local-timezone", 1]}],
}
UP = {"name": "t", "command": "x"}
HTTP_UP = {"name": "t", "url": "http://h"}
TOKEN = {"token_sha256": "ab" * 32, "tenant": "acme", "account": "acc-1"}


def test_relative_paths_follow_the_config_and_a_bare_command_stays_on_path(
    tmp_path: Path,
) -> None:
    config = parse_config(GOOD, "gw.yaml", base=tmp_path)
    assert config.state == str(tmp_path / "accounts.json")
    assert config.log == str(tmp_path / "log.sqlite")
    assert config.upstream == Upstream("time", "mcp-server-time", ("--local-timezone", "1"))


def test_the_launch_account_overrides_the_file() -> None:
    assert parse_config(GOOD, "gw.yaml", account="acc-9").account == "acc-9"


@pytest.mark.parametrize(
    ("change", "field", "hint"),
    [
        ({"account": None}, "'account'", "--account"),
        ({"state": 3}, "'state'", "non-empty string"),
        ({"upstreams": []}, "'upstreams'", "one or more"),
        ({"upstreams": [{"name": "t"}]}, "'upstreams[0].command'", "required"),
        ({"upstreams": [{**UP, "argv": []}]}, "upstreams[0].argv", "known"),
        ({"upstreams": [{**UP, "args": "a b"}]}, "upstreams[0].args", "list"),
        ({"upstreams": [{**UP, "contracts": "t.yaml"}]}, "contracts", ".maitred.yaml"),
        ({"upstreams": [{**UP, "contracts": "no.maitred.yaml"}]}, "contracts", "does not exist"),
        ({"upstreams": [{**UP, "shadow": "free_plan"}]}, "upstreams[0].shadow", "rule names"),
        ({"upstreams": [{**UP, "shadow": ["free_plan"]}]}, "upstreams[0].shadow", "no contracts"),
        ({"accounts": "acc-1"}, "'accounts'", "not a known field"),
        ({"upstreams": [{**UP, "url": "http://h/mcp"}]}, "upstreams[0].command", "exactly one"),
        ({"upstreams": [{"name": "t", "url": "h:9/mcp"}]}, "upstreams[0].url", "http://"),
        ({"upstreams": [{**UP, "headers": {"a": "b"}}]}, "upstreams[0].headers", "HTTP"),
        ({"upstreams": [{**HTTP_UP, "args": []}]}, "upstreams[0].args", "stdio"),
        ({"upstreams": [UP, UP]}, "upstreams[1].name", "already upstreams[0]"),
        ({"upstreams": [{**UP, "name": "a b"}]}, "upstreams[0].name", "letters"),
        ({"upstreams": [{**UP, "timeout_s": 0}]}, "upstreams[0].timeout_s", "positive"),
        ({"upstreams": [{**UP, "required": "yes"}]}, "upstreams[0].required", "true"),
        ({"upstream_retry": {"initial_s": 0}}, "upstream_retry.initial_s", ">= 0.1"),
        ({"upstream_retry": {"max_s": True}}, "upstream_retry.max_s", "seconds"),
        ({"upstream_retry": {"initial_s": 5, "max_s": 1}}, "upstream_retry.max_s", "initial_s"),
        ({"upstream_retry": {"every": 1}}, "upstream_retry.every", "known"),
        ({"disclosure": "some"}, "'disclosure'", "find_tools"),
        ({"find": {"top_k": 0}}, "find.top_k", ">= 1"),
        ({"server": {"port": 70000}}, "server.port", "0-65535"),
        ({"server": {"path": "mcp"}}, "server.path", "'/'"),
        ({"server": {"max_body_bytes": 10}}, "server.max_body_bytes", ">= 1024"),
        ({"server": {"request_state_keys_file": 3}}, "server.request_state_keys_file", "string"),
        ({"server": {"request_state_ttl_s": 0}}, "server.request_state_ttl_s", "positive"),
        ({"server": {"request_state_ttl_s": "10m"}}, "server.request_state_ttl_s", "seconds"),
        ({"tokens": [{**TOKEN, "token_sha256": "abc"}]}, "tokens[0].token_sha256", "sha256sum"),
        ({"tokens": [TOKEN, TOKEN]}, "tokens[1].token_sha256", "same token as tokens[0]"),
        ({"tokens": [{**TOKEN, "account": None}]}, "tokens[0].account", "required"),
        ({"tokens": [{**TOKEN, "accounts": ["x"]}]}, "tokens[0].accounts", "known"),
        ({"watch": {"interval_s": 0.01}}, "watch.interval_s", "0 (off)"),
        ({"watch": {"interval_s": "5s"}}, "watch.interval_s", ">= 0.1"),
        ({"watch": {"every": 5}}, "watch.every", "known"),
        ({"watch": 5}, "'watch'", "mapping"),
    ],
)  # fmt: skip
def test_a_bad_field_is_named_with_what_to_write(change: dict, field: str, hint: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({**GOOD, **change}, "gw.yaml")
    text = str(caught.value)
    assert text.startswith("gw.yaml:") and field in text and hint in text


def test_the_watch_is_off_unless_asked_for() -> None:
    assert parse_config(GOOD, "gw.yaml").watch.interval_s == 0.0


def test_an_upstream_is_not_required_and_is_retried_from_1_to_60_seconds() -> None:
    config = parse_config(GOOD, "gw.yaml")
    assert config.upstream.required is False
    assert (config.upstream_retry.initial_s, config.upstream_retry.max_s) == (1.0, 60.0)
    strict = parse_config({**GOOD, "upstreams": [{**UP, "required": True}]}, "gw.yaml")
    assert strict.upstream.required is True
    assert parse_config({**GOOD, "watch": {"interval_s": 5}}, "gw.yaml").watch.interval_s == 5.0


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text("account: a\nupstreams: [\n  - x: : :\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"gw\.yaml:\d+: not valid YAML"):
        load_config(path)


TOOLS = [
    {"name": "get_plan", "description": "Say the plan.", "inputSchema": {"type": "object"}},
    {"name": "upgrade", "description": "Change the plan.", "inputSchema": {"type": "object"}},
]


def test_contracts_come_from_the_sidecar_and_a_stray_entry_is_refused(tmp_path: Path) -> None:
    sidecar = tmp_path / "shop.maitred.yaml"
    sidecar.write_text("tools:\n  upgrade: {mutates: true}\n", encoding="utf-8")
    up = Upstream("shop", "shop-server", contracts=str(sidecar))
    catalog = catalog_from_tools(TOOLS, up, {})
    assert [s.name for s in catalog] == ["get_plan", "upgrade"]
    assert catalog["upgrade"].contract.mutates and not catalog["get_plan"].contract.mutates
    sidecar.write_text("tools:\n  refund: {mutates: true}\n", encoding="utf-8")
    with pytest.raises(ContractError, match=r"shop\.maitred\.yaml"):
        catalog_from_tools(TOOLS, up, {})


def test_each_tool_s_server_is_the_upstream_that_lists_it() -> None:
    """So ``find: {method: adaptive+servers}`` can lift a dominant upstream's other tools."""
    catalog = catalog_from_tools(TOOLS, Upstream("shop", "shop-server"), {})
    assert {s.server for s in catalog} == {"shop"}
    named = [{**TOOLS[0], "server": "billing"}, TOOLS[1]]  # a server the listing names is kept
    catalog = catalog_from_tools(named, Upstream("shop", "shop-server"), {})
    assert [s.server for s in catalog] == ["billing", "shop"]


def test_an_upstream_without_usable_tools_is_named() -> None:
    with pytest.raises(ConfigError, match="upstream 'shop'"):
        catalog_from_tools([{"description": "no name"}], Upstream("shop", "shop-server"), {})


def test_an_http_upstream_and_tokens_need_no_launch_account(tmp_path: Path) -> None:
    data = {
        "state": "accounts.json",
        "server": {"port": 0},
        "tokens": [{**TOKEN, "token_sha256": "AB" * 32}],
        "upstreams": [{"name": "notes", "url": "http://127.0.0.1:9/mcp", "headers": {"k": 1}}],
        "disclosure": "find_tools",
    }
    config = parse_config(data, "gw.yaml", base=tmp_path)
    assert config.account == "" and config.disclosure == "find_tools"
    assert config.tokens[0].token_sha256 == "ab" * 32  # kept lower-case
    assert config.upstream == Upstream("notes", url="http://127.0.0.1:9/mcp", headers={"k": "1"})
    assert config.server is not None and config.server.port == 0


KEY_1 = "k1-" + "1" * 40  # 43 bytes
KEY_2 = "k2-" + "2" * 29  # exactly 32 bytes: the shortest accepted


def test_the_request_state_keys_file_follows_the_config_and_keeps_its_order(
    tmp_path: Path,
) -> None:
    from maitred.gateway.channels import sealing

    (tmp_path / "rs.keys").write_text(
        f"# the first key seals\n\n  {KEY_2}  \n# older keys still open\n{KEY_1}\n",
        encoding="utf-8",
    )
    server = {"port": 0, "request_state_keys_file": "rs.keys", "request_state_ttl_s": 90}
    config = parse_config({**GOOD, "server": server}, "gw.yaml", base=tmp_path)
    assert config.server is not None
    assert config.server.request_state_keys_file == str(tmp_path / "rs.keys")
    assert config.server.request_state_ttl_s == 90.0
    assert request_state_keys(config.server.request_state_keys_file, "gw.yaml") == (
        KEY_2.encode(),
        KEY_1.encode(),
    )
    security = sealing(config.server, "gw.yaml")
    assert security is not None and security.ttl == 90.0
    default = parse_config({**GOOD, "server": {"port": 0}}, "gw.yaml", base=tmp_path)
    assert default.server is not None and default.server.request_state_ttl_s == 600.0
    own = sealing(default.server, "gw.yaml")  # a key of this process, the TTL the config's
    assert own.ttl == 600.0 and own.codec is not sealing(default.server, "gw.yaml").codec


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        (None, "does not exist"),
        ("", "holds no key"),
        ("# only a comment\n\n   \n", "holds no key"),
        (f"{KEY_1}\n\n{KEY_2[:-1]}\n", "line 3: a key is at least 32 bytes"),
        (f"{KEY_1}\n{KEY_1}\n", "line 2: the same key as line 1"),
    ],
)
def test_a_bad_request_state_keys_file_is_a_start_error_naming_field_and_line(
    tmp_path: Path, text: str | None, hint: str
) -> None:
    if text is not None:
        (tmp_path / "rs.keys").write_text(text, encoding="utf-8")
    server = {"port": 0, "request_state_keys_file": "rs.keys"}
    with pytest.raises(ConfigError) as caught:
        parse_config({**GOOD, "server": server}, "gw.yaml", base=tmp_path)
    text_of = str(caught.value)
    assert text_of.startswith("gw.yaml: field 'server.request_state_keys_file'")
    assert str(tmp_path / "rs.keys") in text_of and hint in text_of
    assert KEY_1 not in text_of and KEY_2[:-1] not in text_of  # a secret is never echoed


def test_a_state_sealed_under_the_old_key_opens_after_rotation(tmp_path: Path) -> None:
    """``[new, old]``: the new key seals, the old one still opens what it sealed; a replica
    still on ``[old]`` cannot open the new key's state, and ``[new]`` alone no longer opens the
    old one (so the old key is dropped one TTL after the rotation has rolled out)."""
    from mcp.server.request_state import InvalidRequestState

    from maitred.gateway.channels import sealing
    from maitred.gateway.http_config import HttpServer

    def codec(*keys: str) -> Any:
        path = tmp_path / f"{len(keys)}-{keys[0][:2]}.keys"
        path.write_text("".join(f"{k}\n" for k in keys), encoding="utf-8")
        security = sealing(HttpServer(request_state_keys_file=str(path)), "gw.yaml")
        assert security is not None
        return security.codec

    old, rotated, new = codec(KEY_1), codec(KEY_2, KEY_1), codec(KEY_2)
    before = old.seal(b"sealed before the rotation")
    assert rotated.unseal(before) == b"sealed before the rotation"
    after = rotated.seal(b"sealed after")
    assert new.unseal(after) == b"sealed after"  # the first line sealed it
    with pytest.raises(InvalidRequestState):
        old.unseal(after)
    with pytest.raises(InvalidRequestState):
        new.unseal(before)


def test_two_upstreams_listing_one_name_are_refused_naming_both(tmp_path: Path) -> None:
    from maitred.gateway import GatewayEngines

    (tmp_path / "accounts.json").write_text("{}", encoding="utf-8")
    data = {**GOOD, "upstreams": [{"name": "a", "command": "x"}, {"name": "b", "url": "http://h"}]}
    config = parse_config(data, "gw.yaml", base=tmp_path)
    with pytest.raises(
        ConfigError, match=r"upstreams 'a' and 'b' both list a tool named 'upgrade'"
    ):
        GatewayEngines.open(config, {"a": TOOLS, "b": TOOLS[1:]})


def test_an_unknown_find_method_is_named_with_the_field(tmp_path: Path) -> None:
    from maitred.gateway import GatewayEngines

    (tmp_path / "accounts.json").write_text("{}", encoding="utf-8")
    data = {**GOOD, "disclosure": "find_tools", "find": {"method": "bm26"}}
    config = parse_config(data, "gw.yaml", base=tmp_path)
    with pytest.raises(ConfigError, match=r"gw\.yaml: field 'find':.*bm26"):
        GatewayEngines.open(config, {"time": TOOLS})


@pytest.mark.parametrize("disclosure", ["all", "find_tools"])
def test_a_column_the_state_table_lacks_is_a_start_error_in_every_mode(
    tmp_path: Path, disclosure: str
) -> None:
    """The gateway's listing engine runs the load-time checks every engine runs (issue 16,
    defect 2): with ``disclosure: all`` it used to start and hide the tool on every listing."""
    import sqlite3

    from maitred.gateway import GatewayEngines

    with sqlite3.connect(tmp_path / "state.db") as conn:
        conn.execute("CREATE TABLE accounts (account_id TEXT PRIMARY KEY, plan TEXT)")
    sidecar = tmp_path / "shop.maitred.yaml"
    sidecar.write_text(
        "tools:\n  upgrade:\n    mutates: true\n    exit_predicates:\n"
        "      - {name: locked, expr: account.locked, reads: [account.locked]}\n",
        encoding="utf-8",
    )
    data = {
        **GOOD,
        "state": f"sqlite:///{tmp_path / 'state.db'}",
        "tables": {"account": "accounts"},
        "disclosure": disclosure,
        "upstreams": [{"name": "shop", "command": "x", "contracts": str(sidecar)}],
    }
    config = parse_config(data, "gw.yaml", base=tmp_path)
    with pytest.raises(ConfigError, match=r"gw\.yaml: the upstreams' contracts: .*account\.locked"):
        GatewayEngines.open(config, {"shop": TOOLS})


def test_find_takes_the_analyzer_and_embedder_and_names_a_bad_one(tmp_path: Path) -> None:
    from maitred.gateway import GatewayEngines
    from maitred.gateway.config import FindOptions

    (tmp_path / "accounts.json").write_text("{}", encoding="utf-8")
    find = {"method": "bm25", "analyzer": "words", "embedder": "minilm"}
    data = {**GOOD, "disclosure": "find_tools", "find": find}
    config = parse_config(data, "gw.yaml", base=tmp_path)
    assert config.find == FindOptions("bm25", 5, "words", "minilm")
    assert parse_config({**GOOD}, "gw.yaml", base=tmp_path).find == FindOptions()
    bad = parse_config({**data, "find": {"analyzer": "klingon"}}, "gw.yaml", base=tmp_path)
    with pytest.raises(ConfigError, match=r"gw\.yaml: field 'find':.*'klingon'.*scripts"):
        GatewayEngines.open(bad, {"time": TOOLS})
