"""Fixtures for fault injection: a small sitecare deployment and a `maitred run` subprocess.

The subprocess is the real console program (``python -m maitred.cli.main``) so that a
``kill -9`` hits a process exactly as it would in production; these tests never assert on
wall-clock time, only wait for a state of the log with a generous deadline.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from maitred.lab.domains import sitecare

N_ACCOUNTS = 50
DEADLINE_S = 60.0


@dataclass(frozen=True)
class Deployment:
    """Skills, an accounts database, its tables file and an index cache."""

    root: Path
    db: Path
    tables: Path
    cache: Path

    def run_args(self, messages: Path, log: Path) -> list[str]:
        """The argv of `maitred run` over ``messages`` into ``log`` (bm25, no model)."""
        return [
            sys.executable,
            "-m",
            "maitred.cli.main",
            "run",
            str(messages),
            "--skills",
            str(sitecare.skills_dir()),
            "--state",
            f"sqlite:///{self.db}",
            "--tables",
            str(self.tables),
            "--method",
            "bm25",
            "--cache-dir",
            str(self.cache),
            "--log",
            str(log),
        ]

    def messages(self, path: Path, n: int) -> list[str]:
        """Write ``n`` generated messages to ``path``; return their ids in file order."""
        sitecare.write_messages(path, n, N_ACCOUNTS, seed=7)
        lines = path.read_text(encoding="utf-8").splitlines()
        return [str(json.loads(line)["id"]) for line in lines]


@pytest.fixture(scope="session")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    root = tmp_path_factory.mktemp("faults")
    db, tables = root / "accounts.sqlite", root / "tables.json"
    sitecare.write_accounts(db, N_ACCOUNTS, seed=3, as_of=int(time.time()))
    tables.write_text(json.dumps(sitecare.TABLES), encoding="utf-8")
    return Deployment(root, db, tables, root / "index-cache")


def committed_turns(log: Path) -> list[str]:
    """The message ids of the turns committed to a SQLite log so far (none if it is not there)."""
    if not log.exists():
        return []
    try:
        conn = sqlite3.connect(f"file:{log}?mode=ro", uri=True, timeout=5)
        try:
            rows = conn.execute("SELECT message_id FROM turns").fetchall()
        finally:
            conn.close()
    except sqlite3.Error:  # created but not yet migrated
        return []
    return [str(r[0]) for r in rows]


def wait_for(what: str, check: Callable[[], bool], proc: subprocess.Popen[bytes]) -> None:
    """Poll ``check`` until it holds; fail (showing the child's stderr) past the deadline."""
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        if proc.poll() is not None:
            _, err = proc.communicate()
            pytest.fail(f"`maitred run` exited ({proc.returncode}) before {what}:\n{err.decode()}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {DEADLINE_S:.0f} s")
        time.sleep(0.05)


@pytest.fixture
def spawn() -> Iterator[Callable[[list[str]], subprocess.Popen[bytes]]]:
    """Start a subprocess; whatever is still running at the end is killed."""
    started: list[subprocess.Popen[bytes]] = []

    def start(argv: list[str]) -> subprocess.Popen[bytes]:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
