"""The funnel report: DuckDB figures agree with the funnel, charts and HTML are written,
anonymising hides names, and the page renders in headless Chromium."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("duckdb", reason="needs the report extra: pip install 'maitred[report]'")
pytest.importorskip("matplotlib", reason="needs the report extra: pip install 'maitred[report]'")

from log.builders import make_run, make_turn  # tests/ is on sys.path (rootdir packages)
from maitred.analytics import funnel
from maitred.analytics.report import anonymise, collect, write_report
from maitred.errors import LogError
from maitred.log import open_log
from maitred.records import PairRecord


@pytest.fixture()
def log_path(tmp_path: Path) -> Path:
    path = tmp_path / "log.sqlite"
    with open_log(path) as log:
        log.begin_run(make_run("run-1"))
        for n in range(7):
            log.write(make_turn(n, run_id="run-1"))
        log.begin_run(make_run("run-2", tokens_all_skills=500))
        for n in range(3):
            log.write(make_turn(n, run_id="run-2"))
    return path


def test_duckdb_figures_match_the_funnel(log_path: Path) -> None:
    for run in (None, "run-1", "run-2"):
        data, f = collect(log_path, run), funnel(str(log_path), run).to_json()
        assert data.messages == f["messages"]
        assert data.matched == f["matched_messages"]
        assert data.tokens_all == f["tokens_all_skills"]
        assert data.tokens_recall == f["tokens_after_recall"]
        assert data.tokens_gate == f["tokens_after_gate"]
        assert sum(s["blocked"] for s in data.skills) == f["blocked_pairs"]
    # one blocked pair per turn, by one predicate
    assert collect(log_path).predicates == [
        {"skill": "upgrade-plan", "predicate": "on_free_plan", "pairs": 10}
    ]


def test_anonymise_hides_names_and_keeps_counts(log_path: Path) -> None:
    data = collect(log_path)
    anon = anonymise(data)
    text = repr(anon)
    for s in data.skills:
        assert s["skill"] not in text
    assert "on_free_plan" not in text
    assert [s["blocked"] for s in anon.skills] == [s["blocked"] for s in data.skills]
    assert {s["skill"] for s in anon.skills} == {"skill-01", "skill-02", "skill-03"}


def test_write_report_files(log_path: Path, tmp_path: Path) -> None:
    written = write_report(log_path, tmp_path / "out", anonymised=True)
    page = written["html"].read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") == 4
    assert "upgrade-plan" not in page and "skill-0" in page
    for name in ("funnel_messages", "funnel_tokens", "skills", "predicates"):
        assert written[name].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_missing_log_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LogError, match="no decision log"):
        collect(tmp_path / "nope.sqlite")


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.browser
@pytest.mark.skipif(
    CHROMIUM is None, reason="needs Debian's chromium (make browser-deps installs it)"
)
def test_report_renders_in_headless_chromium(log_path: Path, tmp_path: Path) -> None:
    written = write_report(log_path, tmp_path / "out")
    shot = tmp_path / "shot.png"
    assert CHROMIUM is not None
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--window-size=1200,1600",
            f"--screenshot={shot}",
            written["html"].as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a rendered page, not blank
    dump = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            f"--user-data-dir={tmp_path / 'profile2'}",
            "--dump-dom",
            written["html"].as_uri(),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "maitred funnel report" in dump and dump.count("<img") == 4


def test_fail_closed_turns_are_counted_and_flagged(tmp_path: Path) -> None:
    import dataclasses

    path = tmp_path / "log.sqlite"
    withheld = (
        PairRecord("deploy-site", 1, 0.9, False, False, 120),
        PairRecord("add-domain", 2, 0.5, False, False, 60),
    )
    with open_log(path) as log:
        log.begin_run(make_run("run-1"))
        log.write(make_turn(0))
        down = dataclasses.replace(
            make_turn(1, pairs=withheld), provider_error="state_unavailable: ProviderError: down"
        )
        log.write(down)
        unknown = dataclasses.replace(
            make_turn(2, pairs=withheld[:1]), provider_error="account_not_found: no record"
        )
        log.write(unknown)
    data = collect(path, "run-1")
    f = funnel(str(path), "run-1")
    assert data.fail_closed == {
        "state_unavailable": {"turns": 1, "pairs": 2},
        "account_not_found": {"turns": 1, "pairs": 1},
    }
    assert data.fail_closed["state_unavailable"]["pairs"] == f.state_unavailable_pairs
    assert data.fail_closed_turns == f.fail_closed_turns == 2
    page = write_report(path, tmp_path / "out")["html"].read_text(encoding="utf-8")
    assert "2 turn(s) failed closed" in page
    assert "<td>state_unavailable</td><td>1</td>" in page
    clean = tmp_path / "clean.sqlite"
    with open_log(clean) as log:
        log.begin_run(make_run("run-1"))
        log.write(make_turn(0))
    assert collect(clean).fail_closed_turns == 0
    assert "failed closed because" not in write_report(clean, tmp_path / "c")["html"].read_text()
