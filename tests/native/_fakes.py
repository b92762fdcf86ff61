"""Test doubles for native tests: a bag-of-words embedder and the tiny LM as the default."""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from maitred.native import backbone as backbone_module

from .conftest import tiny_model, tiny_tokenizer


class HashEmbedder:
    """Words hashed into 64 dimensions: texts sharing words get close vectors."""

    model_id = "test-hash-64"
    dim = 64

    def encode(
        self, texts: Sequence[str], *, progress: Callable[[int, int], None] | None = None
    ) -> NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                out[row, zlib.crc32(word.encode()) % self.dim] += 1.0
        norms = np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return (out / norms).astype(np.float32)


def tiny_by_default(monkeypatch: pytest.MonkeyPatch, cache_dir: Any) -> None:
    """Make ``load_causal_lm`` return the tiny model, and the cache (maps, weights) empty."""
    monkeypatch.setenv("MAITRED_CACHE_DIR", str(cache_dir))
    monkeypatch.setattr(
        backbone_module,
        "load_causal_lm",
        lambda *a, **k: (tiny_model(), tiny_tokenizer(), "tiny@test"),
    )
