from __future__ import annotations

import numpy as np
import pytest

from maitred.errors import ConfigError
from maitred.lab.native.train import TrainConfig, train_maps
from maitred.native.glance import GlanceMaps, KeyBank


def _task(seed: int) -> tuple[list[np.ndarray], list[int], list[np.ndarray]]:
    """Skills = noisy token clusters; queries share their skill's direction in a *minor* axis."""
    rng = np.random.default_rng(seed)
    h, n_skills = 16, 6
    centres = rng.normal(size=(n_skills, h)).astype(np.float32)
    skills = [c + 0.3 * rng.normal(size=(5, h)).astype(np.float32) for c in centres]
    gold = [i % n_skills for i in range(60)]
    queries = [centres[g] + 0.6 * rng.normal(size=(4, h)).astype(np.float32) for g in gold]
    return queries, gold, skills


def _hit1(
    maps: GlanceMaps, queries: list[np.ndarray], gold: list[int], skills: list[np.ndarray]
) -> float:
    bank = KeyBank.build([str(i) for i in range(len(skills))], skills, maps)
    top = [int(np.argmax(bank.scores(maps.queries(q), None))) for q in queries]
    return float(np.mean([t == g for t, g in zip(top, gold, strict=True)]))


def test_training_lowers_the_loss_and_keeps_shapes() -> None:
    queries, gold, skills = _task(0)
    init = GlanceMaps.pca(np.concatenate(skills + queries), 4, backbone_id="b", layer=2)
    losses: list[float] = []
    maps = train_maps(
        init,
        queries,
        gold,
        skills,
        TrainConfig(steps=60, lr=1e-2, batch=6),
        log=lambda step, loss: losses.append(loss),
    )
    assert len(losses) == 60
    assert np.mean(losses[-10:]) < np.mean(losses[:10])
    assert maps.w_query.shape == init.w_query.shape and maps.backbone_id == "b"
    assert maps.meta["train"]["steps"] == 60
    assert _hit1(maps, queries, gold, skills) >= _hit1(init, queries, gold, skills)


def test_zero_steps_is_the_init_and_negatives_are_needed() -> None:
    queries, gold, skills = _task(1)
    init = GlanceMaps.pca(np.concatenate(skills), 4, backbone_id="b", layer=2)
    same = train_maps(init, queries, gold, skills, TrainConfig(steps=0))
    np.testing.assert_array_equal(same.w_key, init.w_key)
    with pytest.raises(ConfigError):
        train_maps(init, queries[:2], [0, 0], skills, TrainConfig(steps=1))
