"""Two processes saving the same recall index component at once (issue 12)."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

from maitred.recall.store import IndexStore
from maitred.skills.model import Catalog

PARAMS = {"k1": 1.5}


def _save(root: str, catalog: Catalog, start: float) -> str:
    """Save one component after ``start`` (both processes write at the same moment)."""
    time.sleep(max(0.0, start - time.time()))

    def writer(folder: Path) -> None:
        (folder / "part.txt").write_text("written", encoding="utf-8")
        time.sleep(0.3)  # the other process writes meanwhile

    return str(IndexStore(root).save(catalog, "bm25", PARAMS, writer, keep_existing=True))


def test_concurrent_saves_keep_one_complete_index_and_no_temporaries(
    catalog: Catalog, tmp_path: Path
) -> None:
    """Regression: the second saver moved the first's finished index aside (readers lost it)."""
    ctx = multiprocessing.get_context("spawn")
    start = time.time() + 3.0  # after both interpreters have imported maitred
    with ctx.Pool(2) as pool:
        got = pool.starmap(_save, [(str(tmp_path), catalog, start)] * 2)
    assert got[0] == got[1]
    final = Path(got[0])
    assert (final / "part.txt").read_text(encoding="utf-8") == "written"
    assert (final / "index.json").is_file()
    folders = [p for p in final.parent.iterdir() if p.is_dir()]
    assert folders == [final]


def test_a_complete_matching_index_is_kept_not_rewritten(catalog: Catalog, tmp_path: Path) -> None:
    store = IndexStore(tmp_path)
    first = store.save(catalog, "bm25", PARAMS, lambda f: (f / "part.txt").write_text("one"))
    marker = (first / "index.json").stat().st_ino
    stale = first.with_name(f".{first.name}.tmp-killed")  # a writer killed mid-way
    stale.mkdir()
    second = store.save(
        catalog, "bm25", PARAMS, lambda f: (f / "part.txt").write_text("two"), keep_existing=True
    )
    assert second == first
    assert (first / "part.txt").read_text() == "one"
    assert (first / "index.json").stat().st_ino == marker
    assert not stale.exists()
    store.save(catalog, "bm25", PARAMS, lambda f: (f / "part.txt").write_text("three"))
    assert (first / "part.txt").read_text() == "three"  # without keep_existing: replaced


def test_a_stored_index_that_cannot_be_read_is_replaced(catalog: Catalog, tmp_path: Path) -> None:
    """Its index.json matches, so only load_or_build knows it must not be kept."""
    store = IndexStore(tmp_path)
    folder = store.save(catalog, "bm25", PARAMS, lambda f: (f / "part.txt").write_text("bad"))

    def read(f: Path) -> str:
        text = (f / "part.txt").read_text()
        if text == "bad":
            raise ValueError("truncated index")
        return text

    def write(value: str, f: Path) -> None:
        (f / "part.txt").write_text(value)

    got = store.load_or_build(
        catalog, "bm25", PARAMS, reader=read, build=lambda: "good", writer=write
    )
    assert got == "good" and (folder / "part.txt").read_text() == "good"
    assert store.load(catalog, "bm25", PARAMS, read) == "good"
