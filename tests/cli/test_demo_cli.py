"""`maitred demo`: the whole pipeline on sitecare, and a funnel.json the log agrees with."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from .conftest import Invoke, ok


@pytest.mark.model
@pytest.mark.slow
def test_demo_writes_a_log_and_the_funnel_it_holds(invoke: Invoke, tmp_path: Path):
    out = tmp_path / "demo"
    ok(invoke("demo", "--messages", "500", "--accounts", "200", "--out", str(out)))
    log, funnel_file = out / "decisions.sqlite", out / "funnel.json"
    assert log.is_file()
    assert funnel_file.is_file()
    written = json.loads(funnel_file.read_text(encoding="utf-8"))
    assert written["messages"] == 500

    # funnel.json is the very object `funnel --log DIR/decisions.sqlite --json` prints
    every = json.loads(ok(invoke("funnel", "--log", str(log), "--json")).stdout)
    assert every == written

    conn = sqlite3.connect(log)
    pairs = conn.execute("SELECT COUNT(*) FROM pairs").fetchone()[0]
    turns = conn.execute("SELECT COUNT(*) FROM turns").fetchone()[0]
    conn.close()
    assert written["candidate_pairs"] == pairs
    assert turns == 500
    ok(invoke("log", "verify", "--log", str(log)))


def test_demo_refuses_zero_accounts_before_writing(invoke: Invoke, tmp_path: Path):
    out = tmp_path / "demo"
    result = invoke("demo", "--messages", "3", "--accounts", "0", "--out", str(out))
    assert result.exit_code == 2
    assert "--accounts" in result.stderr
    assert not out.exists()
