"""MemoryStateProvider and JsonStateProvider: flattening, freshness, hot reload, errors."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from maitred.errors import ConfigError, ProviderError
from maitred.state import JsonStateProvider, MemoryStateProvider, Snapshot, StateProvider

NOW = 1_000_000.0
DATA: dict[str, Any] = {
    "acct-1": {
        "account": {"plan": "free", "limits": {"sites": 1, "seats": 2}},
        "billing.status": "past_due",
        "billing.card": None,
        "domain": {"registrar_lock": True, "dns.mx": ["mx1", "mx2"]},
    }
}


def memory(**kw: Any) -> MemoryStateProvider:
    return MemoryStateProvider(DATA, clock=lambda: NOW, **kw)


def test_nested_and_dotted_keys_are_the_same_tree() -> None:
    snap = memory().fetch(
        "acct-1",
        ["account.plan", "billing.status", "account.limits.seats", "domain.dns.mx", "billing.card"],
    )
    assert snap.values == {
        "account.plan": "free",
        "billing.status": "past_due",
        "account.limits.seats": 2,
        "domain.dns.mx": ["mx1", "mx2"],
        "billing.card": None,  # a null is a value, not a missing key
    }
    assert snap.missing == frozenset()
    assert snap.as_of == NOW and snap.key_as_of == {}


def test_a_group_asked_by_its_path_returns_the_dict() -> None:
    snap = memory().fetch("acct-1", ["account.limits", "billing"])
    assert snap.values == {
        "account.limits": {"sites": 1, "seats": 2},
        "billing": {"status": "past_due", "card": None},
    }


def test_absent_keys_and_accounts_are_missing() -> None:
    provider = memory()
    keys = ["account.plan", "account.nope", "account.plan.deeper", "zone.x", "account..plan"]
    snap = provider.fetch("acct-1", keys)
    assert snap.values == {"account.plan": "free"}
    assert snap.missing == set(keys) - {"account.plan"}
    other = provider.fetch("acct-2", ["account.plan"])
    assert other.values == {} and other.missing == {"account.plan"}


def test_returned_values_are_copies() -> None:
    provider = memory()
    first = provider.fetch("acct-1", ["account.limits"])
    first.values["account.limits"]["sites"] = 99
    assert provider.fetch("acct-1", ["account.limits.sites"]).values == {"account.limits.sites": 1}


def test_key_as_of_by_key_or_longest_prefix() -> None:
    provider = memory(key_as_of={"acct-1": {"billing": 10.0, "account.limits.sites": 20.0}})
    snap = provider.fetch("acct-1", ["billing.status", "account.limits.sites", "account.plan"])
    assert snap.key_as_of == {"billing.status": 10.0, "account.limits.sites": 20.0}
    assert snap.age("account.plan", NOW) == 0.0
    assert snap.age("billing.status", NOW) == NOW - 10.0


def test_version_and_protocol() -> None:
    provider = memory(version="fixture-7")
    assert isinstance(provider, StateProvider)
    assert provider.fetch("acct-1", ["account.plan"]).version == "fixture-7"


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"account": {"plan": "free"}, "account.plan": "paid"}, "given twice"),
        ({"account.plan": "free", "account": "x"}, "also has fields below it"),
        ({"account": "x", "account.plan": "free"}, "also has fields below it"),
        ({"account..plan": 1}, "empty segment"),
        ({"account": {"blob": b"x"}}, "binary"),
        ({"account": {"n": float("nan")}}, "finite"),
    ],
)
def test_conflicting_or_unsafe_data_is_refused(fields: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        MemoryStateProvider({"acct-1": fields})


def test_same_value_twice_is_accepted() -> None:
    provider = MemoryStateProvider({"a": {"account": {"plan": "x"}, "account.plan": "x"}})
    assert provider.fetch("a", ["account.plan"]).values == {"account.plan": "x"}


# -- JSON file ---------------------------------------------------------------------------


def write(path: Path, data: object, mtime: float) -> None:
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    os.utime(path, (mtime, mtime))


def test_json_file_values_as_of_mtime_and_version(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    write(path, DATA, 1_700_000_000)
    provider = JsonStateProvider(path)
    snap = provider.fetch("acct-1", ["account.plan", "domain.dns.mx", "nope.x"])
    assert snap.values == {"account.plan": "free", "domain.dns.mx": ["mx1", "mx2"]}
    assert snap.missing == {"nope.x"}
    assert snap.as_of == 1_700_000_000
    assert snap.version.startswith("sha256:")


def test_json_file_hot_reloads_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    write(path, {"a": {"account": {"plan": "free"}}}, 1_700_000_000)
    provider = JsonStateProvider(path)
    before = provider.fetch("a", ["account.plan"])
    write(path, {"a": {"account": {"plan": "premium"}}}, 1_700_000_100)
    after = provider.fetch("a", ["account.plan"])
    assert after.values == {"account.plan": "premium"}
    assert after.as_of == 1_700_000_100
    assert after.version != before.version


def test_bad_json_names_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    write(path, '{\n  "a": {"account": {"plan": "free",}}\n}', 1_700_000_000)
    with pytest.raises(ConfigError, match=r"state\.json:2:36: invalid JSON"):
        JsonStateProvider(path)


def test_a_reload_that_breaks_fails_closed_until_fixed(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    write(path, {"a": {"account": {"plan": "free"}}}, 1_700_000_000)
    provider = JsonStateProvider(path)
    write(path, '{"a": ', 1_700_000_100)
    with pytest.raises(ProviderError, match=r"state\.json:1:7: invalid JSON"):
        provider.fetch("a", ["account.plan"])
    write(path, {"a": {"account": {"plan": "paid"}}}, 1_700_000_200)
    assert provider.fetch("a", ["account.plan"]).values == {"account.plan": "paid"}
    path.unlink()
    with pytest.raises(ProviderError, match="cannot be read"):
        provider.fetch("a", ["account.plan"])


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("[1, 2]", "top level must be an object of accounts"),
        ('{"a": 3}', "account 'a' must map to an object"),
        ('{"a": {"x": 1, "x.y": 2}}', "also has fields below it"),
    ],
)
def test_json_shape_errors_name_the_file(tmp_path: Path, content: str, match: str) -> None:
    path = tmp_path / "state.json"
    write(path, content, 1_700_000_000)
    with pytest.raises(ConfigError, match=match) as info:
        JsonStateProvider(path)
    assert "state.json" in str(info.value)


def test_missing_json_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"absent\.json.*cannot be read"):
        JsonStateProvider(tmp_path / "absent.json")


def test_documents_say_whether_the_account_exists(tmp_path: Path) -> None:
    provider = memory()
    assert provider.fetch("acct-1", ["zone.x"]).account_found is True  # known, key missing
    unknown = provider.fetch("acct-2", ["account.plan"])
    assert unknown.account_found is False
    assert unknown.hash == unknown.compute_hash()
    path = tmp_path / "state.json"
    write(path, DATA, 1_700_000_000)
    from_file = JsonStateProvider(path)
    assert from_file.fetch("acct-1", ["account.plan"]).account_found is True
    assert from_file.fetch("acct-2", ["account.plan"]).account_found is False


def test_a_known_account_keeps_the_snapshot_json_it_had_before_account_found() -> None:
    snap = memory().fetch("acct-1", ["account.plan"])
    assert "account_found" not in snap.to_json()
    assert snap.hash == Snapshot(**{**snap.__dict__, "account_found": None, "hash": ""}).hash
