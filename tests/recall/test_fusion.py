import numpy as np
import pytest

from maitred.errors import ConfigError
from maitred.recall.base import Cutoff
from maitred.recall.bm25 import BM25Recaller
from maitred.recall.dense import DenseRecaller
from maitred.recall.fusion import FusedRecaller, lexical_scale, semantic_scale
from maitred.skills.model import Catalog, Skill

from .conftest import HashEmbedder


def _fused(catalog: Catalog, embedder: HashEmbedder, weight: float = 0.3) -> FusedRecaller:
    return FusedRecaller(
        BM25Recaller.build(catalog), DenseRecaller.build(catalog, embedder), lexical_weight=weight
    )


def test_scales_map_each_query_to_zero_one() -> None:
    assert lexical_scale(np.array([0.0, 2.0, 4.0], dtype=np.float32)).tolist() == [0, 0.5, 1]
    assert lexical_scale(np.zeros(3, dtype=np.float32)).tolist() == [0, 0, 0]
    cos = np.array([0.1, 0.3, 0.5], dtype=np.float32)
    assert semantic_scale(cos, 0.3) == pytest.approx([0.0, 0.0, 1.0])
    assert semantic_scale(cos, 0.1) == pytest.approx([0.0, 0.5, 1.0])
    assert semantic_scale(np.full(2, 0.4, dtype=np.float32), 0.4).tolist() == [0, 0]


def test_fused_score_is_the_weighted_mix(catalog: Catalog, hash_embedder: HashEmbedder) -> None:
    fused = _fused(catalog, hash_embedder)
    text = "split pdf into pages"
    ranked = fused.rank(text, 6)
    lexical = lexical_scale(fused.bm25.scores(text))
    query = fused.dense.query_vector(text)
    assert query is not None
    cosines = fused.dense.index.cosines(query, np.arange(len(catalog)))
    semantic = semantic_scale(cosines, float(cosines.min()))  # 6 skills: the least similar
    row = {name: i for i, name in enumerate(catalog.names)}
    assert ranked[0].name == "pdf-split"
    for cand in ranked:
        i = row[cand.name]
        assert cand.score == pytest.approx(0.3 * lexical[i] + 0.7 * semantic[i], abs=1e-6)
        assert set(cand.components) == {"fused", "bm25", "dense"}
        assert cand.components["dense"] == pytest.approx(float(cosines[i]), abs=1e-6)
    assert [c.score for c in ranked] == sorted((c.score for c in ranked), reverse=True)


def test_the_weight_ends_are_the_two_methods(catalog: Catalog, hash_embedder: HashEmbedder) -> None:
    text = "convert money between currencies"
    only_dense = _fused(catalog, hash_embedder, 0.0).rank(text, 3)
    only_bm25 = _fused(catalog, hash_embedder, 1.0).rank(text, 1)
    dense = DenseRecaller.build(catalog, hash_embedder).rank(text, 3)
    assert [c.name for c in only_dense][:1] == [c.name for c in dense][:1]
    assert only_bm25[0].name == BM25Recaller.build(catalog).rank(text, 1)[0].name


def test_a_query_without_known_words_is_ranked_by_dense_alone(hash_embedder: HashEmbedder) -> None:
    # "xyzzy" is no word of the catalog: BM25 has no evidence, the dense half decides
    catalog = Catalog(
        skills=(Skill(name="alpha", description="xyzzy plugh"), Skill(name="beta", description="b"))
    )
    ranked = _fused(catalog, hash_embedder).rank("plugh", 2)
    assert ranked[0].name == "alpha"
    assert _fused(catalog, hash_embedder).rank("   ", 2) == []


def test_dense_floor_cutoff_applies(catalog: Catalog, hash_embedder: HashEmbedder) -> None:
    ranked = _fused(catalog, hash_embedder).rank("split pdf into pages", 6)
    kept = Cutoff(top_k=6, min_score=0.2, on="dense").apply(ranked)
    assert kept and all(c.components["dense"] >= 0.2 for c in kept)
    assert len(kept) < len(ranked)


def test_batch_matches_single(catalog: Catalog, hash_embedder: HashEmbedder) -> None:
    fused = _fused(catalog, hash_embedder)
    texts = ["merge pdf files", "rain tomorrow", ""]
    assert fused.rank_batch(texts, 4) == [fused.rank(t, 4) for t in texts]


def test_bad_settings_are_config_errors(catalog: Catalog, hash_embedder: HashEmbedder) -> None:
    other = Catalog(skills=(Skill(name="x", description="something else"),))
    with pytest.raises(ConfigError, match="same catalog"):
        FusedRecaller(BM25Recaller.build(catalog), DenseRecaller.build(other, hash_embedder))
    with pytest.raises(ConfigError, match=r"in \[0, 1\]"):
        _fused(catalog, hash_embedder, 1.5)
