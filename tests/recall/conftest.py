"""Shared fixtures for recall tests: small catalogs and cheap, deterministic embedders."""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

import numpy as np
import pytest
from numpy.typing import NDArray

from maitred.recall.dense import Progress
from maitred.skills.model import Catalog, Skill


class HashEmbedder:
    """Bag-of-words hashed into 64 dimensions: texts sharing words get close vectors."""

    model_id = "test-hash-64"
    dim = 64

    def encode(
        self, texts: Sequence[str], *, progress: Progress | None = None
    ) -> NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                out[row, zlib.crc32(word.encode()) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        if progress is not None:
            progress(len(texts), len(texts))
        unit: NDArray[np.float32] = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
        return unit


class CountingEmbedder:
    """Wraps an embedder and counts the texts it was asked to encode."""

    def __init__(self, inner: HashEmbedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.calls: list[int] = []

    def encode(
        self, texts: Sequence[str], *, progress: Progress | None = None
    ) -> NDArray[np.float32]:
        self.calls.append(len(texts))
        return self.inner.encode(texts, progress=progress)


@pytest.fixture
def catalog() -> Catalog:
    return Catalog(
        skills=(
            Skill(
                name="weather-forecast",
                description="Weather forecast, rain and temperature for a city",
                body="# Weather\n\nUse for **rain**, snow and wind questions.",
            ),
            Skill(
                name="currency_convert",
                description="Convert an amount of money between currencies",
                parameters={
                    "type": "object",
                    "properties": {
                        "fromCurrency": {"type": "string", "description": "ISO code to sell"},
                        "amount": {"type": "number"},
                    },
                },
            ),
            Skill(name="pdf-merge", description="Merge several PDF files into one", family="pdf"),
            Skill(name="pdf-split", description="Split a PDF document into pages", family="pdf"),
            Skill(name="pdf-fill", description="Fill the fields of a PDF form", family="pdf"),
            Skill(name="stock-quote", description="Latest stock price and market news"),
        )
    )


@pytest.fixture
def hash_embedder() -> HashEmbedder:
    return HashEmbedder()
