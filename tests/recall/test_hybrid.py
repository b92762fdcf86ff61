import pytest

from maitred.errors import ConfigError
from maitred.recall.base import Cutoff
from maitred.recall.bm25 import BM25Recaller
from maitred.recall.dense import DenseRecaller
from maitred.recall.hybrid import HybridRecaller, rrf_scores
from maitred.skills.model import Catalog

from .conftest import HashEmbedder


def test_rrf_arithmetic() -> None:
    fused = rrf_scores({"bm25": ["a", "b", "c"], "dense": ["b", "d"]}, k=60)
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 63)
    assert fused["d"] == pytest.approx(1 / 62)
    assert rrf_scores({"x": ["a"]}, k=1)["a"] == pytest.approx(0.5)


def test_rrf_rejects_bad_k() -> None:
    with pytest.raises(ConfigError, match="k must be > 0"):
        rrf_scores({"x": ["a"]}, k=0)


@pytest.fixture
def hybrid(catalog: Catalog, hash_embedder: HashEmbedder) -> HybridRecaller:
    return HybridRecaller(BM25Recaller.build(catalog), DenseRecaller.build(catalog, hash_embedder))


def test_hybrid_scores_are_rrf_of_the_two_rankings(hybrid: HybridRecaller) -> None:
    text = "split pdf into pages"
    ranked = hybrid.rank(text, 6)
    lexical = [c.name for c in hybrid.bm25.rank(text, 100)]
    semantic = [c.name for c in hybrid.dense.rank(text, 100)]
    expected = rrf_scores({"bm25": lexical, "dense": semantic})
    assert ranked[0].name == "pdf-split"
    for cand in ranked:
        assert cand.score == pytest.approx(expected[cand.name])
        assert set(cand.components) == {"rrf", "bm25", "dense"}
        assert cand.components["rrf"] == cand.score


def test_hybrid_dense_component_is_cosine_even_without_bm25(hybrid: HybridRecaller) -> None:
    ranked = hybrid.rank("split pdf into pages", 6)
    cosines = {c.name: c.score for c in hybrid.dense.rank("split pdf into pages", 6)}
    for cand in ranked:
        assert cand.components["dense"] == pytest.approx(cosines[cand.name], abs=1e-6)
    assert any(c.components["bm25"] == 0.0 for c in ranked)


def test_cutoff_on_dense_thresholds_hybrid_results(hybrid: HybridRecaller) -> None:
    ranked = hybrid.rank("split pdf into pages", 6)
    kept = Cutoff(top_k=6, min_score=0.3, on="dense").apply(ranked)
    assert kept and len(kept) < len(ranked)
    assert all(c.components["dense"] >= 0.3 for c in kept)


def test_blank_query_ranks_nothing(hybrid: HybridRecaller) -> None:
    assert hybrid.rank("", 5) == []


def test_rank_batch_matches_rank(hybrid: HybridRecaller) -> None:
    texts = ["split pdf into pages", "", "convert money"]
    assert hybrid.rank_batch(texts, 4) == [hybrid.rank(t, 4) for t in texts]
    assert hybrid.dense.rank_batch(texts, 4) == [hybrid.dense.rank(t, 4) for t in texts]
    assert hybrid.bm25.rank_batch(texts, 4) == [hybrid.bm25.rank(t, 4) for t in texts]
