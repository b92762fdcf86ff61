"""A small sitecare deployment built once per session, and ways to call the CLI.

* ``invoke(*args)`` runs ``maitred.cli.main.app`` in-process (typer's CliRunner) and returns
  the click result (``exit_code``, ``stdout``, ``stderr``); a MaitredError propagates to
  ``result.exception`` there, since only ``main()`` maps it to exit status 2.
* ``call_main(*args)`` runs the console entry point ``main()`` with a patched ``sys.argv`` and
  returns ``(exit code, stdout, stderr)``.
* ``routed_log`` is one ``maitred run`` over the generated messages plus two bad lines, shared
  by the run, funnel and log-verify tests (read it, never write it: copy it first).
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from maitred.cli.main import app, main
from maitred.lab.domains import sitecare

N_ACCOUNTS = 200
N_MESSAGES = 300


@dataclass(frozen=True)
class Sitecare:
    """The generated deployment: skills, accounts database, messages, tables, index cache."""

    root: Path
    skills: Path
    db: Path
    messages: Path
    tables: Path
    cache: Path

    @property
    def state(self) -> str:
        return f"sqlite:///{self.db}"

    def pipeline_args(self, method: str = "bm25") -> list[str]:
        """The options every routing command needs (skills, state, tables, method, cache)."""
        return [
            "--skills",
            str(self.skills),
            "--state",
            self.state,
            "--tables",
            str(self.tables),
            "--method",
            method,
            "--cache-dir",
            str(self.cache),
        ]

    def account_where(self, sql_condition: str) -> str:
        """The first account id (in id order) of the accounts table matching a condition."""
        with sqlite3.connect(self.db) as conn:
            row = conn.execute(
                f"SELECT account_id FROM accounts WHERE {sql_condition} ORDER BY account_id LIMIT 1"
            ).fetchone()
        conn.close()
        assert row is not None, f"no generated account has {sql_condition}"
        return str(row[0])

    def generated(self) -> list[dict[str, Any]]:
        """The generated messages, as written."""
        lines = self.messages.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines]


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Sitecare:
    root = tmp_path_factory.mktemp("sitecare")
    db, msgs, tables = root / "accounts.sqlite", root / "messages.jsonl", root / "tables.json"
    sitecare.write_accounts(db, N_ACCOUNTS, seed=1, as_of=int(time.time()))
    sitecare.write_messages(msgs, N_MESSAGES, N_ACCOUNTS, seed=1)
    tables.write_text(json.dumps(sitecare.TABLES), encoding="utf-8")
    return Sitecare(root, sitecare.skills_dir(), db, msgs, tables, root / "index-cache")


Invoke = Callable[..., Result]


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


@pytest.fixture(scope="session")
def invoke() -> Invoke:
    return _invoke


def ok(result: Result) -> Result:
    """Assert a CLI call succeeded, showing its stderr and exception when it did not."""
    assert result.exit_code == 0, (
        f"exit {result.exit_code}\nstderr:\n{result.stderr}\nexception: {result.exception!r}"
    )
    return result


CallMain = Callable[..., tuple[int, str, str]]


@pytest.fixture
def call_main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> CallMain:
    """``call_main(*args) -> (exit code, stdout, stderr)`` through the console entry point."""

    def call(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()  # drop whatever an earlier call printed
        monkeypatch.setattr(sys, "argv", ["maitred", *args])
        with pytest.raises(SystemExit) as exited:
            main()
        out, err = capsys.readouterr()
        code = exited.value.code
        return (code if isinstance(code, int) else 1 if code else 0), out, err

    return call


@dataclass(frozen=True)
class RoutedLog:
    """``maitred run`` over the generated messages with two bad lines inserted."""

    log: Path
    messages: Path
    bad_lines: dict[str, int]  # what is wrong -> its 1-based line number
    n_good: int
    funnel: dict[str, Any]  # the JSON `run --json` printed
    stderr: str


@pytest.fixture(scope="session")
def routed_log(site: Sitecare) -> RoutedLog:
    lines = site.messages.read_text(encoding="utf-8").splitlines()
    bad = {
        "invalid JSON": '{"id": "broken", "text": "connect my domain", ',
        "missing text": json.dumps({"id": "no-text", "account": sitecare.account_id(3)}),
    }
    # after line 10 and after (what becomes) line 41, among good lines, plus a blank line
    mixed = [*lines[:10], bad["invalid JSON"], *lines[10:40], "", bad["missing text"], *lines[40:]]
    messages = site.root / "messages-with-bad-lines.jsonl"
    messages.write_text("\n".join(mixed) + "\n", encoding="utf-8")
    log = site.root / "routed.sqlite"
    result = _invoke("run", str(messages), *site.pipeline_args(), "--log", str(log), "--json")
    # the good lines are routed and the funnel printed; the bad lines make the exit status 1
    assert result.exit_code == 1, f"stderr:\n{result.stderr}\nexception: {result.exception!r}"
    return RoutedLog(
        log=log,
        messages=messages,
        bad_lines={"invalid JSON": 11, "missing text": 43},
        n_good=len(lines),
        funnel=json.loads(result.stdout),
        stderr=result.stderr,
    )


def copy_log(source: Path, target: Path) -> Path:
    """A consistent copy of a SQLite decision log (WAL included), for tests that change it."""
    src, dst = sqlite3.connect(source), sqlite3.connect(target)
    with dst:
        src.backup(dst)
    src.close()
    dst.close()
    return target
