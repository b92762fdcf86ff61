"""Fixtures every test package shares: a real PostgreSQL server and a schema per test.

The server is ``MAITRED_TEST_PG_URL`` when set, else ``postgresql://root@127.0.0.1:5432/test``,
then the same as user ``postgres``. Tests that need it are skipped, saying why, only when no
server answers (it runs on these machines and in CI).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

PG_URLS = (
    [os.environ["MAITRED_TEST_PG_URL"]]
    if os.environ.get("MAITRED_TEST_PG_URL")
    else ["postgresql://root@127.0.0.1:5432/test", "postgresql://postgres@127.0.0.1:5432/test"]
)


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The URL of a PostgreSQL server that answers."""
    try:
        import psycopg
    except ImportError:
        pytest.skip("psycopg is not installed: pip install 'maitred[postgres]'")
    for url in PG_URLS:
        try:
            psycopg.connect(url, connect_timeout=3).close()
        except psycopg.Error:
            continue
        return url
    pytest.skip(f"no PostgreSQL server answered at {PG_URLS} (set MAITRED_TEST_PG_URL)")


@pytest.fixture
def pg_schema(pg_server: str) -> Iterator[tuple[str, str]]:
    """(server URL, a fresh schema name); the schema is dropped afterwards."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:16]}"
    yield pg_server, schema
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
