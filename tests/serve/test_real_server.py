"""One real server: ``maitred serve`` in a subprocess under uvicorn on a free loopback port,
a few requests over TCP, then a graceful stop (SIGTERM) that leaves the decisions in the log.

Bounded: the server gets 60 s to answer ``/healthz`` and 15 s to stop; it is killed otherwise.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .deploy import DOMAIN_TEXT, auth, logged_decisions, logged_turns, write_deployment

START_S = 60.0
STOP_S = 15.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    port = _free_port()
    config = write_deployment(tmp_path, server={"host": "127.0.0.1", "port": port})
    src = Path(__file__).resolve().parents[2] / "src"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "maitred.cli.main", "serve", "--config", str(config)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the server exited early: {proc.communicate()[1].decode()[-2000:]}")
            try:
                if httpx.get(f"{base}/healthz", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the server did not answer /healthz within {START_S:g}s")
            time.sleep(0.1)
        yield base, proc, tmp_path
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_a_real_server_answers_over_loopback_and_stops_cleanly(
    server: tuple[str, subprocess.Popen[bytes], Path],
) -> None:
    base, proc, root = server
    with httpx.Client(base_url=base, timeout=10.0) as http:
        turn = http.post(
            "/v1/turns",
            json={"text": DOMAIN_TEXT, "account": "acc-pro", "session_id": "real-1"},
            headers=auth("acme"),
        )
        assert turn.status_code == 200
        assert "connect_custom_domain" in turn.json()["exposed"]
        call = {"name": "connect_custom_domain", "arguments": {"domain": "example.com"}}
        check = http.post(
            "/v1/calls/check", json={"session_id": "real-1", "call": call}, headers=auth("acme")
        )
        assert check.json()["code"] == "OK"
        assert http.post("/v1/turns", json={}).status_code == 401
        assert http.get("/readyz").status_code == 200
        assert 'route="/v1/turns",status="200"' in http.get("/metrics").text
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the server did not stop within {STOP_S:g}s of SIGTERM")
    stderr = proc.communicate()[1].decode()
    # uvicorn shuts down gracefully, then re-raises the signal: the status is the signal's
    assert proc.returncode in (0, -signal.SIGTERM), stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-2000:]
    assert logged_turns(root) == 1
    assert [code for _, code in logged_decisions(root)] == ["OK"]
