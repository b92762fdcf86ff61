import json
from pathlib import Path

import numpy as np
import pytest

from maitred.errors import ConfigError, IndexMismatchError
from maitred.recall.dense import (
    MINILM_ID,
    TOOLS_MODEL_DIR,
    DenseRecaller,
    MiniLMEmbedder,
    embed_fields,
    mix_fields,
)
from maitred.recall.vectors import VectorIndex, normalize_rows
from maitred.skills.model import Catalog

from .conftest import HashEmbedder


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder(batch_size=4)


@pytest.mark.model
def test_minilm_gives_unit_vectors(minilm: MiniLMEmbedder) -> None:
    texts = ["short", "a much longer sentence about the weather " * 20, "", "third text"]
    progress: list[tuple[int, int]] = []
    vectors = minilm.encode(texts, progress=lambda done, total: progress.append((done, total)))
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.linalg.norm(vectors, axis=1) == pytest.approx(np.ones(4), abs=1e-5)
    assert progress[-1] == (4, 4)


@pytest.mark.model
def test_minilm_related_sentences_score_higher(minilm: MiniLMEmbedder) -> None:
    query, related, unrelated = minilm.encode(
        [
            "Will it rain in Paris tomorrow?",
            "Weather forecast with rain and temperature for a city",
            "Convert an amount of money between currencies",
        ]
    )
    assert float(query @ related) > float(query @ unrelated) + 0.2


@pytest.mark.model
def test_minilm_batching_does_not_change_vectors(minilm: MiniLMEmbedder) -> None:
    texts = ["one", "two words", "three words here", "and a fourth, longer, sentence", "5"]
    together = minilm.encode(texts)
    alone = np.stack([minilm.encode([t])[0] for t in texts])
    assert together == pytest.approx(alone, abs=1e-4)


@pytest.mark.model
def test_dense_recall_with_the_real_model(catalog: Catalog, minilm: MiniLMEmbedder) -> None:
    recaller = DenseRecaller.build(catalog, minilm)
    assert recaller.rank("is it going to rain tomorrow?", 1)[0].name == "weather-forecast"


def test_blank_query_ranks_nothing(catalog: Catalog, hash_embedder: HashEmbedder) -> None:
    assert DenseRecaller.build(catalog, hash_embedder).rank("  ", 3) == []


def test_dense_candidates_carry_cosine(catalog: Catalog, hash_embedder: HashEmbedder) -> None:
    ranked = DenseRecaller.build(catalog, hash_embedder).rank("merge pdf files", 6)
    assert ranked[0].name == "pdf-merge"
    assert len(ranked) == 6
    assert all(c.components == {"dense": c.score} for c in ranked)
    assert [c.score for c in ranked] == sorted((c.score for c in ranked), reverse=True)


def test_field_mix_skips_empty_fields(catalog: Catalog, hash_embedder: HashEmbedder) -> None:
    fields = embed_fields(catalog, hash_embedder, ("description", "params"))
    assert not fields["params"][0].any()  # weather-forecast has no parameters
    mixed = mix_fields(fields, {"description": 1.0, "params": 1.0})
    assert np.linalg.norm(mixed, axis=1) == pytest.approx(np.ones(len(catalog)), abs=1e-5)


def _synthetic(n: int, dim: int = 32) -> np.ndarray:
    return normalize_rows(np.random.default_rng(7).normal(size=(n, dim)))


def test_ann_and_exact_agree_on_top1() -> None:
    vectors = _synthetic(500)
    exact = VectorIndex(vectors, kind="exact")
    ann = VectorIndex(vectors, kind="usearch")
    assert ann.kind == "usearch"
    rng = np.random.default_rng(1)
    for row in rng.choice(500, size=20, replace=False):
        query = normalize_rows(vectors[row] + 0.05 * rng.normal(size=32))
        (e_idx, e_sim), (a_idx, a_sim) = exact.search(query, 5), ann.search(query, 5)
        assert e_idx[0] == a_idx[0] == row
        assert a_sim[0] == pytest.approx(e_sim[0], abs=1e-5)


def test_threshold_chooses_the_index_kind() -> None:
    vectors = _synthetic(50)
    assert VectorIndex(vectors, ann_threshold=100).kind == "exact"
    assert VectorIndex(vectors, ann_threshold=10).kind == "usearch"


def test_ann_index_is_saved_and_loaded(tmp_path: Path) -> None:
    vectors = _synthetic(300)
    built = VectorIndex(vectors, kind="usearch")
    built.save(tmp_path)
    loaded = VectorIndex.load(tmp_path, kind="usearch")
    query = vectors[42]
    assert list(loaded.search(query, 3)[0]) == list(built.search(query, 3)[0])


def test_dense_recaller_forced_to_ann_ranks_like_exact(
    catalog: Catalog, hash_embedder: HashEmbedder
) -> None:
    exact = DenseRecaller.build(catalog, hash_embedder)
    ann = DenseRecaller.build(catalog, hash_embedder, ann_threshold=0)
    assert ann.index.kind == "usearch"
    assert ann.rank("split pdf pages", 1) == exact.rank("split pdf pages", 1)


def test_load_refuses_another_model(
    catalog: Catalog, hash_embedder: HashEmbedder, tmp_path: Path
) -> None:
    DenseRecaller.build(catalog, hash_embedder).save(tmp_path)

    class Other(HashEmbedder):
        model_id = "other-model"

    with pytest.raises(IndexMismatchError, match="other-model"):
        DenseRecaller.load(tmp_path, catalog, Other())


@pytest.mark.model
def test_tools_model_folder_loads_and_ranks(catalog: Catalog) -> None:
    tools = MiniLMEmbedder(batch_size=4, model_dir=TOOLS_MODEL_DIR)
    assert tools.model_id != MINILM_ID
    assert tools.model_id == json.loads((TOOLS_MODEL_DIR / "model.json").read_text())["model_id"]
    texts = ["Will it rain in Paris tomorrow?", "Convert 20 euros to dollars"]
    vectors = tools.encode(texts)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx(np.ones(2), abs=1e-5)
    # other weights: not the shipped model's vectors
    assert not np.allclose(vectors, MiniLMEmbedder(batch_size=4).encode(texts), atol=1e-3)
    recaller = DenseRecaller.build(catalog, tools)
    assert recaller.rank("is it going to rain tomorrow?", 1)[0].name == "weather-forecast"


@pytest.mark.model
def test_index_built_with_one_model_refuses_the_other(catalog: Catalog, tmp_path: Path) -> None:
    DenseRecaller.build(catalog, MiniLMEmbedder()).save(tmp_path)
    with pytest.raises(IndexMismatchError, match="tools"):
        DenseRecaller.load(tmp_path, catalog, MiniLMEmbedder(model_dir=TOOLS_MODEL_DIR))


def test_model_folder_without_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"has no model\.onnx"):
        MiniLMEmbedder(model_dir=tmp_path)


@pytest.mark.parametrize("meta", [None, "not json", '{"model_id": ""}', "[1]"])
def test_model_folder_needs_a_model_id(tmp_path: Path, meta: str | None) -> None:
    (tmp_path / "model.onnx").write_bytes(b"never read")
    if meta is not None:
        (tmp_path / "model.json").write_text(meta)
    with pytest.raises(ConfigError, match=r"model\.json"):
        MiniLMEmbedder(model_dir=tmp_path)


@pytest.mark.model
def test_tools_methods_use_the_tool_tuned_model(catalog: Catalog, tmp_path: Path) -> None:
    from maitred.recall.registry import make_recaller

    dense = make_recaller("dense-tools", catalog, cache_dir=tmp_path)
    fused = make_recaller("fused-tools", catalog, cache_dir=tmp_path)
    assert (dense.name, fused.name) == ("dense-tools", "fused-tools")
    tuned = json.loads((TOOLS_MODEL_DIR / "model.json").read_text())["model_id"]
    assert isinstance(dense, DenseRecaller) and dense.embedder.model_id == tuned
    assert fused.rank("is it going to rain tomorrow?", 1)[0].name == "weather-forecast"
    # the shipped model's index for the same catalog is another entry of the same cache
    plain = make_recaller("dense", catalog, cache_dir=tmp_path)
    assert isinstance(plain, DenseRecaller) and plain.embedder.model_id == MINILM_ID


def test_the_query_cache_is_safe_under_many_threads(
    catalog: Catalog, hash_embedder: HashEmbedder
) -> None:
    """Threads ranking at once through one recaller with a tiny cache (every text evicts
    another) all get their own, correct ranking and no error (the service and the gateway share
    one recaller across worker threads)."""
    import sys
    import threading

    rec = DenseRecaller.build(catalog, hash_embedder)
    rec = DenseRecaller(catalog, rec.index, hash_embedder, query_cache=2)
    texts = [f"refund order {i}" for i in range(3)]
    expected = {t: [c.name for c in rec.rank(t, 3)] for t in texts}
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def work(offset: int) -> None:
        try:
            start.wait()
            for i in range(1500):
                text = texts[(i + offset) % len(texts)]
                assert [c.name for c in rec.rank(text, 3)] == expected[text]
        except BaseException as exc:  # surfaced after join
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors
