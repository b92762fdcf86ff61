import json
from pathlib import Path

import pytest

from maitred.errors import ConfigError, EmptyCatalogError, IndexMismatchError
from maitred.recall.bm25 import BM25Recaller
from maitred.recall.hybrid import HybridRecaller
from maitred.recall.registry import make_recaller, recaller_names
from maitred.recall.store import IndexStore
from maitred.skills.model import Catalog, Skill

from .conftest import CountingEmbedder, HashEmbedder


def test_registry_names_and_unknown_method(catalog: Catalog) -> None:
    # the native methods are listed whether or not the native extra was imported yet (test order)
    native = ("native", "native-glance", "native-progressive", "native-rerank")
    built_in = (
        "adaptive",
        "bm25",
        "bm25-plain",
        "dense",
        "dense-tools",
        "fused",
        "fused-tools",
        "hybrid",
    )
    assert recaller_names() == (*built_in, *native)
    with pytest.raises(ConfigError, match="choose one of adaptive, bm25, bm25-plain, dense,"):
        make_recaller("splade", catalog)


def test_empty_catalog_is_refused() -> None:
    with pytest.raises(EmptyCatalogError, match="nothing to recall"):
        make_recaller("bm25", Catalog(skills=()))


def test_make_recaller_passes_weights(catalog: Catalog) -> None:
    recaller = make_recaller("bm25", catalog, weights={"name": 2.0})
    assert isinstance(recaller, BM25Recaller)
    assert recaller.weights == {"name": 2.0, "description": 0.0, "body": 0.0, "params": 0.0}


def test_persisted_index_is_reused(catalog: Catalog, tmp_path: Path) -> None:
    first = CountingEmbedder(HashEmbedder())
    built = make_recaller("hybrid", catalog, cache_dir=tmp_path, embedder=first)
    assert sum(first.calls) >= len(catalog)  # embedded every skill

    second = CountingEmbedder(HashEmbedder())
    loaded = make_recaller("hybrid", catalog, cache_dir=tmp_path, embedder=second)
    assert second.calls == []  # nothing embedded to load
    assert isinstance(loaded, HybridRecaller)
    assert loaded.rank("convert money", 3) == built.rank("convert money", 3)
    assert second.calls == [1]  # only the query


def test_changed_catalog_is_rebuilt(catalog: Catalog, tmp_path: Path) -> None:
    make_recaller("dense", catalog, cache_dir=tmp_path, embedder=HashEmbedder())
    changed = Catalog(
        skills=(*catalog.skills[:-1], Skill(name="stock-quote", description="Share prices"))
    )
    counting = CountingEmbedder(HashEmbedder())
    recaller = make_recaller("dense", changed, cache_dir=tmp_path, embedder=counting)
    assert sum(counting.calls) >= len(changed)
    assert recaller.rank("share prices", 1)[0].name == "stock-quote"


def _tamper(store: IndexStore, catalog: Catalog, component: str, params: dict[str, str]) -> Path:
    folder = store.folder(catalog, component, params)
    meta = json.loads((folder / "index.json").read_text())
    meta["catalog_version"] = "c1:someothercatalog"
    (folder / "index.json").write_text(json.dumps(meta))
    return folder


def test_mismatched_stored_index_raises_on_load_and_is_rebuilt(
    catalog: Catalog, tmp_path: Path
) -> None:
    store = IndexStore(tmp_path)
    params = {"k": "v"}
    builds: list[int] = []

    def build() -> BM25Recaller:
        builds.append(1)
        return BM25Recaller.build(catalog)

    def load(folder: Path) -> BM25Recaller:
        return BM25Recaller.load(folder, catalog)

    def write(r: BM25Recaller, folder: Path) -> None:
        r.save(folder)

    store.load_or_build(catalog, "bm25", params, reader=load, build=build, writer=write)
    store.load_or_build(catalog, "bm25", params, reader=load, build=build, writer=write)
    assert len(builds) == 1

    _tamper(store, catalog, "bm25", params)
    with pytest.raises(IndexMismatchError, match="someothercatalog"):
        store.load(catalog, "bm25", params, load)
    store.load_or_build(catalog, "bm25", params, reader=load, build=build, writer=write)
    assert len(builds) == 2
    assert store.load(catalog, "bm25", params, load) is not None  # replaced by a good one


def test_save_leaves_no_temporary_folders(catalog: Catalog, tmp_path: Path) -> None:
    make_recaller("hybrid", catalog, cache_dir=tmp_path, embedder=HashEmbedder())
    leftovers = [p.name for p in tmp_path.rglob(".*")]
    assert leftovers == []
