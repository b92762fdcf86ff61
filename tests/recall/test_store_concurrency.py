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

    return str(IndexStore(root).save(catalog, "bm25", PARAMS, writer))


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
    second = store.save(catalog, "bm25", PARAMS, lambda f: (f / "part.txt").write_text("two"))
    assert second == first
    assert (first / "part.txt").read_text() == "one"
    assert (first / "index.json").stat().st_ino == marker
    assert not stale.exists()
