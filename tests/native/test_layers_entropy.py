from __future__ import annotations

from pathlib import Path

import numpy as np

from maitred.native.backbone import Backbone
from maitred.native.layers import choose_layer, entropy_curve, matrix_entropy, plot_curve


def test_matrix_entropy_bounds_and_sink() -> None:
    rng = np.random.default_rng(0)
    spread = rng.normal(size=(20, 64)).astype(np.float32)
    assert 0.0 < matrix_entropy(spread) <= np.log(19) + 1e-9
    collapsed = np.tile(rng.normal(size=(1, 64)), (20, 1)).astype(np.float32)
    assert matrix_entropy(collapsed) < 1e-6
    with_sink = spread.copy()
    with_sink[0] *= 1000.0  # a massive activation alone would decide the spectrum
    assert matrix_entropy(with_sink, drop_sink=False) < 0.1
    assert matrix_entropy(with_sink) > 1.0
    assert matrix_entropy(spread[:1]) == 0.0


def test_choose_layer_skips_first_and_last() -> None:
    assert choose_layer({1: 0.1, 2: 2.0, 3: 1.5, 4: 0.0}) == 3
    assert choose_layer({1: 1.0, 2: 0.5}) == 2


def test_curve_on_the_tiny_model(tiny_backbone: Backbone, tmp_path: Path) -> None:
    curve = entropy_curve(tiny_backbone, ["check weather tomorrow in my city", "pay my invoice"])
    assert sorted(curve) == [1, 2, 3, 4]
    assert all(v >= 0 for v in curve.values())
    png = tmp_path / "curve.png"
    assert plot_curve(curve, choose_layer(curve), png, "tiny")
    assert png.stat().st_size > 0
