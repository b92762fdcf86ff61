"""Choosing the read-out layer: hidden-state entropy per layer, and its floor.

For one text with token states X (``[T, H]``), the *matrix entropy* is the Shannon entropy of
the eigenvalue spectrum of its token Gram matrix normalised to unit trace::

    K = X X^T / trace(X X^T),   S(X) = - sum_i lambda_i log lambda_i   (lambda = eig(K))

S is high when the tokens spread over many directions and low when the layer has compressed
them onto a few. It is averaged over a sample of skill texts. The token with the largest norm
(the attention "sink", often hundreds of times larger than the rest) is left out of each text
first: otherwise it alone decides the spectrum, and S measures the sink rather than the
representation. (The template prefix, with the sequence's first token, is dropped already by
:class:`~maitred.native.backbone.Backbone`.)

The paper reads the layer where S reaches its floor (the "compression valley"). Its first and
last blocks are excluded from the choice: the first still mostly holds token embeddings, the last
is shaped for next-token prediction. On SmolLM2-135M the curve has no clean valley (the issue's
prototype saw dips near layers 10-11 and 20 and did best at 24); ``maitred native layers`` prints
the curve so the choice can be checked, and ``docs/native.md`` compares layers on routing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from maitred.errors import ConfigError
from maitred.native.backbone import Backbone


def matrix_entropy(states: NDArray[np.float32], *, drop_sink: bool = True) -> float:
    """The matrix entropy of one text's token states (nats), the top-norm token left out.

    Returns:
        ``S`` in ``[0, log T]``; 0.0 for fewer than two tokens.
    """
    x = states.astype(np.float64)
    if drop_sink and len(x) > 1:
        x = np.delete(x, int(np.argmax(np.linalg.norm(x, axis=1))), axis=0)
    if len(x) < 2:
        return 0.0
    eig = np.clip(np.linalg.eigvalsh(x @ x.T), 0.0, None)
    total = eig.sum()
    if total <= 0:
        return 0.0
    p = eig[eig > 0] / total
    return float(-(p * np.log(p)).sum())


def entropy_curve(
    backbone: Backbone, texts: Sequence[str], *, max_tokens: int = 96
) -> dict[int, float]:
    """Mean matrix entropy over ``texts`` at every kept layer, ``{layer: entropy}``.

    Load the backbone with ``keep_layers=num_layers`` to see the whole depth.
    """
    if not texts:
        raise ConfigError("the entropy curve needs at least one text")
    layers = list(range(1, len(backbone._body.layers) + 1))
    states = backbone.states_at(texts, layers, max_tokens=max_tokens)
    return {la: float(np.mean([matrix_entropy(s) for s in states[la]])) for la in layers}


def choose_layer(curve: Mapping[int, float]) -> int:
    """The layer at the entropy floor, first and last block excluded (when there are > 2)."""
    layers = sorted(curve)
    inner = layers[1:-1] if len(layers) > 2 else layers
    return min(inner, key=lambda la: (curve[la], la))


def plot_curve(curve: Mapping[int, float], chosen: int, path: Path, title: str) -> bool:
    """Draw the curve to a PNG with matplotlib (Agg). Returns False if matplotlib is absent."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    layers = sorted(curve)
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.plot(layers, [curve[la] for la in layers], marker="o", markersize=3)
    ax.axvline(chosen, color="tab:red", linestyle="--", label=f"floor: layer {chosen}")
    ax.set_xlabel("layer (output of decoder block)")
    ax.set_ylabel("matrix entropy (nats)")
    ax.set_title(title, fontsize=9)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
