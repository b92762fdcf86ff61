"""The pipeline end to end on a small in-code catalog: recall -> gate -> depth -> menu -> log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maitred.analytics.funnel import funnel
from maitred.contract import CelPredicate, Contract
from maitred.depth import FixedK
from maitred.errors import ProviderError
from maitred.log.base import open_log
from maitred.menu import MenuRenderer
from maitred.pipeline import Pipeline
from maitred.recall.base import Cutoff
from maitred.recall.registry import make_recaller
from maitred.records import Message
from maitred.skills.model import Catalog, Skill
from maitred.state.memory import MemoryStateProvider
from maitred.state.snapshot import Snapshot

NOW = 1_700_000_000.0


def _skill(name: str, description: str, *preds: CelPredicate) -> Skill:
    return Skill(
        name=name,
        description=description,
        family="care",
        contract=Contract(exit_predicates=preds),
    )


@pytest.fixture()
def catalog() -> Catalog:
    paid = CelPredicate(
        'account.plan == "free"', "on_free_plan", ("account.plan",), message="needs a paid plan"
    )
    locked = CelPredicate("domain.locked", "domain_locked", ("domain.locked",))
    return Catalog(
        (
            _skill("connect-domain", "Connect a custom domain name to the website.", paid),
            _skill("transfer-domain", "Transfer a domain name from another registrar.", locked),
            _skill("upgrade-plan", "Upgrade the subscription plan to premium."),
            _skill("bake-bread", "Recipes for baking sourdough bread at home."),
        )
    )


@pytest.fixture()
def provider() -> MemoryStateProvider:
    return MemoryStateProvider(
        {
            "free": {"account": {"plan": "free"}, "domain": {"locked": True}},
            "paid": {"account": {"plan": "premium"}, "domain": {"locked": False}},
        },
        clock=lambda: NOW,
    )


def _pipeline(catalog: Catalog, provider: object, **kw: object) -> Pipeline:
    recaller = make_recaller("bm25", catalog)
    return Pipeline(catalog, recaller, provider, clock=lambda: NOW, **kw)  # type: ignore[arg-type]


def test_gate_hides_what_cannot_run(catalog: Catalog, provider: MemoryStateProvider) -> None:
    pipe = _pipeline(catalog, provider, cutoff=Cutoff(top_k=3, min_score=0.01))
    msg = "connect my domain name"
    free = pipe.route(Message("m1", msg, "free"))
    paid = pipe.route(Message("m2", msg, "paid"))
    assert "connect-domain" in {p.skill for p in free.record.pairs}
    assert "connect-domain" not in free.exposed and "connect-domain" in paid.exposed
    fired = {p.skill: p.fired for p in free.record.blocked}
    assert fired["connect-domain"][0].predicate == "on_free_plan"
    assert fired["connect-domain"][0].values == {"account.plan": "free"}


def test_unmatched_message_offers_nothing(catalog: Catalog, provider: MemoryStateProvider) -> None:
    pipe = _pipeline(catalog, provider, cutoff=Cutoff(top_k=3, min_score=0.5))
    turn = pipe.route(Message("m", "zzz qqq", "paid"))
    assert not turn.record.matched and turn.menu.skills == () and turn.gate is None


def test_family_mode_brings_whole_family(catalog: Catalog, provider: MemoryStateProvider) -> None:
    pipe = _pipeline(catalog, provider, cutoff=Cutoff(top_k=1, min_score=0.01), family_mode=True)
    turn = pipe.route(Message("m", "connect my domain name", "paid"))
    assert {p.skill for p in turn.record.pairs} == set(catalog.names)


def test_depth_limits_exposure(catalog: Catalog, provider: MemoryStateProvider) -> None:
    pipe = _pipeline(catalog, provider, cutoff=Cutoff(top_k=4), family_mode=True, depth=FixedK(1))
    turn = pipe.route(Message("m", "domain", "paid"))
    assert len(turn.exposed) == 1
    assert len(turn.record.visible) > 1


def test_menu_tokens_match_renderer(catalog: Catalog, provider: MemoryStateProvider) -> None:
    renderer = MenuRenderer(catalog, "anthropic")
    pipe = _pipeline(catalog, provider, cutoff=Cutoff(top_k=4), renderer=renderer)
    turn = pipe.route(Message("m", "domain plan", "paid"))
    assert turn.menu.tokens == sum(renderer.tokens(s) for s in turn.exposed)
    assert all(set(e) == {"name", "description", "input_schema"} for e in turn.menu.payload())


class _Broken:
    def fetch(self, account: str, keys: object) -> Snapshot:
        raise ProviderError("database unreachable")


def test_failing_provider_fails_closed(catalog: Catalog) -> None:
    pipe = _pipeline(catalog, _Broken(), cutoff=Cutoff(top_k=4), family_mode=True)
    turn = pipe.route(Message("m", "connect domain", "paid"))
    assert "database unreachable" in turn.record.provider_error
    blocked = {p.skill for p in turn.record.blocked}
    assert {"connect-domain", "transfer-domain"} <= blocked
    assert "upgrade-plan" in turn.exposed  # no predicates, nothing to fail


def test_run_logs_every_pair_and_funnel_adds_up(
    tmp_path: Path, catalog: Catalog, provider: MemoryStateProvider
) -> None:
    db = tmp_path / "log.sqlite"
    texts = ["connect my domain", "transfer domain please", "bake bread", "hello", "upgrade plan"]
    with open_log(db) as log:
        pipe = _pipeline(catalog, provider, cutoff=Cutoff(top_k=2, min_score=0.01), log=log)
        msgs = [Message(f"m{i}", t, "free" if i % 2 else "paid") for i, t in enumerate(texts * 4)]
        stats = pipe.run(msgs)
    f = funnel(str(db)).to_json()
    assert f["messages"] == stats.messages == 20
    assert f["candidate_pairs"] == stats.pairs
    assert f["blocked_pairs"] == stats.blocked <= f["candidate_pairs"]
    assert f["tokens_after_gate"] <= f["tokens_after_recall"] <= f["tokens_all_skills"]
    with open_log(db, read_only=True) as log:
        rows = log.query("SELECT COUNT(*) FROM pairs")
    assert rows[0][0] == f["candidate_pairs"]
    json.dumps(f)  # the funnel is JSON as it is


class _Halving:
    """A depth-rule double that exposes half and reports a probability per prefix."""

    name = "halving"

    def choose(self, ranked: object) -> int:
        return len(ranked) // 2  # type: ignore[arg-type]

    def prefix_probabilities(self, ranked: object) -> list[float]:
        n = len(ranked)  # type: ignore[arg-type]
        return [(i + 1) / n for i in range(n)]


def test_depth_estimates_are_logged_and_verified(
    tmp_path: Path, catalog: Catalog, provider: MemoryStateProvider
) -> None:
    import sqlite3

    from maitred.log import verify

    db = tmp_path / "log.sqlite"
    with open_log(db) as log:
        pipe = _pipeline(
            catalog, provider, cutoff=Cutoff(top_k=4), family_mode=True, depth=_Halving(), log=log
        )
        turn = pipe.route(Message("m1", "domain plan", "paid"))
        pipe.run([Message("m2", "bread", "free")])
    assert turn.record.depth_probs and len(turn.exposed) == len(turn.record.visible) // 2
    with open_log(db, read_only=True) as log:
        rows = list(log.iter_depth_decisions())
        assert verify(log).ok
    assert {r["turn_id"] for r in rows} == {turn.record.turn_id, f"{pipe.run_id}/m2"}
    first = next(r for r in rows if r["turn_id"] == turn.record.turn_id)
    assert json.loads(first["probs_json"]) == list(turn.record.depth_probs)
    assert first["k"] == len(turn.exposed)
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER depth_decisions_no_update")
    conn.execute("UPDATE depth_decisions SET k = k + 1")
    conn.commit()
    conn.close()
    report = verify(str(db))
    # the edited rows, and the trigger dropped to make the edit (verify reports both)
    assert not report.ok and {m.kind for m in report.mismatches} == {"depth_hash", "trigger"}


def test_a_turn_records_the_analyzer_and_embedder_recall_ran_with(
    catalog: Catalog, provider: MemoryStateProvider
) -> None:
    msg = Message("m1", "connect my domain name", "paid")
    lexical = _pipeline(catalog, provider).route(msg)
    assert lexical.record.recall_method == "bm25[analyzer=scripts]"
    words = Pipeline(
        catalog, make_recaller("bm25", catalog, analyzer="words"), provider, clock=lambda: NOW
    )
    assert words.route(msg).record.recall_method == "bm25[analyzer=words]"
    family = _pipeline(catalog, provider, family_mode=True).route(msg)
    assert family.record.recall_method == "bm25+family[analyzer=scripts]"
