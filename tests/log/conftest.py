"""Fixtures for both log backends (real SQLite, real PostgreSQL through ``pg_schema`` from
tests/conftest.py: a schema per test, dropped afterwards)."""

from __future__ import annotations

from pathlib import Path

import pytest

from maitred.log import open_log

from .builders import Opener


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """open_log(...) bound to a fresh log on the parametrised backend."""
    if request.param == "sqlite":
        path = tmp_path / "log.db"
        return lambda **kw: open_log(path, **kw)
    url, schema = request.getfixturevalue("pg_schema")
    return lambda **kw: open_log(url, schema=schema, **kw)
