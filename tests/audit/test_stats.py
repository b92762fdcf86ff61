"""The Wilson interval against values worked by hand (z = 1.959963984540054 for 95%)."""

from __future__ import annotations

import math

import pytest

from maitred.stats import wilson_interval, z_for

Z = 1.959963984540054


def test_z_for_95_percent() -> None:
    assert z_for(0.95) == pytest.approx(Z, abs=1e-12)


def test_eight_of_ten() -> None:
    # p = 0.8, n = 10, z^2 = 3.841459: centre = (0.8 + 0.192073) / 1.384146 = 0.716740,
    # half = 1.959964 / 1.384146 * sqrt(0.016 + 0.009604) = 1.416009 * 0.160012 = 0.226578
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.490162, abs=1e-5)
    assert high == pytest.approx(0.943318, abs=1e-5)


def test_all_successes_keep_a_width() -> None:
    # x = n = 50: low = n / (n + z^2) = 50 / 53.841459 = 0.928652, high = 1
    low, high = wilson_interval(50, 50)
    assert low == pytest.approx(50 / (50 + Z * Z), abs=1e-9)
    assert high == 1.0


def test_no_successes_mirror_all_successes() -> None:
    low, high = wilson_interval(0, 50)
    assert low == 0.0
    assert high == pytest.approx(Z * Z / (50 + Z * Z), abs=1e-9)


def test_symmetric_half() -> None:
    # x = 5, n = 10: centre 0.5, half = z / (1 + z^2/n) * sqrt(0.025 + z^2/400)
    low, high = wilson_interval(5, 10)
    half = Z / (1 + Z * Z / 10) * math.sqrt(0.025 + Z * Z / 400)
    assert (low, high) == pytest.approx((0.5 - half, 0.5 + half), abs=1e-12)
    assert (low, high) == pytest.approx((0.236593, 0.763407), abs=1e-5)


def test_no_trials_knows_nothing() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(("x", "n", "confidence"), [(3, 2, 0.95), (-1, 5, 0.95), (1, 5, 1.0)])
def test_bad_arguments_are_refused(x: int, n: int, confidence: float) -> None:
    with pytest.raises(ValueError):
        wilson_interval(x, n, confidence)
