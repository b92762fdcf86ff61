"""Same-backbone baselines: dense + verdict rerank, and progressive disclosure."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import torch

from maitred.errors import ConfigError
from maitred.native.baselines import (
    ProgressiveRecaller,
    RerankRecaller,
    calibrate_rerank,
    first_sentence,
    menu_text,
    menu_token_count,
)
from maitred.native.ruling import RulingWeights
from maitred.native.verdict import Verdict
from maitred.recall import registry
from maitred.recall.dense import DenseRecaller
from maitred.recall.evaluate import Query
from maitred.skills.model import Catalog, Skill

from ._fakes import HashEmbedder, tiny_by_default
from .conftest import tiny_model, tiny_tokenizer

SKILLS = (
    Skill("weather", "check the weather rain sun tomorrow in my city. and more", kind="tool"),
    Skill("refund", "refund money for an invoice", kind="tool"),
    Skill("dns", "publish site domain dns", kind="tool"),
    Skill("play music", "play a song", kind="tool"),  # two tokens
    Skill("book flight hotel", "book travel", kind="tool"),  # three tokens
    Skill("paper", "find the latest research paper", kind="tool"),
)
TASK = "will it rain tomorrow"


def progressive(catalog: Catalog | None = None, **kwargs: object) -> ProgressiveRecaller:
    return ProgressiveRecaller(
        catalog or Catalog(SKILLS), tiny_model(), tiny_tokenizer(), "tiny", device="cpu", **kwargs
    )  # type: ignore[arg-type]


def test_progressive_scores_every_name_as_the_whole_answer() -> None:
    rec = progressive()
    scores = rec.scores(TASK)
    assert scores.shape == (len(SKILLS),) and np.all(scores < 0)
    # the packed pass equals scoring each name alone after the whole prompt
    task = rec.tokenizer(TASK, add_special_tokens=False)["input_ids"]
    prompt = [*rec._head, *task, *rec._tail]
    for name, got in zip(rec._names, scores, strict=True):
        with torch.no_grad():
            logits = rec.model(input_ids=torch.tensor([[*prompt, *name, rec._end]])).logits[0]
        logp = torch.log_softmax(logits, dim=-1)
        want = sum(logp[len(prompt) - 1 + j, t].item() for j, t in enumerate([*name, rec._end]))
        assert abs(want - got) < 1e-4
    ranked = rec.rank(TASK, len(SKILLS))
    assert sorted(c.name for c in ranked) == sorted(s.name for s in SKILLS)  # a full ranking
    order = np.argsort(-scores, kind="stable")
    assert [c.name for c in ranked] == [SKILLS[i].name for i in order]


def test_progressive_bounded_top_k_is_exact() -> None:
    rec = progressive()
    scores = rec.scores("book a flight")
    for k in (1, 2, 4):
        want = [SKILLS[i].name for i in np.argsort(-scores, kind="stable")[:k]]
        assert [c.name for c in rec.rank("book a flight", k)] == want
    assert rec.rank("  ", 3) == []


def test_over_long_menu_cuts_descriptions(caplog: pytest.LogCaptureFixture) -> None:
    long = " ".join(["the weather rain sun tomorrow in my city"] * 6)
    catalog = Catalog(tuple(Skill(f"s{i}", long, kind="tool") for i in range(4)))
    with caplog.at_level(logging.WARNING):
        rec = progressive(catalog)  # the tiny model's context is 256 tokens
    assert rec.description_chars < 160 and "did not fit" in caplog.text
    assert rec.scores(TASK).shape == (4,)
    assert rec.menu_tokens == menu_token_count(
        catalog, rec.tokenizer, description_chars=rec.description_chars
    )
    assert rec.menu_tokens < menu_token_count(catalog, rec.tokenizer)
    with pytest.raises(ConfigError, match="even without descriptions"):
        progressive(catalog, context=40)


def test_menu_lists_each_skill_with_its_first_sentence() -> None:
    text = menu_text(Catalog(SKILLS))
    assert "- weather: check the weather rain sun tomorrow in my city." in text
    assert "and more" not in text and text.count("\n- ") == len(SKILLS)
    assert first_sentence("One. Two.", 0) == "" and first_sentence("a b c d", 3) == "a b"


def rerank(weights: dict[str, float], shortlist: int = 3) -> RerankRecaller:
    dense = DenseRecaller.build(Catalog(SKILLS), HashEmbedder())
    verdict = Verdict(tiny_model(), tiny_tokenizer(), "tiny", device="cpu")
    return RerankRecaller(
        dense,
        verdict,
        RulingWeights("native-rerank", weights, shortlist, "tiny"),
        shortlist=shortlist,
    )


def test_rerank_reorders_the_dense_shortlist_only() -> None:
    rec = rerank({"judgment": 1.0})
    dense = [c.name for c in rec.dense.rank(TASK, len(SKILLS))]
    ranked = rec.rank(TASK, len(SKILLS))
    assert sorted(c.name for c in ranked[:3]) == sorted(dense[:3])
    assert [c.name for c in ranked[3:]] == dense[3:]
    assert "judgment" in ranked[0].components and "dense" in ranked[0].components
    assert [c.rank for c in ranked] == list(range(1, len(SKILLS) + 1))
    _, experts = rec.experts(TASK)
    order = np.argsort(-experts["judgment"], kind="stable")
    assert ranked[0].name == dense[int(order[0])]
    with pytest.raises(ConfigError):
        rerank({"glance": 1.0})


def test_calibrate_rerank_searches_the_verdict_weights() -> None:
    rec = rerank({"judgment": 1.0})
    queries = [Query("1", TASK, ("weather",)), Query("2", "refund my invoice", ("refund",))]
    index = {s.name: i for i, s in enumerate(SKILLS)}
    got = calibrate_rerank(rec, queries, [{index[q.gold[0]]} for q in queries])
    assert got.method == "native-rerank" and got.n_queries == 2
    assert set(got.weights) == {"judgment", "likelihood"} and any(got.weights.values())


@pytest.mark.parametrize("method", ["native-rerank", "native-progressive"])
def test_baselines_resolve_through_the_registry(
    method: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tiny_by_default(monkeypatch, tmp_path)
    rec = registry.make_recaller(method, Catalog(SKILLS[:3]), embedder=HashEmbedder())
    assert rec.name == method
    assert sorted(c.name for c in rec.rank(TASK, 3)) == ["dns", "refund", "weather"]
