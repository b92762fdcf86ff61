"""Hot reload: the catalog files are watched, and a valid change is swapped in whole.

The :class:`Reloader` polls the files the catalog came from every ``reload.interval_s``
seconds (no file-watching dependency: a fingerprint of sizes and modification times is cheap
for the tens of files a deployment has). Watched are the catalog entries of the config:

* a tools file (``tools.json``) and its contract sidecar (``tools.maitred.yaml``);
* a skill folder, or a folder of them: every ``SKILL.md`` and ``maitred.yaml`` below it (so a
  skill added, edited or removed is seen).

On a change it builds a **whole new engine** -- the catalog loaded in strict terms, its recall
index, its gates -- over the live engine's state provider, decision log, options and clock,
*before* the live engine is touched:

* **Valid:** :meth:`Service.swap <maitred.serve.service.Service.swap>` replaces the engine
  under the service's lock, so every request runs on the old engine or on the new one, never on
  none and never on half of each. Counted as ``maitred_reloads_total{outcome="applied"}``.
* **Invalid** (any :class:`~maitred.errors.MaitredError`: a broken contract sidecar, a
  ``SKILL.md`` that breaks the spec, two tools of one name...): the old engine keeps serving,
  one log line (logger ``maitred.serve``) names the changed files and the error, the error is
  shown on ``/readyz`` until a later reload succeeds, and
  ``maitred_reloads_total{outcome="rejected"}`` counts it. The same files are not retried until
  they change again.

A change is read only once it holds still: the fingerprint must be the same ``SETTLE_S``
after it was seen, and again after the new engine was built from the files. A file rewritten
in place (truncated, then written) is otherwise readable half-written -- and a torn sidecar can
be a valid one that lacks rules, a tool loaded without its exit predicates. A change that is
still moving is looked at again on the next tick. (Writing the new file beside the old and
renaming it over is still the way to change a deployment's files.)

Why strict: start-up loads leniently (a broken skill is skipped and logged, the rest serves),
but a reload that skipped a skill would silently withdraw it from a running server. A change
is therefore taken whole or not at all.

The decision log is shared, never reopened or closed by a reload, and the service keeps each
tenant's run id: turns after a reload continue the same runs (each turn records the catalog
version it was routed with).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from maitred.contract.sidecar import SIDECAR
from maitred.contract.tool_sidecar import sidecar_for
from maitred.engine import Maitred
from maitred.serve.config import ServeConfig
from maitred.serve.service import Service
from maitred.skills.catalog import load_catalog
from maitred.skills.tools import TOOL_SUFFIXES

_log = logging.getLogger("maitred.serve")
_SKILL_FILES = frozenset({"SKILL.md", SIDECAR})
#: how long a change must hold still before it is read: a file rewritten in place is empty or
#: half there between its truncation and the writer's last byte, and a sidecar read in that
#: window could be valid and lack rules (a tool loaded without its exit predicates)
SETTLE_S = 0.05
Fingerprint = dict[str, tuple[int, int]]


def watched_files(catalogs: Iterable[str]) -> list[Path]:
    """The files whose change means the catalog may have changed (existing or not)."""
    out: list[Path] = []
    for entry in catalogs:
        path = Path(entry)
        if path.is_dir():
            for dirpath, _dirs, files in os.walk(path):
                out.extend(Path(dirpath) / f for f in sorted(files) if f in _SKILL_FILES)
        elif path.suffix.lower() in TOOL_SUFFIXES:
            out.extend([path, sidecar_for(path)])
        elif path.name == "SKILL.md":
            out.extend([path, path.with_name(SIDECAR)])
        else:
            out.append(path)
    return out


def fingerprint(catalogs: Iterable[str]) -> Fingerprint:
    """Path -> (size, mtime in ns) of every watched file that exists now."""
    out: Fingerprint = {}
    for path in watched_files(catalogs):
        try:
            info = path.stat()
        except OSError:
            continue  # absent (or unreadable): its absence is the fingerprint
        out[str(path)] = (info.st_size, info.st_mtime_ns)
    return out


class Reloader:
    """Watches a service's catalog files and swaps in a new engine when they change.

    Args:
        service: the live service (its engine is replaced on a valid change).
        config: the server config (catalog paths, options, settings, cache dir, interval).

    Call :meth:`check` to look once (tests do), or :meth:`start` for a daemon thread that looks
    every ``config.reload_interval_s`` seconds until :meth:`stop`.
    """

    def __init__(self, service: Service, config: ServeConfig) -> None:
        self.service = service
        self.config = config
        self._seen = fingerprint(config.catalogs)
        self._busy = threading.Lock()  # one reload at a time, whoever calls check()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check(self) -> str | None:
        """Look at the files once; reload when they changed.

        Returns:
            ``"applied"``, ``"rejected"``, or ``None`` when nothing changed.
        """
        with self._busy:
            now = fingerprint(self.config.catalogs)
            if now == self._seen:
                return None
            time.sleep(SETTLE_S)
            if fingerprint(self.config.catalogs) != now:
                return None  # still being written: look again on the next tick
            changed = sorted(
                k for k in now.keys() | self._seen.keys() if now.get(k) != self._seen.get(k)
            )
            try:
                engine = self._build()
                if fingerprint(self.config.catalogs) != now:
                    return None  # written to while it was read: built from a torn copy
                self._seen = now
                self.service.swap(engine)  # builds its menu renderers first, then swaps
            except Exception as exc:  # a MaitredError, or a bug: either way the old set stays
                self._seen = now
                error = f"{type(exc).__name__}: {exc}"
                _log.error(
                    "catalog reload rejected (changed: %s); the old catalog keeps serving: %s",
                    ", ".join(changed),
                    error,
                )
                self.service.reload_rejected(error)
                return "rejected"
            _log.info(
                "catalog reloaded (changed: %s): version %s, %d skills and tools",
                ", ".join(changed),
                engine.catalog.version,
                len(engine.catalog),
            )
            return "applied"

    def _build(self) -> Maitred:
        """A whole new engine over the live one's provider, log and clock."""
        live = self.service.engine
        catalog = load_catalog(
            list(self.config.catalogs), strict=True, settings=self.config.settings
        )
        return Maitred.open(
            catalog,
            live.provider,
            self.config.options,
            log=live.log,  # the open log object: shared, and not owned by the new engine
            cache_dir=self.config.cache_dir,
            clock=live.pipeline.clock,
            clock_skew_s=live.pipeline.executability_gate.clock_skew_s,
        )

    # -- the polling thread -------------------------------------------------------------------

    def start(self) -> None:
        """Poll in a daemon thread (idempotent)."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="maitred-reload", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop polling and wait for a reload in progress to finish."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.wait(self.config.reload_interval_s):
            self.check()
