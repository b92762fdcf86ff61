"""Settings and the environment, read in one place.

Environment variables (all optional):

* ``MAITRED_CACHE_DIR`` -- where persisted recall indexes live (default ``.maitred-cache``);
* ``MAITRED_LOG`` -- the decision log used when ``--log`` is not given
  (default ``maitred-decisions.sqlite``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Settings:
    """Process-wide defaults; commands and the library take them as arguments."""

    cache_dir: Path
    log: str

    @classmethod
    def from_env(cls) -> Settings:
        return cls(
            cache_dir=Path(os.environ.get("MAITRED_CACHE_DIR", ".maitred-cache")),
            log=os.environ.get("MAITRED_LOG", "maitred-decisions.sqlite"),
        )
