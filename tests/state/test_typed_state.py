"""Typed state (issue 16, defects 1 and 2): values reach CEL as their column's type, a key with
no column is a load error, and predicates are type-checked against the columns at load."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from maitred import Maitred, PipelineOptions
from maitred.contract import CelPredicate
from maitred.contract.evaluate import evaluate
from maitred.errors import ConfigError
from maitred.state import Snapshot

from .conftest import SqlBackend

TOOLS = {
    "tools": [
        {
            "name": "push_commit",
            "description": "Push a commit to the repository.",
            "inputSchema": {"type": "object", "properties": {"ref": {"type": "string"}}},
        },
        {
            "name": "read_log",
            "description": "Read the repository's commit log.",
            "inputSchema": {"type": "object", "properties": {}},
        },
    ]
}

SIDECAR = """
tools:
  push_commit:
    mutates: true
    exit_predicates:
      - name: repo_frozen
        expr: repo.frozen == true
        reads: [repo.frozen]
        on_missing: offer
  read_log: {}
"""


def _shop(tmp_path: Path, frozen_type: str, sidecar: str = SIDECAR) -> tuple[Path, str]:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS), encoding="utf-8")
    (tmp_path / "tools.maitred.yaml").write_text(sidecar, encoding="utf-8")
    db = tmp_path / "state.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            f"CREATE TABLE repos (account_id TEXT PRIMARY KEY, frozen {frozen_type}, plan TEXT)"
        )
        conn.executemany(
            "INSERT INTO repos VALUES (?, ?, ?)", [("frozen-1", 1, "free"), ("open-1", 0, "pro")]
        )
    return tools, f"sqlite:///{db}"


def _open(tools: Path, url: str, tables: dict[str, Any] | None = None) -> Maitred:
    return Maitred.open(
        [tools], url, PipelineOptions(method="bm25", top_k=5), tables=tables or {"repo": "repos"}
    )


def test_a_boolean_column_reaches_cel_as_bool_and_blocks_the_frozen_account(
    tmp_path: Path,
) -> None:
    """Regression: SQLite's 0/1 reached CEL as ints, `repo.frozen == true` never fired, and a
    frozen account was offered every write tool."""
    tools, url = _shop(tmp_path, "BOOLEAN")
    with _open(tools, url) as engine:
        frozen = engine.turn("push my commit to the repository", account="frozen-1")
        assert "push_commit" not in frozen.exposed
        fine = engine.turn("push my commit to the repository", account="open-1")
        assert "push_commit" in fine.exposed


def test_a_predicate_over_a_mistyped_column_is_a_load_error_with_file_and_line(
    tmp_path: Path,
) -> None:
    """Regression: over an INTEGER column the predicate could never fire, and loaded."""
    tools, url = _shop(tmp_path, "INTEGER")
    with pytest.raises(ConfigError) as caught:
        _open(tools, url)
    text = str(caught.value)
    assert f"{tmp_path / 'tools.maitred.yaml'}:7" in text  # the `expr:` line
    assert "repo_frozen" in text and "push_commit" in text
    assert "(int, bool)" in text and "repo.frozen: int" in text


def test_plan_compared_with_a_number_over_text_is_a_load_error(tmp_path: Path) -> None:
    sidecar = SIDECAR.replace("repo.frozen == true", "repo.plan == 3").replace(
        "reads: [repo.frozen]", "reads: [repo.plan]"
    )
    tools, url = _shop(tmp_path, "BOOLEAN", sidecar)
    with pytest.raises(ConfigError, match=r"tools\.maitred\.yaml:7.*\(string, int\)"):
        _open(tools, url)


def test_a_declared_type_in_the_tables_mapping_overrides_the_column(tmp_path: Path) -> None:
    tools, url = _shop(tmp_path, "INTEGER")
    tables = {"repo": {"table": "repos", "types": {"frozen": "bool"}}}
    with _open(tools, url, tables) as engine:
        assert "push_commit" not in engine.turn("push my commit", account="frozen-1").exposed


def test_a_column_the_table_lacks_is_a_load_error_naming_key_table_and_readers(
    tmp_path: Path,
) -> None:
    """Regression: the key was merely missing, so `on_missing: offer` offered the tool."""
    sidecar = SIDECAR.replace("repo.frozen == true", "repo.locked == true").replace(
        "reads: [repo.frozen]", "reads: [repo.locked]"
    )
    tools, url = _shop(tmp_path, "BOOLEAN", sidecar)
    with pytest.raises(ConfigError) as caught:
        _open(tools, url)
    text = str(caught.value)
    assert "'repo.locked'" in text and "'repos'" in text and "push_commit" in text


def test_a_value_that_does_not_fit_its_type_fails_closed(sql_backend: SqlBackend) -> None:
    if sql_backend.name == "postgresql":
        pytest.skip("PostgreSQL enforces column types itself")
    sql_backend.create("repos", "account_id TEXT, frozen BOOLEAN", [("r1", 2), ("r2", 1)])
    provider = sql_backend.provider({"repo": "repos"})
    predicate = CelPredicate("repo.frozen == true", "frozen", ("repo.frozen",), on_missing="offer")
    bad = provider.fetch("r1", ["repo.frozen"])
    assert "repo.frozen" in bad.invalid and bad.values == {"repo.frozen": 2}
    outcome = evaluate(predicate, bad, bad.as_of)
    assert outcome.status == "error" and outcome.holds and "not a valid bool" in outcome.detail
    good = provider.fetch("r2", ["repo.frozen"])
    assert good.values == {"repo.frozen": True} and not good.invalid


def test_column_types_and_absent_columns_from_both_databases(sql_backend: SqlBackend) -> None:
    sql_backend.create(
        "typed",
        "account_id TEXT, flag BOOLEAN, n INTEGER, x DOUBLE PRECISION, s TEXT, d DATE, "
        "ts TIMESTAMP",
        [("a", True, 3, 1.5, "hi", "2025-01-31", "2025-01-31 12:00:00")],
    )
    provider = sql_backend.provider({"t": sql_backend.table("typed")})
    keys = ["t.flag", "t.n", "t.x", "t.s", "t.d", "t.ts", "t.nope", "other.k"]
    schema = provider.schema(keys)
    assert schema.types == {
        "t.flag": "bool",
        "t.n": "int",
        "t.x": "double",
        "t.s": "string",
        "t.d": "timestamp",
        "t.ts": "timestamp",
    }
    assert set(schema.absent) == {"t.nope", "other.k"}
    assert "no column 'nope'" in schema.absent["t.nope"]
    snap = provider.fetch("a", keys[:6])
    assert snap.values == {
        "t.flag": True,
        "t.n": 3,
        "t.x": 1.5,
        "t.s": "hi",
        "t.d": 1738281600,
        "t.ts": 1738281600 + 12 * 3600,
    }


def test_old_snapshots_keep_their_json_and_hash() -> None:
    plain = Snapshot("a", {"k": 1}, 10.0)
    assert "invalid" not in plain.to_json()
    marked = Snapshot("a", {"k": 1}, 10.0, invalid={"k": "bad"})
    assert marked.hash != plain.hash
    assert Snapshot.from_json(marked.to_json()) == marked


def test_a_json_state_file_declares_its_types(tmp_path: Path) -> None:
    tools, _ = _shop(tmp_path, "BOOLEAN")
    state = tmp_path / "state.json"
    accounts = {"frozen-1": {"repo": {"frozen": 1}}, "open-1": {"repo": {"frozen": 0}}}
    state.write_text(json.dumps({"$types": {"repo.frozen": "bool"}, **accounts}), "utf-8")
    with Maitred.open([tools], str(state), PipelineOptions(method="bm25", top_k=5)) as engine:
        assert "push_commit" not in engine.turn("push my commit", account="frozen-1").exposed
        assert "push_commit" in engine.turn("push my commit", account="open-1").exposed
    state.write_text(json.dumps({"$types": {"repo.frozen": "int"}, **accounts}), "utf-8")
    with pytest.raises(ConfigError, match=r"tools\.maitred\.yaml:7.*\(int, bool\)"):
        Maitred.open([tools], str(state), PipelineOptions(method="bm25"))
    state.write_text(json.dumps({"$types": {"repo.other": "int"}, **accounts}), "utf-8")
    with pytest.raises(ConfigError, match=r"'repo\.frozen'.*\$types.*push_commit"):
        Maitred.open([tools], str(state), PipelineOptions(method="bm25"))


def test_the_documented_example_runs_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    import re

    page = Path(__file__).resolve().parents[2] / "docs" / "contracts.md"
    text = page.read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "schema(keys)" in b]
    exec(compile(block, "docs/contracts.md", "exec"), {})
    values, types, absent = capsys.readouterr().out.splitlines()
    assert eval(values) == {"repo.frozen": True, "repo.since": 1738281600}  # NULL: missing
    assert eval(types) == {"repo.frozen": "bool", "repo.since": "timestamp", "repo.plan": "string"}
    assert list(eval(absent)) == ["repo.locked"]


@pytest.mark.parametrize(("column", "loads"), [("BOOLEAN", True), ("INTEGER", False)])
def test_the_load_check_reads_column_types_from_both_databases(
    sql_backend: SqlBackend, tmp_path: Path, column: str, loads: bool
) -> None:
    (tmp_path / "tools").mkdir()
    tools, _ = _shop(tmp_path / "tools", "BOOLEAN")
    sql_backend.create("repos", f"account_id TEXT, frozen {column}")
    provider = sql_backend.provider({"repo": sql_backend.table("repos")})
    options = PipelineOptions(method="bm25", top_k=5)
    if loads:
        Maitred.open([tools], provider, options).close()
    else:
        with pytest.raises(ConfigError, match=r"tools\.maitred\.yaml:7.*\(int, bool\)"):
            Maitred.open([tools], provider, options)


def test_a_value_unfit_for_its_type_is_refused_at_stage_5_too(tmp_path: Path) -> None:
    """A tool offered while the column held 0 must not run once it holds a 7: the check reads
    the provider's snapshot (with its ``invalid`` keys) and the kernel counts the read as an
    evaluation error, exactly as stage 2 does."""
    tools, url = _shop(tmp_path, "BOOLEAN")
    with _open(tools, url) as engine:
        session = engine.session("open-1")
        assert "push_commit" in engine.turn("push my commit", session=session).exposed
        with sqlite3.connect(tmp_path / "state.db") as conn:
            conn.execute("UPDATE repos SET frozen = 7 WHERE account_id = 'open-1'")
        hidden = engine.turn("push my commit", account="open-1")
        assert "push_commit" not in hidden.exposed
        decision = engine.check({"name": "push_commit", "arguments": {}}, session=session)
        assert decision.reject and decision.code == "TOOL_NOT_EXECUTABLE"
        assert [o.status for o in decision.outcomes] == ["error"]


def test_a_store_down_at_start_still_fails_closed_on_a_column_it_lacks(tmp_path: Path) -> None:
    """The load-time check cannot read a store that is down; the engine starts (with a
    warning), and once the store answers, a key whose column the table lacks is
    ``state_unavailable`` on every read, never a missing key an ``on_missing: offer`` passes."""
    tools, url = _shop(tmp_path, "BOOLEAN")
    db = tmp_path / "state.db"
    db.rename(tmp_path / "away.db")  # the store is not there at start
    db.write_bytes(b"not a database")
    with pytest.warns(RuntimeWarning, match="typed-state checks skipped"):
        engine = _open(tools, url)
    with engine:
        down = engine.turn("push my commit", account="open-1")
        assert "push_commit" not in down.exposed and down.record.cause == "state_unavailable"
        db.unlink()
        (tmp_path / "away.db").rename(db)
        with sqlite3.connect(db) as conn:  # back, but without the column the predicate reads
            conn.execute("ALTER TABLE repos DROP COLUMN frozen")
        back = engine.turn("push my commit", account="open-1")
        assert "push_commit" not in back.exposed and back.record.cause == "state_unavailable"
        assert "has no column for ['repo.frozen']" in back.record.provider_error
