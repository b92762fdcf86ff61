"""`maitred run` and `maitred funnel`: a message file into the decision log, and its funnel."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from .conftest import CallMain, Invoke, RoutedLog, Sitecare, ok

FUNNEL_KEYS = {
    "messages",
    "matched_messages",
    "candidate_pairs",
    "blocked_pairs",
    "blocked_pair_share",
    "tokens_all_skills",
    "tokens_after_recall",
    "tokens_after_gate",
    "token_reduction",
}


def _count(log: Path, sql: str) -> int:
    with sqlite3.connect(f"file:{log}?mode=ro", uri=True) as conn:
        value = conn.execute(sql).fetchone()[0]
    conn.close()
    return int(value)


def test_run_reports_each_bad_line_with_file_and_line(routed_log: RoutedLog):
    lines = routed_log.stderr.splitlines()
    where = str(routed_log.messages)
    bad_json = [
        line for line in lines if f"{where}:{routed_log.bad_lines['invalid JSON']}:" in line
    ]
    no_text = [line for line in lines if f"{where}:{routed_log.bad_lines['missing text']}:" in line]
    assert len(bad_json) == 1
    assert "not valid JSON" in bad_json[0]
    assert len(no_text) == 1
    assert "field 'text'" in no_text[0]
    assert "skipped 2 bad line(s) (exit status 1" in routed_log.stderr
    assert "Traceback" not in routed_log.stderr


def test_run_funnel_counts_exactly_the_good_messages(routed_log: RoutedLog):
    funnel = routed_log.funnel
    assert funnel["messages"] == routed_log.n_good
    assert _count(routed_log.log, "SELECT COUNT(*) FROM turns") == routed_log.n_good
    assert _count(routed_log.log, "SELECT COUNT(*) FROM runs") == 1
    ids = {
        row[0] for row in sqlite3.connect(routed_log.log).execute("SELECT message_id FROM turns")
    }
    assert "broken" not in ids
    assert "no-text" not in ids


def test_run_candidate_pairs_equal_the_pair_rows(routed_log: RoutedLog):
    funnel = routed_log.funnel
    assert funnel["candidate_pairs"] > 0
    assert funnel["candidate_pairs"] == _count(routed_log.log, "SELECT COUNT(*) FROM pairs")
    assert funnel["blocked_pairs"] == _count(
        routed_log.log, "SELECT COUNT(*) FROM pairs WHERE visible = 0"
    )


def test_funnel_json_keys_and_orderings(invoke: Invoke, routed_log: RoutedLog):
    funnel = json.loads(ok(invoke("funnel", "--log", str(routed_log.log), "--json")).stdout)
    assert set(funnel) >= FUNNEL_KEYS
    assert funnel["messages"] == routed_log.n_good
    assert 0 <= funnel["matched_messages"] <= funnel["messages"]
    assert 0 < funnel["blocked_pairs"] <= funnel["candidate_pairs"]
    assert funnel["blocked_pair_share"] == funnel["blocked_pairs"] / funnel["candidate_pairs"]
    assert (
        0 < funnel["tokens_after_gate"] <= funnel["tokens_after_recall"]
        and funnel["tokens_after_recall"] <= funnel["tokens_all_skills"]
    )
    assert 0.0 < funnel["token_reduction"] < 1.0
    expected = 1 - funnel["tokens_after_gate"] / funnel["tokens_all_skills"]
    assert abs(funnel["token_reduction"] - expected) < 1e-9


def test_funnel_of_the_run_is_what_run_printed(invoke: Invoke, routed_log: RoutedLog):
    run_id = routed_log.funnel["run_id"]
    assert run_id
    log = str(routed_log.log)
    by_run = json.loads(ok(invoke("funnel", "--log", log, "--run", run_id, "--json")).stdout)
    assert by_run == routed_log.funnel
    # the log holds one run, so counting every run gives the same figures (run_id aside)
    every = json.loads(ok(invoke("funnel", "--log", log, "--json")).stdout)
    assert every["run_id"] is None
    assert {**every, "run_id": run_id} == routed_log.funnel


def test_funnel_text_output(invoke: Invoke, routed_log: RoutedLog):
    result = ok(invoke("funnel", "--log", str(routed_log.log)))
    assert str(routed_log.n_good) in result.stdout


def test_run_limit_routes_only_the_first_messages(
    invoke: Invoke, site: Sitecare, routed_log: RoutedLog, tmp_path: Path
):
    log = tmp_path / "limited.sqlite"
    args = ["run", str(routed_log.messages), *site.pipeline_args(), "--log", str(log)]
    result = invoke(*args, "--limit", "25", "--json")
    assert result.exit_code == 1  # line 11 is bad; line 43 lies past the limit, never read
    assert ":11: not valid JSON" in result.stderr
    assert ":43:" not in result.stderr
    funnel = json.loads(result.stdout)
    assert funnel["messages"] == 25
    assert _count(log, "SELECT COUNT(*) FROM turns") == 25


def test_run_missing_messages_file_is_one_line_and_creates_no_log(
    call_main: CallMain, site: Sitecare, tmp_path: Path
):
    log = tmp_path / "never.sqlite"
    missing = tmp_path / "nope.jsonl"
    code, out, err = call_main("run", str(missing), *site.pipeline_args(), "--log", str(log))
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    assert err.strip().count("\n") == 0
    assert err.startswith(f"error: {missing}:0: cannot read the message file")
    assert not log.exists()


def test_run_with_a_repeated_id_keeps_every_good_line_and_exits_1(
    call_main: CallMain, site: Sitecare, tmp_path: Path
):
    """Issue 12 item 1: one repeated id used to abort the batch and log no turn at all."""
    lines = site.messages.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[4])
    repeat = json.dumps({**first, "text": "the same id again"})
    mixed = [*lines[:20], repeat, "{not json", *lines[20:]]
    messages = tmp_path / "dup.jsonl"
    messages.write_text("\n".join(mixed) + "\n", encoding="utf-8")
    log = tmp_path / "dup.sqlite"
    code, out, err = call_main(
        "run", str(messages), *site.pipeline_args(), "--log", str(log), "--json"
    )
    assert code == 1, err
    assert json.loads(out)["messages"] == len(lines)
    assert _count(log, "SELECT COUNT(*) FROM turns") == len(lines)
    flat = " ".join(err.split())  # rich may wrap a long line
    assert f"{messages}:21: id {first['id']!r} is already used on line 5" in flat
    assert f"{messages}:22: not valid JSON" in flat
    assert "skipped 2 bad line(s)" in flat
    with sqlite3.connect(f"file:{log}?mode=ro", uri=True) as conn:
        (text,) = conn.execute(
            "SELECT message_text FROM turns WHERE message_id = ?", (str(first["id"]),)
        ).fetchone()
    conn.close()
    assert text == first["text"]  # the first line with the id is the one kept


def test_run_with_only_good_lines_exits_0(call_main: CallMain, site: Sitecare, tmp_path: Path):
    lines = site.messages.read_text(encoding="utf-8").splitlines()[:15]
    messages = tmp_path / "good.jsonl"
    messages.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = call_main(
        "run", str(messages), *site.pipeline_args(), "--log", str(tmp_path / "g.sqlite")
    )
    assert code == 0, err
    assert "bad line" not in err


def test_verify_prints_each_runs_head(call_main: CallMain, routed_log: RoutedLog):
    code, out, _ = call_main("log", "verify", "--log", str(routed_log.log))
    assert code == 0
    run_id = routed_log.funnel["run_id"]
    assert f"head of run {run_id}: {routed_log.n_good} chained turn(s), c1:" in out
    code, out, _ = call_main("log", "verify", "--log", str(routed_log.log), "--json")
    (head,) = json.loads(out)["heads"]
    assert (head["run_id"], head["turns"]) == (run_id, routed_log.n_good)


@pytest.mark.postgres
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_nul_or_an_over_long_id_fails_its_line_alone_on_either_backend(
    call_main: CallMain,
    site: Sitecare,
    tmp_path: Path,
    backend: str,
    request: pytest.FixtureRequest,
) -> None:
    """Issue 27: one NUL in 200 messages logged none of them on PostgreSQL (exit 2)."""
    lines = site.messages.read_text(encoding="utf-8").splitlines()[:30]
    base = json.loads(lines[0])
    bad = [
        json.dumps({**base, "id": "nul-text", "text": "connect my\u0000domain"}),
        json.dumps({**base, "id": "nul\u0000id"}),
        json.dumps({**base, "id": "x" * 600}),
    ]
    messages = tmp_path / "nul.jsonl"
    messages.write_text("\n".join([*lines[:10], *bad, *lines[10:]]) + "\n", encoding="utf-8")
    log = str(tmp_path / "nul.sqlite")
    if backend == "postgres":
        server, schema = request.getfixturevalue("pg_schema")
        log = f"{server}?schema={schema}"
    code, out, err = call_main("run", str(messages), *site.pipeline_args(), "--log", log, "--json")
    assert code == 1, err
    assert json.loads(out)["messages"] == len(lines)
    flat = " ".join(err.split())
    assert f"{messages}:11: field 'text' holds a NUL character" in flat
    assert f"{messages}:12: field 'id' holds a NUL character" in flat
    assert f"{messages}:13: field 'id' is longer than 512 bytes" in flat
    from maitred.log.base import open_log

    with open_log(log, read_only=True) as reader:
        assert len(list(reader.iter_turns())) == len(lines)
