"""When a decision is answered: after the commit that holds it (the default), or before it
(``log: {durability: async}``).

The test holds the decision log's connection lock, which a commit holds throughout: a request
in ``commit`` mode is then decided and waits (``maitred_log_waiting`` shows it) until the lock
is released; in ``async`` mode it is answered at once and committed later.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from maitred.errors import LogError
from maitred.log._sql import SqlLog
from maitred.serve import Service, load_config, open_engine
from maitred.serve.requests import Problem, TurnRequest

from .deploy import DOMAIN_TEXT, logged_turns, write_deployment

DEADLINE_S = 30.0


def _service(root: Path, durability: str) -> Service:
    path = write_deployment(root, log={"url": "log.sqlite", "durability": durability})
    config = load_config(path)
    return Service(open_engine(config), config.tenants, config.limits, durability=config.durability)


def _waiting(service: Service) -> float:
    for line in service.metrics.render().decode().splitlines():
        if line.startswith("maitred_log_waiting "):
            return float(line.split()[-1])
    raise AssertionError("no maitred_log_waiting gauge in /metrics")


def _log_lock(service: Service) -> threading.RLock:
    log = service.engine.log
    assert isinstance(log, SqlLog)
    return log._lock


def test_a_turn_is_answered_only_after_its_commit(tmp_path: Path) -> None:
    service = _service(tmp_path, "commit")
    tenant = service.tenants["acme"]
    try:
        with ThreadPoolExecutor(2) as pool:
            with _log_lock(service):  # a commit in flight
                futures = [
                    pool.submit(service.turn, tenant, TurnRequest(DOMAIN_TEXT, "acc-pro", f"s{i}"))
                    for i in range(2)
                ]
                deadline = time.monotonic() + DEADLINE_S
                while _waiting(service) < 2:  # both decided, both waiting for the commit
                    assert time.monotonic() < deadline, "the turns never reached the commit"
                    assert not any(f.done() for f in futures), "a turn was answered uncommitted"
                    time.sleep(0.005)
                assert logged_turns(tmp_path) == 0
            turns: list[dict[str, Any]] = [f.result(timeout=DEADLINE_S) for f in futures]
        assert logged_turns(tmp_path) == 2 and _waiting(service) == 0
        assert all(t["turn_id"] for t in turns)
    finally:
        service.engine.close()


def test_async_answers_before_the_commit_and_commits_within_the_age_bound(tmp_path: Path) -> None:
    service = _service(tmp_path, "async")
    tenant = service.tenants["acme"]
    try:
        with _log_lock(service):  # no commit can happen, and yet the turn is answered
            turn = service.turn(tenant, TurnRequest(DOMAIN_TEXT, "acc-pro", "s1"))
            assert turn["turn_id"] and logged_turns(tmp_path) == 0
        deadline = time.monotonic() + DEADLINE_S
        while logged_turns(tmp_path) < 1:  # the log's background thread commits it
            assert time.monotonic() < deadline, "the age bound never committed the turn"
            time.sleep(0.01)
    finally:
        service.engine.close()


def test_a_turn_whose_commit_fails_is_503_and_opens_no_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = _service(tmp_path, "commit")
    tenant = service.tenants["acme"]
    log = service.engine.log
    assert isinstance(log, SqlLog)

    def refuse(*rows: object) -> None:
        raise LogError("disk I/O error")  # what SQLite says when the disk goes away

    try:
        monkeypatch.setattr(log, "_insert_batch", refuse)
        with pytest.raises(Problem) as info:
            service.turn(tenant, TurnRequest(DOMAIN_TEXT, "acc-pro", "s1"))
        assert info.value.status == 503 and "disk I/O error" in str(info.value.body())
        assert service.sessions.get("acme", "s1") is None  # nothing was handed out
        monkeypatch.undo()
        turn = service.turn(tenant, TurnRequest(DOMAIN_TEXT, "acc-pro", "s1"))
        assert service.sessions.get("acme", "s1") is not None
        assert logged_turns(tmp_path) == 1 and turn["turn_id"]
    finally:
        service.engine.close()
