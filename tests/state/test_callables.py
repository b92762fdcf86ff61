"""CallableStateProvider: routing by longest prefix, concurrency, failures and timeouts."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from maitred.errors import ConfigError, ProviderError, ProviderTimeout
from maitred.state import CallableStateProvider


@pytest.fixture
def calls() -> Counter[str]:
    return Counter()


@pytest.fixture
def provider(calls: Counter[str]) -> Iterator[CallableStateProvider]:
    def billing(account: str) -> dict[str, Any] | None:
        calls["billing"] += 1
        if account == "nobody":
            return None
        return {"status": "past_due", "card": None, "address": {"country": "FR"}}

    def lock(account: str) -> bool:
        calls["domain.registrar_lock"] += 1
        return account == "acct-1"

    with CallableStateProvider(
        {"billing": billing, "domain.registrar_lock": lock}, timeout_s=5
    ) as provider:
        yield provider


def test_root_and_key_fetchers(provider: CallableStateProvider, calls: Counter[str]) -> None:
    keys = [
        "billing.status",
        "billing.card",
        "billing.address.country",
        "billing.address",
        "billing.nope",
        "domain.registrar_lock",
        "domain.expiry",
        "account.plan",
    ]
    snap = provider.fetch("acct-1", keys)
    assert snap.values == {
        "billing.status": "past_due",
        "billing.card": None,
        "billing.address.country": "FR",
        "billing.address": {"country": "FR"},
        "domain.registrar_lock": True,
    }
    assert snap.missing == {"billing.nope", "domain.expiry", "account.plan"}
    assert calls == {"billing": 1, "domain.registrar_lock": 1}  # once each per fetch


def test_none_means_the_account_has_none(provider: CallableStateProvider) -> None:
    snap = provider.fetch("nobody", ["billing.status", "domain.registrar_lock"])
    assert snap.values == {"domain.registrar_lock": False}
    assert snap.missing == {"billing.status"}


def test_fetchers_not_needed_are_not_called(
    provider: CallableStateProvider, calls: Counter[str]
) -> None:
    assert provider.fetch("acct-1", ["account.plan"]).missing == {"account.plan"}
    assert calls == {}


def test_fetchers_of_one_turn_run_concurrently() -> None:
    barrier = threading.Barrier(2, timeout=10)  # breaks unless both run at the same time

    def meet(account: str) -> dict[str, str]:
        barrier.wait()
        return {"ok": account}

    with CallableStateProvider({"a": meet, "b": meet}) as provider:
        snap = provider.fetch("x", ["a.ok", "b.ok"])
    assert snap.values == {"a.ok": "x", "b.ok": "x"}


def test_a_raising_fetcher_is_a_provider_error_naming_it() -> None:
    def broken(account: str) -> dict[str, Any]:
        raise ConnectionError("billing API returned 503")

    provider = CallableStateProvider({"billing": broken, "ok": lambda a: {"x": 1}})
    with provider, pytest.raises(ProviderError) as info:
        provider.fetch("acct-1", ["billing.status", "ok.x"])
    message = str(info.value)
    assert "'billing'" in message and "'acct-1'" in message and "503" in message
    assert "billing.status" in message
    assert isinstance(info.value.__cause__, ConnectionError)
    assert not isinstance(info.value, ProviderTimeout)


def test_a_fetcher_past_the_timeout_is_a_provider_timeout() -> None:
    release = threading.Event()

    def slow(account: str) -> dict[str, Any]:
        release.wait(10)
        return {"status": "late"}

    provider = CallableStateProvider({"billing": slow, "fast": lambda a: {"x": 1}}, timeout_s=0.05)
    try:
        with pytest.raises(ProviderTimeout, match=r"\['billing'\] did not answer within 0.05s"):
            provider.fetch("acct-1", ["billing.status", "fast.x"])
    finally:
        release.set()
        provider.close()


def test_a_root_fetcher_must_return_a_mapping() -> None:
    with CallableStateProvider({"billing": lambda a: "active"}) as provider:
        assert provider.fetch("a", ["billing"]).values == {"billing": "active"}
        with pytest.raises(ProviderError, match="must return a dict of fields or None"):
            provider.fetch("a", ["billing.status"])


def test_unsafe_values_are_provider_errors() -> None:
    provider = CallableStateProvider({"billing": lambda a: {"pdf": b"%PDF"}})
    with provider, pytest.raises(ProviderError, match="binary"):
        provider.fetch("a", ["billing.pdf"])


@pytest.mark.parametrize(
    ("fetchers", "kw", "match"),
    [
        ({"a..b": lambda a: 1}, {}, "empty segments"),
        ({"a": 3}, {}, "not a function"),
        ({}, {}, "at least one fetcher"),
        ({"a": lambda a: 1}, {"timeout_s": 0}, "must be positive"),
    ],
)
def test_bad_configuration(fetchers: dict[str, Any], kw: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        CallableStateProvider(fetchers, **kw)
