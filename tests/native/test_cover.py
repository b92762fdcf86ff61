from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maitred.errors import ConfigError
from maitred.native.cover import epsilon_cover
from maitred.native.glance import unit_rows


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 40),
    dim=st.integers(2, 12),
    eps=st.floats(0.0, 1.5),
)
def test_max_sim_drops_by_at_most_epsilon_and_never_rises(
    seed: int, n: int, dim: int, eps: float
) -> None:
    rng = np.random.default_rng(seed)
    keys = unit_rows(rng.normal(size=(n, dim)))
    queries = unit_rows(rng.normal(size=(16, dim)))
    kept = epsilon_cover(keys, eps)
    full = (queries @ keys.T).max(axis=1)
    cover = (queries @ keys[kept].T).max(axis=1)
    assert np.all(cover <= full + 1e-6)
    assert np.all(full - cover <= eps + 1e-5)
    # every key is covered, and kept keys are epsilon-separated
    dist = np.linalg.norm(keys[:, None] - keys[kept][None], axis=2)
    assert np.all(dist.min(axis=1) <= eps + 1e-6)
    if len(kept) > 1:
        between = np.linalg.norm(keys[kept][:, None] - keys[kept][None], axis=2)
        assert between[~np.eye(len(kept), dtype=bool)].min() > eps


def test_duplicates_collapse_and_bad_epsilon() -> None:
    keys = unit_rows(np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    assert epsilon_cover(keys, 0.0).tolist() == [0, 2]
    assert epsilon_cover(keys, 2.0).tolist() == [0]
    assert epsilon_cover(keys[:0], 0.1).size == 0
    with pytest.raises(ConfigError):
        epsilon_cover(keys, -1.0)
