"""`evaluate_depth` refuses settings that define no figure, rather than failing inside numpy
(``n_boot=0`` was an IndexError) or returning ``NaN`` figures (``lam=nan``)."""

from __future__ import annotations

import pytest

from maitred.depth.payoff import DepthTask
from maitred.errors import ConfigError
from maitred.lab.depth.evaluate import evaluate_depth


@pytest.mark.parametrize(
    ("lam", "n_boot", "guard", "expected"),
    [
        (0.05, 0, None, "at least 1 bootstrap resample, got 0"),
        (float("nan"), 10, None, "the lambda must be a finite number >= 0, got nan"),
        (-0.1, 10, None, "the lambda must be a finite number >= 0, got -0.1"),
        (0.05, 10, float("inf"), "the sufficiency guard must be a finite number"),
    ],
)
def test_settings_that_define_no_figure_are_refused(
    train_tasks: list[DepthTask],
    lam: float,
    n_boot: int,
    guard: float | None,
    expected: str,
) -> None:
    with pytest.raises(ConfigError, match=expected.replace("(", r"\(")):
        evaluate_depth(train_tasks[:20], train_tasks[20:40], lam, n_boot=n_boot, guard=guard)
