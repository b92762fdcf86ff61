"""Persisted recall indexes: build once per catalog version, load afterwards.

Building a dense index means embedding every skill (minutes for a large library); a BM25 index
is cheaper but not free. With a cache folder, each index component is stored under::

    <cache_dir>/<catalog version>/<component>-<parameter hash>/
        index.json       what it was built from: format, catalog version, component, parameters
        ...              the component's own files (bm25s arrays, vectors.npy, ann.usearch)

and loaded instead of rebuilt while the catalog's content hash (``Catalog.version``) and the
build parameters are unchanged. Any change to a skill changes the version, hence the folder: a
stale index is never even looked at. A folder whose ``index.json`` records another catalog
version or other parameters (copied or tampered with) is never used: :meth:`IndexStore.load`
raises :class:`~maitred.errors.IndexMismatchError`, and :meth:`IndexStore.load_or_build`
rebuilds it, with a warning.

Writes are atomic and safe under concurrency: a component is written into a temporary folder
beside its final place, under a lock on that place, and renamed into place only when complete
(``index.json`` last), so a crash or a concurrent builder never leaves a half-written index that a
later run would load, nor a temporary folder (see :mod:`maitred._atomic`).
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, TypeVar

from maitred._atomic import entry_lock, publish, sweep_temps, temp_prefix
from maitred._canonical import canonical_json, content_hash
from maitred.errors import IndexMismatchError, RecallError
from maitred.skills.model import Catalog

STORE_FORMAT: Final = "maitred-recall-index/1"
_META: Final = "index.json"

logger = logging.getLogger(__name__)

T = TypeVar("T")


def _short(version: str) -> str:
    return version.split(":", 1)[-1][:16]


class IndexStore:
    """Stored recall index components under one cache folder.

    Attributes:
        root: the cache folder.
    """

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def folder(self, catalog: Catalog, component: str, params: Mapping[str, Any]) -> Path:
        """Where the component built from ``catalog`` with ``params`` lives."""
        key = _short(content_hash({"component": component, "params": dict(params)}))[:12]
        return self.root / _short(catalog.version) / f"{component}-{key}"

    def load(
        self,
        catalog: Catalog,
        component: str,
        params: Mapping[str, Any],
        reader: Callable[[Path], T],
    ) -> T | None:
        """Load a stored component, or ``None`` when none is stored.

        Raises:
            IndexMismatchError: the stored folder records another catalog version, component,
                parameters or format.
        """
        folder = self.folder(catalog, component, params)
        meta_path = folder / _META
        if not meta_path.is_file():
            return None
        meta: dict[str, Any] = json.loads(meta_path.read_text(encoding="utf-8"))
        expected = self._meta(catalog, component, params)
        if canonical_json(meta) != canonical_json(expected):
            wrong = sorted(k for k in expected if meta.get(k) != expected[k])
            raise IndexMismatchError(
                f"stored {component} index {folder} does not match this catalog "
                f"(differs in: {', '.join(wrong) or 'extra keys'}; it records catalog "
                f"{meta.get('catalog_version')!r}, this catalog is {catalog.version!r}); "
                "delete the folder to rebuild it"
            )
        return reader(folder)

    def save(
        self,
        catalog: Catalog,
        component: str,
        params: Mapping[str, Any],
        writer: Callable[[Path], None],
        *,
        keep_existing: bool = False,
    ) -> Path:
        """Write a component atomically (temporary folder, then rename) and return its folder.

        Savers of the same component are serialised by the entry's lock. No temporary folder
        outlives the call, and leftovers of a killed writer of this entry are swept (see
        :mod:`maitred._atomic`).

        Args:
            keep_existing: keep a folder already there whose ``index.json`` matches (another
                process built the same index meanwhile) instead of replacing it; the writer is
                then not called. A folder that does not match is always replaced.
        """
        final = self.folder(catalog, component, params)
        meta = self._meta(catalog, component, params)

        def matches(folder: Path) -> bool:
            try:
                stored = json.loads((folder / _META).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return False
            return canonical_json(stored) == canonical_json(meta)

        with entry_lock(final):
            sweep_temps(final)
            if keep_existing and matches(final):
                return final
            tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(final), dir=final.parent))
            try:
                writer(tmp)
                (tmp / _META).write_text(
                    json.dumps(meta, indent=1, sort_keys=True), encoding="utf-8"
                )
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            publish(tmp, final, matches if keep_existing else lambda _: False)
        return final

    def load_or_build(
        self,
        catalog: Catalog,
        component: str,
        params: Mapping[str, Any],
        *,
        reader: Callable[[Path], T],
        build: Callable[[], T],
        writer: Callable[[T, Path], None],
    ) -> T:
        """Load the stored component, or build, store and return it.

        A stored component that does not match (another catalog version or parameters) or
        cannot be read is rebuilt and replaced, with a warning; it is never used. When none was
        stored and another process stores the same component first, its copy is kept.
        """
        broken = False
        try:
            loaded = self.load(catalog, component, params, reader)
        except (IndexMismatchError, RecallError, OSError, ValueError, KeyError) as exc:
            logger.warning("rebuilding the %s index: %s", component, exc)
            loaded, broken = None, True
        if loaded is not None:
            return loaded
        built = build()
        self.save(
            catalog,
            component,
            params,
            lambda folder: writer(built, folder),
            keep_existing=not broken,
        )
        return built

    @staticmethod
    def _meta(catalog: Catalog, component: str, params: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "format": STORE_FORMAT,
            "catalog_version": catalog.version,
            "component": component,
            "params": json.loads(canonical_json(dict(params))),
        }
