"""Fixtures for both log backends (real SQLite, real PostgreSQL).

PostgreSQL tests use the server at ``MAITRED_TEST_PG_URL`` (default
``postgresql://root@127.0.0.1:5432/test``, then user ``postgres``), each in its own schema,
dropped afterwards; they are skipped, saying why, only when no server answers.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from maitred.log import open_log

from .builders import Opener

PG_URLS = (
    [os.environ["MAITRED_TEST_PG_URL"]]
    if os.environ.get("MAITRED_TEST_PG_URL")
    else ["postgresql://root@127.0.0.1:5432/test", "postgresql://postgres@127.0.0.1:5432/test"]
)


def _pg_reachable() -> str | None:
    try:
        import psycopg
    except ImportError:
        return None
    for url in PG_URLS:
        try:
            psycopg.connect(url, connect_timeout=3).close()
        except psycopg.Error:
            continue
        return url
    return None


@pytest.fixture(scope="session")
def pg_server() -> str:
    url = _pg_reachable()
    if url is None:
        pytest.skip(f"no PostgreSQL server answered at {PG_URLS} (set MAITRED_TEST_PG_URL)")
    return url


@pytest.fixture
def pg_schema(pg_server: str) -> Iterator[tuple[str, str]]:
    """(server URL, a fresh schema name); the schema is dropped afterwards."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:16]}"
    yield pg_server, schema
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """open_log(...) bound to a fresh log on the parametrised backend."""
    if request.param == "sqlite":
        path = tmp_path / "log.db"
        return lambda **kw: open_log(path, **kw)
    url, schema = request.getfixturevalue("pg_schema")
    return lambda **kw: open_log(url, schema=schema, **kw)
