"""Several writers on one PostgreSQL log: replicas that start at the same moment on a schema
that does not exist yet all open it (one creates and migrates it, the others wait)."""

from __future__ import annotations

import threading

import pytest

from maitred.log import open_log, verify

from .builders import make_run, make_turn

pytestmark = pytest.mark.postgres
WRITERS = 6


def test_writers_opening_one_new_schema_at_once_all_open_it(pg_schema: tuple[str, str]) -> None:
    url, schema = pg_schema
    barrier = threading.Barrier(WRITERS, timeout=30)
    errors: list[BaseException] = []

    def writer(i: int) -> None:
        barrier.wait()
        try:
            with open_log(url, schema=schema) as log:
                log.begin_run(make_run(f"run-{i}"))
                log.write(make_turn(0, run_id=f"run-{i}"))
        except BaseException as exc:  # reported below, with the others
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    with open_log(url, schema=schema, read_only=True) as log:
        assert len(log.runs()) == WRITERS
        assert verify(log).ok
