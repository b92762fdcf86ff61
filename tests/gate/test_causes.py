"""The gate's fail-closed causes: a state store that is down, an account that does not exist,
and a provider that cannot serve a key root the catalog's predicates read."""

from __future__ import annotations

from collections.abc import Collection

import pytest

from maitred.contract import CelPredicate, Contract
from maitred.errors import ConfigError, ProviderError
from maitred.gate import ExecutabilityGate, require_coverage
from maitred.skills.model import Catalog, Skill
from maitred.state import CallableStateProvider, MemoryStateProvider
from maitred.state.snapshot import Snapshot

NOW = 1_700_000_000.0

# fail-open on a missing key: "no domain record" means "nothing locks it"
LOCKED = CelPredicate(
    "domain.registrar_lock", "domain_locked", ("domain.registrar_lock",), on_missing="offer"
)
FREE = CelPredicate('account.plan == "free"', "on_free_plan", ("account.plan",))


def _skill(name: str, *predicates: CelPredicate) -> Skill:
    return Skill(name, f"{name} for the customer.", contract=Contract(exit_predicates=predicates))


def _catalog() -> Catalog:
    return Catalog(
        (_skill("transfer-domain", LOCKED), _skill("connect-domain", FREE), _skill("say-hello"))
    )


SKILLS = ["transfer-domain", "connect-domain", "say-hello"]


class _Down:
    def fetch(self, account: str, keys: Collection[str]) -> Snapshot:
        raise ProviderError("connection refused")


def _memory() -> MemoryStateProvider:
    return MemoryStateProvider({"acct-1": {"account": {"plan": "premium"}}}, clock=lambda: NOW)


def test_known_account_is_decided_by_the_predicates() -> None:
    result = ExecutabilityGate(_catalog(), _memory(), lambda: NOW).check("acct-1", SKILLS)
    assert result.cause is None and result.provider_error == ""
    # no domain record: the fail-open predicate offers transfer-domain, as declared
    assert set(result.visible) == set(SKILLS)


def test_unreachable_provider_blocks_every_state_reader_with_state_unavailable() -> None:
    result = ExecutabilityGate(_catalog(), _Down(), lambda: NOW).check("acct-1", SKILLS)
    assert result.cause == "state_unavailable"
    assert result.provider_error.startswith("state_unavailable: ProviderError: ")
    assert "connection refused" in result.provider_error
    by_skill = {o.skill: o for o in result.outcomes}
    # the fail-open predicate must not turn an outage into an offer
    assert not by_skill["transfer-domain"].visible
    assert not by_skill["connect-domain"].visible
    for name in ("transfer-domain", "connect-domain"):
        assert by_skill[name].cause == "state_unavailable"
        assert by_skill[name].fired == ()  # no predicate was asked
    assert by_skill["say-hello"].visible and by_skill["say-hello"].cause is None


def test_unknown_account_is_its_own_cause_not_all_keys_missing() -> None:
    result = ExecutabilityGate(_catalog(), _memory(), lambda: NOW).check("nobody", SKILLS)
    assert result.cause == "account_not_found"
    assert result.provider_error.startswith("account_not_found: ")
    assert "'nobody'" in result.provider_error
    assert result.snapshot.account_found is False
    by_skill = {o.skill: o for o in result.outcomes}
    assert not by_skill["transfer-domain"].visible  # on_missing: offer does not apply
    assert by_skill["transfer-domain"].cause == "account_not_found"
    assert by_skill["transfer-domain"].fired == ()  # no predicate message as if it fired
    assert by_skill["say-hello"].visible


def test_decide_on_a_stored_snapshot_keeps_the_cause() -> None:
    gate = ExecutabilityGate(_catalog(), _memory(), lambda: NOW)
    stored = gate.check("nobody", SKILLS).snapshot
    replayed = Snapshot.from_json(stored.to_json())
    assert replayed.hash == replayed.compute_hash() == stored.hash
    assert gate.decide("transfer-domain", replayed, NOW).cause == "account_not_found"
    down = ExecutabilityGate(_catalog(), _Down(), lambda: NOW).check("acct-1", SKILLS).snapshot
    assert gate.decide("connect-domain", down, NOW).cause == "state_unavailable"


def test_a_provider_that_cannot_tell_is_decided_by_the_predicates() -> None:
    provider = CallableStateProvider(
        {"account": lambda a: None, "domain": lambda a: None}, clock=lambda: NOW
    )
    result = ExecutabilityGate(_catalog(), provider, lambda: NOW).check("nobody", SKILLS)
    assert result.cause is None
    assert "transfer-domain" in result.visible  # fail-open, as declared


def test_coverage_names_the_uncovered_keys_roots_and_skills() -> None:
    provider = CallableStateProvider({"account": lambda a: {"plan": "free"}})
    with pytest.raises(ConfigError) as info:
        require_coverage(_catalog(), provider)
    text = str(info.value)
    assert "['domain']" in text
    assert "domain.registrar_lock (read by transfer-domain)" in text
    assert "account.plan" not in text


def test_coverage_passes_when_every_root_is_served_or_the_provider_cannot_tell() -> None:
    both = CallableStateProvider({"account": lambda a: {}, "domain": lambda a: {}})
    require_coverage(_catalog(), both)
    require_coverage(_catalog(), _memory())  # documents carry their own fields
