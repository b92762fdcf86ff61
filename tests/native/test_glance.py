from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from maitred.errors import IndexMismatchError
from maitred.native.glance import GlanceMaps, KeyBank, unit_rows


def _states(seed: int, n: int, h: int = 8) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, h)).astype(np.float32)


def test_pca_maps_start_as_plain_cosine() -> None:
    tokens = _states(0, 200)
    maps = GlanceMaps.pca(tokens, 8, backbone_id="b", layer=3)
    z = (tokens[:5] - maps.mean) / maps.std
    cosine = unit_rows(z) @ unit_rows(z).T
    np.testing.assert_allclose(
        maps.queries(tokens[:5]) @ maps.keys(tokens[:5]).T, cosine, atol=1e-4
    )
    assert maps.meta["explained_variance"] == pytest.approx(1.0)


def test_raw_cosine_ablation_is_identity() -> None:
    tokens = _states(1, 50)
    maps = GlanceMaps.pca(tokens, 8, backbone_id="b", layer=3, standardise=False)
    np.testing.assert_allclose(maps.queries(tokens), unit_rows(tokens), atol=1e-6)


def test_maps_file_round_trip_and_mismatch(tmp_path: Path) -> None:
    maps = GlanceMaps.pca(_states(2, 60), 4, backbone_id="b", layer=3)
    path = tmp_path / "maps.npz"
    maps.save(path)
    back = GlanceMaps.load(path, backbone_id="b", layer=3)
    np.testing.assert_array_equal(back.w_key, maps.w_key)
    assert back.dim == 4 and back.meta["init"] == "pca"
    with pytest.raises(IndexMismatchError, match="layer"):
        GlanceMaps.load(path, layer=5)
    with pytest.raises(IndexMismatchError, match="backbone_id"):
        GlanceMaps.load(path, backbone_id="other")


def _bank() -> KeyBank:
    maps = GlanceMaps(
        np.zeros(2, np.float32),
        np.ones(2, np.float32),
        np.eye(2, dtype=np.float32),
        np.eye(2, dtype=np.float32),
        "b",
        1,
    )
    a = np.array([[1.0, 0.0], [0.9, 0.1]], np.float32)
    b = np.array([[0.0, 1.0]], np.float32)
    c = np.array([[0.7, 0.7]], np.float32)
    return KeyBank.build(["a", "b", "c"], [a, b, c], maps)


def test_max_sim_and_span_average() -> None:
    bank = _bank()
    q = unit_rows(np.array([[1.0, 0.0], [0.0, 1.0]], np.float32))
    m = bank.max_sim(q)
    assert m.shape == (2, 3)
    np.testing.assert_allclose(m[:, 0], [1.0, (q[1] @ unit_rows(np.array([[0.9, 0.1]]))[0])])
    np.testing.assert_allclose(bank.scores(q, top_k=None), m.mean(axis=0), atol=1e-6)


def test_token_votes_let_decisive_tokens_win() -> None:
    bank = _bank()
    # both tokens match c fairly well, but each is decisive for a or b: c wins the span
    # average, while with top-1 votes c gets nothing.
    q = unit_rows(np.array([[1.0, 0.0], [0.0, 1.0]], np.float32))
    span = bank.scores(q, top_k=None)
    votes = bank.scores(q, top_k=1)
    assert votes[2] < min(votes[0], votes[1])
    assert span.shape == votes.shape == (3,)
    assert bank.scores(q[:0]).tolist() == [0.0, 0.0, 0.0]


def test_compressed_bank_sizes() -> None:
    maps = GlanceMaps.pca(_states(3, 80), 8, backbone_id="b", layer=1)
    states = [_states(4, 30), _states(5, 10)]
    full = KeyBank.build(["x", "y"], states, maps)
    small = KeyBank.build(["x", "y"], states, maps, epsilon=1.2)
    assert full.sizes() == (40, 40)
    kept, total = small.sizes()
    assert total == 40 and 2 <= kept < 40
    q = maps.queries(_states(6, 7))
    assert np.all(small.max_sim(q) <= full.max_sim(q) + 1e-6)
    assert np.all(full.max_sim(q) - small.max_sim(q) <= 1.2 + 1e-5)
