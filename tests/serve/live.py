"""A real ``maitred serve`` for the fault tests: a subprocess on a free loopback port, and a
few client threads that keep sending turns and call checks while a test breaks something.

Everything is bounded: the server gets ``START_S`` to answer ``/healthz``; the load stops when
asked, at ``LOAD_S`` at the latest, and every request has a client timeout.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from .deploy import DOMAIN_TEXT, auth, write_deployment

START_S = 60.0
LOAD_S = 60.0
REQUEST_TIMEOUT_S = 20.0
ROUNDS_PER_SESSION = 5
SRC = Path(__file__).resolve().parents[2] / "src"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env() -> dict[str, str]:
    """This checkout's source first on the path of every child process."""
    path = os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}


def start_server(root: Path, **overrides: Any) -> tuple[str, subprocess.Popen[bytes]]:
    """Write a deployment under ``root``, start ``maitred serve`` on it, wait until it answers."""
    port = free_port()
    config = write_deployment(root, server={"host": "127.0.0.1", "port": port}, **overrides)
    proc = subprocess.Popen(
        [sys.executable, "-m", "maitred.cli.main", "serve", "--config", str(config)],
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_S
    while True:
        if proc.poll() is not None:
            pytest.fail(f"the server exited early: {proc.communicate()[1].decode()[-2000:]}")
        try:
            if httpx.get(f"{base}/healthz", timeout=1.0).status_code == 200:
                return base, proc
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the server did not answer /healthz within {START_S:g}s")
        time.sleep(0.1)


def stop(proc: subprocess.Popen[bytes]) -> str:
    """Kill the server if it still runs; its stderr."""
    if proc.poll() is None:
        proc.kill()
    return proc.communicate()[1].decode(errors="replace")


@dataclass
class Outcome:
    """One request of the load: what was sent and what came back."""

    route: str
    sent: dict[str, Any]
    status: int | None  # None: no answer (connection refused or reset, timeout)
    body: dict[str, Any] = field(default_factory=dict)


class Load:
    """``clients`` threads, each with its own keep-alive connection, sending until :meth:`stop`:
    a ``POST /v1/turns`` that opens a session, then ``ROUNDS_PER_SESSION`` call checks in it
    (``connect_custom_domain`` when the turn offered it, ``list_domains`` otherwise), then a
    new session.

    Args:
        base: the server's URL.
        account: the account every session acts for.
        clients: how many threads.
        stop_on_error: a thread stops at its first request without an answer (the server died).
    """

    def __init__(
        self, base: str, account: str = "acc-pro", clients: int = 3, *, stop_on_error: bool = False
    ) -> None:
        self.base = base
        self.account = account
        self.outcomes: list[Outcome] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._stop_on_error = stop_on_error
        self._threads = [
            threading.Thread(target=self._client, args=(i,), daemon=True) for i in range(clients)
        ]

    def __enter__(self) -> Load:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> list[Outcome]:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=REQUEST_TIMEOUT_S * 3)
        return self.snapshot()

    def snapshot(self) -> list[Outcome]:
        with self._lock:
            return list(self.outcomes)

    def count(self, ok: Callable[[Outcome], bool]) -> int:
        return sum(1 for o in self.snapshot() if ok(o))

    def _client(self, i: int) -> None:
        deadline = time.monotonic() + LOAD_S
        headers = auth("acme")
        with httpx.Client(base_url=self.base, timeout=REQUEST_TIMEOUT_S) as http:
            n, session, offered = 0, "", False
            while not self._stop.is_set() and time.monotonic() < deadline:
                if n % ROUNDS_PER_SESSION == 0:  # a new session, opened by a turn
                    session = f"load-{i}-{n}"
                    turn = self._send(
                        http,
                        "/v1/turns",
                        {"text": DOMAIN_TEXT, "account": self.account, "session_id": session},
                        headers,
                    )
                    offered = "connect_custom_domain" in turn.body.get("exposed", [])
                    if turn.status is None and self._stop_on_error:
                        return
                    if turn.status != 200:
                        continue  # n unchanged: the next round opens a session again
                n += 1
                name = "connect_custom_domain" if offered else "list_domains"
                args = {"domain": "example.com"} if offered else {}
                call = {"session_id": session, "call": {"name": name, "arguments": args}}
                check = self._send(http, "/v1/calls/check", call, headers)
                if check.status is None and self._stop_on_error:
                    return

    def _send(
        self, http: httpx.Client, route: str, body: dict[str, Any], headers: dict[str, str]
    ) -> Outcome:
        try:
            r = http.post(route, json=body, headers=headers)
            outcome = Outcome(route, body, r.status_code, r.json())
        except (httpx.TransportError, ValueError):
            outcome = Outcome(route, body, None)
        with self._lock:
            self.outcomes.append(outcome)
        return outcome


def metric(base: str, name: str) -> float:
    """One sample of ``GET /metrics`` by its full name with labels (0 when absent)."""
    for line in httpx.get(f"{base}/metrics", timeout=REQUEST_TIMEOUT_S).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0.0


def wait_until(what: str, check: Callable[[], bool], proc: subprocess.Popen[bytes]) -> None:
    """Poll ``check`` until it holds; fail past ``LOAD_S`` or when the server exits."""
    deadline = time.monotonic() + LOAD_S
    while not check():
        if proc.poll() is not None:
            pytest.fail(f"the server exited before {what}: {stop(proc)[-2000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {LOAD_S:g}s")
        time.sleep(0.05)
