"""Defect 7 of issue 16: a replay never reports figures from nothing.

Against the wrong catalog, on a log with no turn to replay, or when every model call failed,
``replay`` refuses before storing a row, and ``maitred replay`` exits 2 with one line saying
why and what to do. Some calls failing still reports the others, with exit status 1.
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from maitred.cli.main import main
from maitred.errors import ConfigError, ReplayError
from maitred.lab.domains import sitecare
from maitred.log import open_log
from maitred.replay import MenuItem, ThreadFanout, replay
from maitred.skills import load_catalog

from .test_replay import log_path  # noqa: F401  (the fixture)

CallMain = Callable[..., tuple[int, str, str]]


@pytest.fixture
def call_main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> CallMain:
    """``call_main(*args) -> (exit code, stdout, stderr)`` through the console entry point."""

    def call(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        monkeypatch.setattr(sys, "argv", ["maitred", *args])
        with pytest.raises(SystemExit) as exited:
            main()
        out, err = capsys.readouterr()
        code = exited.value.code
        return (code if isinstance(code, int) else 1 if code else 0), out, err

    return call


class Down:
    """A model whose endpoint refuses every call."""

    name = "down"

    def choose(self, conversation: Sequence[str], menu: Sequence[MenuItem]) -> str | None:
        raise ConnectionRefusedError("connection refused")


def _replays(log_file: Path) -> int:
    with open_log(log_file, read_only=True) as log:
        return int(log.query("SELECT COUNT(*) FROM replays")[0][0])


@pytest.fixture
def log_copy(log_path: Path, tmp_path: Path) -> Path:  # noqa: F811
    copy = tmp_path / "log.sqlite"
    shutil.copy(log_path, copy)
    return copy


@pytest.fixture
def edited_skills(tmp_path: Path) -> Path:
    """The log's catalog with one description edited since: another catalog version."""
    skills = tmp_path / "skills"
    shutil.copytree(sitecare.skills_dir(), skills)
    page = skills / "connect-domain" / "SKILL.md"
    page.write_text(page.read_text(encoding="utf-8").replace("domain", "domain name", 1))
    return skills


def test_a_catalog_other_than_the_logs_is_refused_naming_both_versions(
    log_copy: Path, edited_skills: Path
) -> None:
    edited = load_catalog([str(edited_skills)])
    logged = load_catalog([str(sitecare.skills_dir())])
    assert edited.version != logged.version
    with open_log(log_copy) as log, pytest.raises(ConfigError) as refused:
        replay(log, ThreadFanout(Down(), edited), cohort="risk", n=10)
    message = str(refused.value)
    assert edited.version[:19] in message and logged.version[:19] in message
    assert "pass --skills with the catalog the log was written with" in message
    assert _replays(log_copy) == 0


def test_every_call_failing_is_an_error_not_figures(log_copy: Path) -> None:
    catalog = load_catalog([str(sitecare.skills_dir())])
    with open_log(log_copy) as log, pytest.raises(ReplayError) as refused:
        replay(log, ThreadFanout(Down(), catalog, workers=2), cohort="random", n=12)
    assert "every one of the 12 model calls failed" in str(refused.value)
    assert "ConnectionRefusedError: connection refused" in str(refused.value)
    assert _replays(log_copy) == 0  # no rows that a report could read as a 0% rate


def test_a_log_with_no_turn_to_replay_is_refused(tmp_path: Path) -> None:
    catalog = load_catalog([str(sitecare.skills_dir())])
    with open_log(tmp_path / "empty.sqlite") as log, pytest.raises(ReplayError, match="no turn"):
        replay(log, ThreadFanout(Down(), catalog), cohort="risk", n=5)


def _refused_port() -> int:
    with socket.socket() as s:  # bound, never listening: every connection is refused
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cli(log_file: Path, skills: Path, port: int) -> list[str]:
    return ["replay", "-s", str(skills), "--log", str(log_file), "--cohort", "random", "-n", "6",
            "--model", "m", "--base-url", f"http://127.0.0.1:{port}/v1", "--json"]  # fmt: skip


def test_the_command_exits_2_with_one_line_and_stores_nothing(
    call_main: CallMain,
    log_copy: Path,
    edited_skills: Path,
) -> None:
    port = _refused_port()
    for skills, expected in (
        (edited_skills, "is not the one the sampled turns were routed with"),
        (sitecare.skills_dir(), "every one of the 6 model calls failed"),
    ):
        code, out, err = call_main(*_cli(log_copy, skills, port))
        assert code == 2 and out == "", err
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], err
    assert _replays(log_copy) == 0


@pytest.fixture
def flaky_endpoint() -> Iterator[int]:
    """An OpenAI-compatible endpoint that fails one request in three (HTTP 500)."""
    count = {"n": 0}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                count["n"] += 1
                fail = count["n"] % 3 == 1  # a turn fails when either of its questions does
            if fail:
                self.send_error(500, "overloaded")
                return
            name = body["tools"][0]["function"]["name"] if body.get("tools") else None
            calls = [{"id": "1", "type": "function",
                      "function": {"name": name, "arguments": "{}"}}] if name else []  # fmt: skip
            message = {"role": "assistant", "tool_calls": calls}
            data = json.dumps({"choices": [{"message": message}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield int(server.server_port)
    finally:
        server.shutdown()


def test_some_calls_failing_reports_the_rest_and_exits_1(
    call_main: CallMain,
    log_copy: Path,
    flaky_endpoint: int,
) -> None:
    code, out, err = call_main(*_cli(log_copy, sitecare.skills_dir(), flaky_endpoint))
    assert code == 1, err
    data = json.loads(out)
    assert data["sampled"] == 6 and 0 < data["errors"] < 6
    assert data["answered"] == 6 - data["errors"]
    assert f"{data['errors']} of 6 model calls failed" in err and "exit status 1" in err
    assert _replays(log_copy) == 6  # every attempt is on record, failed ones with their error
