"""``adaptive`` recall: each half weighed by how far its best skills stand out in the catalog."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from maitred.build import COMPONENTS
from maitred.errors import ConfigError
from maitred.recall import make_recaller
from maitred.recall.adaptive import POWER, AdaptiveRecaller, standout, weigh
from maitred.recall.base import Cutoff
from maitred.recall.bm25 import BM25Recaller
from maitred.recall.dense import DenseRecaller, Progress
from maitred.recall.evaluate import evaluate_routing, load_queries
from maitred.recall.fusion import FusedRecaller
from maitred.skills.catalog import load_catalog
from maitred.skills.model import Catalog, Skill

from .conftest import HashEmbedder

SAMPLES = Path(__file__).resolve().parents[2] / "benchmarks" / "sets"


def _adaptive(catalog: Catalog, embedder: object, weight: float = 0.3) -> AdaptiveRecaller:
    return AdaptiveRecaller(
        BM25Recaller.build(catalog),
        DenseRecaller.build(catalog, embedder),  # type: ignore[arg-type]
        lexical_weight=weight,
    )


def _share(bm25: NDArray[np.floating], cosines: NDArray[np.floating], a: float = 0.35) -> float:
    """The lexical share of one query whose every skill is in the pool."""
    lex = np.asarray(bm25, dtype=np.float32)
    cos = np.asarray(cosines, dtype=np.float32)
    pool = np.arange(len(lex), dtype=np.intp)
    return weigh(lex, pool, cos, float(cos.mean()), float(cos.std())).lexical_share(a)


def test_standout_counts_deviations_above_the_mean_and_floors_at_zero() -> None:
    assert standout(np.array([3.0, 1.0, -1.0]), 1.0, 2.0).tolist() == [1.0, 0.0, 0.0]
    assert standout(np.array([0.5, 0.5]), 0.5, 0.0).tolist() == [0.0, 0.0]  # a flat half
    # a power above 1 widens the gap between a clear standout and a near-mean score
    assert standout(np.array([7.0, 3.0]), 1.0, 2.0, 2.0).tolist() == [9.0, 1.0]


# the constructed distributions below: 40 skills; one query each


def test_a_peaked_lexical_half_gets_more_say_than_a_spread_one() -> None:
    cosines = np.linspace(0.2, 0.6, 40)
    peaked = np.zeros(40)
    peaked[7] = 9.0  # a rare word that only one skill shares
    spread = np.linspace(8.0, 9.0, 40)  # common words every skill shares about as much
    assert _share(peaked, cosines) > 0.6 > _share(spread, cosines)


def test_a_crowded_dense_half_gets_less_say_than_a_distinct_one() -> None:
    bm25 = np.zeros(40)
    bm25[:4] = [6.0, 5.0, 4.0, 3.0]
    crowded = np.full(40, 0.50)
    crowded[:10] = np.linspace(0.52, 0.55, 10)  # ten tools look alike to the embedding
    distinct = np.full(40, 0.20)
    distinct[0] = 0.80  # one tool stands far out
    assert _share(bm25, crowded) > _share(bm25, distinct)


def test_the_share_moves_while_a_fixed_mix_would_not() -> None:
    rng = np.random.default_rng(3)
    cosines = rng.normal(0.4, 0.05, 40)
    shares = []
    for matched in (1, 5, 20):  # how many skills share the query's words
        bm25 = np.zeros(40)
        bm25[:matched] = np.linspace(5.0, 4.0, matched)
        shares.append(_share(bm25, cosines))
    shares.append(_share(np.full(40, 4.0), cosines))  # every skill matches alike: no evidence
    assert shares == sorted(shares, reverse=True)
    assert shares[0] > 0.5 and shares[-1] == 0.0


def test_no_lexical_evidence_leaves_the_dense_half_alone() -> None:
    assert _share(np.zeros(40), np.linspace(0.1, 0.9, 40)) == 0.0
    assert _share(np.linspace(1, 2, 40), np.full(40, 0.3)) == 1.0  # a flat dense half


def test_the_score_is_the_mix_of_catalog_standouts(
    catalog: Catalog, hash_embedder: HashEmbedder
) -> None:
    recaller = _adaptive(catalog, hash_embedder, 0.4)
    text = "split pdf into pages"
    ranked = recaller.rank(text, 6)
    bm25 = recaller.bm25.scores(text).astype(np.float64)
    query = recaller.dense.query_vector(text)
    assert query is not None
    cosines = recaller.dense.index.cosines(query, np.arange(len(catalog))).astype(np.float64)
    # computed here over every skill, not from the recaller's second moments
    lexical = np.maximum((bm25 - bm25.mean()) / bm25.std(), 0) ** POWER
    semantic = np.maximum((cosines - cosines.mean()) / cosines.std(), 0) ** POWER
    row = {name: i for i, name in enumerate(catalog.names)}
    assert ranked[0].name == "pdf-split"
    for cand in ranked:
        i = row[cand.name]
        assert cand.score == pytest.approx(0.4 * lexical[i] + 0.6 * semantic[i], abs=1e-5)
        assert set(cand.components) == {"adaptive", "bm25", "dense"} == COMPONENTS["adaptive"]
        assert cand.components["dense"] == pytest.approx(cosines[i], abs=1e-6)
    assert [c.score for c in ranked] == sorted((c.score for c in ranked), reverse=True)


def test_the_weight_ends_are_the_two_methods(catalog: Catalog, hash_embedder: HashEmbedder) -> None:
    text = "convert money between currencies"
    dense = DenseRecaller.build(catalog, hash_embedder).rank(text, 3)
    only_dense = _adaptive(catalog, hash_embedder, 0.0).rank(text, 3)
    assert [c.name for c in only_dense] == [c.name for c in dense]
    only_bm25 = _adaptive(catalog, hash_embedder, 1.0).rank(text, 1)
    assert only_bm25[0].name == BM25Recaller.build(catalog).rank(text, 1)[0].name


def test_without_known_words_dense_decides_and_blank_is_empty(hash_embedder: HashEmbedder) -> None:
    catalog = Catalog(
        skills=(Skill(name="alpha", description="xyzzy plugh"), Skill(name="beta", description="b"))
    )
    assert _adaptive(catalog, hash_embedder).rank("plugh", 2)[0].name == "alpha"
    assert _adaptive(catalog, hash_embedder).rank("   ", 2) == []


def test_dense_floor_cutoff_and_batch(catalog: Catalog, hash_embedder: HashEmbedder) -> None:
    recaller = _adaptive(catalog, hash_embedder)
    ranked = recaller.rank("split pdf into pages", 6)
    kept = Cutoff(top_k=6, min_score=0.2, on="dense").apply(ranked)
    assert kept and all(c.components["dense"] >= 0.2 for c in kept) and len(kept) < len(ranked)
    texts = ["merge pdf files", "rain tomorrow", ""]
    assert recaller.rank_batch(texts, 4) == [recaller.rank(t, 4) for t in texts]


def test_bad_settings_are_config_errors(catalog: Catalog, hash_embedder: HashEmbedder) -> None:
    other = Catalog(skills=(Skill(name="x", description="something else"),))
    with pytest.raises(ConfigError, match="same catalog"):
        AdaptiveRecaller(BM25Recaller.build(catalog), DenseRecaller.build(other, hash_embedder))
    with pytest.raises(ConfigError, match=r"in \[0, 1\]"):
        _adaptive(catalog, hash_embedder, -0.1)
    with pytest.raises(ConfigError, match="power"):
        AdaptiveRecaller(
            BM25Recaller.build(catalog), DenseRecaller.build(catalog, hash_embedder), power=9.0
        )
    with pytest.raises(ConfigError, match="depth"):
        AdaptiveRecaller(
            BM25Recaller.build(catalog), DenseRecaller.build(catalog, hash_embedder), depth=0
        )


class NoiseEmbedder:
    """A dense half that cannot tell tools apart: each distinct text -> its own random vector."""

    model_id = "test-noise-32"
    dim = 32

    def encode(
        self, texts: Sequence[str], *, progress: Progress | None = None
    ) -> NDArray[np.float32]:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(self.dim)
            rows.append(v / np.linalg.norm(v))
        return np.asarray(rows, dtype=np.float32)


def _word_catalog(n: int) -> tuple[Catalog, list[str]]:
    """``n`` tools, each with one word of its own among words every tool shares."""
    words = [f"{w}{i}" for i, w in enumerate(re.findall(r"\w+", "alpha " * n))]
    skills = tuple(
        Skill(name=f"tool-{i}", description=f"handle {words[i]} records for the team")
        for i in range(n)
    )
    return Catalog(skills=skills), words


def test_a_useless_dense_half_does_not_drag_the_ranking_down() -> None:
    # the failure a fixed weight has on a catalog whose embedding is weak: the lexical half
    # knows the answer, the dense half is noise and still gets a full vote in ``fused``
    catalog, words = _word_catalog(60)
    bm25 = BM25Recaller.build(catalog)
    dense = DenseRecaller.build(catalog, NoiseEmbedder())
    adaptive, fused = AdaptiveRecaller(bm25, dense), FusedRecaller(bm25, dense)
    texts = [f"please handle {w} now" for w in words]
    hits = {
        name: sum(r.rank(t, 1)[0].name == f"tool-{i}" for i, t in enumerate(texts))
        for name, r in (("adaptive", adaptive), ("fused", fused), ("bm25", bm25))
    }
    assert hits["bm25"] == 60
    assert hits["adaptive"] == 60 > hits["fused"]


def test_make_recaller_builds_it_and_routes_a_public_sample(tmp_path: Path) -> None:
    # end to end on the committed BFCL sample with the shipped MiniLM, as `eval routing` runs it
    catalog = load_catalog([SAMPLES / "bfcl" / "sample" / "tools.jsonl"])
    queries = load_queries(SAMPLES / "bfcl" / "sample" / "queries.jsonl")
    recaller = make_recaller("adaptive", catalog, cache_dir=tmp_path)
    assert isinstance(recaller, AdaptiveRecaller) and recaller.name == "adaptive"
    result = evaluate_routing(recaller, queries, "adaptive")
    plain = evaluate_routing(make_recaller("bm25-plain", catalog), queries, "bm25-plain")
    assert result["n_queries"] == 12
    assert result["recall_at_10"] >= 0.8
    assert result["ndcg_at_10"] >= plain["ndcg_at_10"] - 0.05
