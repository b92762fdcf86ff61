"""The forced-invocation audit on a sitecare decision log built with the real pipeline."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from maitred.audit import audit_blocked, wilson_interval
from maitred.audit.forced import blocked_pairs
from maitred.cli.main import app
from maitred.lab.domains import sitecare
from maitred.log import open_log
from maitred.skills import load_catalog

DRIFTED = Path(__file__).resolve().parents[2] / "examples" / "drifted"


@pytest.fixture(scope="module")
def decision_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``maitred run`` over 150 generated sitecare messages (BM25 recall), logged to SQLite."""
    root = tmp_path_factory.mktemp("forced")
    db, msgs, tables = root / "accounts.sqlite", root / "messages.jsonl", root / "tables.json"
    sitecare.write_accounts(db, 120, seed=3, as_of=int(time.time()))
    sitecare.write_messages(msgs, 150, 120, seed=3)
    tables.write_text(json.dumps(sitecare.TABLES), encoding="utf-8")
    log = root / "decisions.sqlite"
    args = ["run", str(msgs), "--skills", str(sitecare.skills_dir()), "--state", f"sqlite:///{db}"]
    args += ["--tables", str(tables), "--method", "bm25", "--cache-dir", str(root / "cache")]
    result = CliRunner().invoke(app, [*args, "--log", str(log), "--json"])
    assert result.exit_code == 0, result.stderr
    return log


def test_every_sampled_blocked_pair_exits(decision_log: Path) -> None:
    result = CliRunner().invoke(
        app, ["audit", "blocked", "--log", str(decision_log), "--sample", "40", "--json"]
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    data = json.loads(result.stdout)
    assert data["sampled"] == 40 and data["audited"] == 40
    assert data["exited"] == 40 and data["rate"] == 1.0
    assert data["exited_on_fired"] == 40  # each exit is on a predicate the log says fired
    assert data["ci"] == pytest.approx(list(wilson_interval(40, 40)))
    assert data["soundness_findings"] == [] and data["catalog_matches"]


def test_the_draw_is_seeded(decision_log: Path) -> None:
    catalog = load_catalog(sitecare.skills_dir())
    with open_log(decision_log, read_only=True) as log:
        population = blocked_pairs(log)
        a = audit_blocked(log, catalog, 25, seed=5)
        b = audit_blocked(log, catalog, 25, seed=5)
        everything = audit_blocked(log, catalog, 10**6)
    assert a.to_json() == b.to_json()
    assert everything.sampled == everything.population == len(population) > 25
    assert everything.exited == everything.audited == len(population)


def test_drifted_procedures_are_soundness_findings(decision_log: Path) -> None:
    catalog = load_catalog(DRIFTED)
    with open_log(decision_log, read_only=True) as log:
        report = audit_blocked(log, catalog, 10**6)
    completed = report.of("completed")
    assert completed and not report.ok and not report.catalog_matches
    assert {f.pair.skill for f in completed} <= {"setup-mailbox", "cancel-subscription"}
    assert all(f.fired for f in completed)
    skipped = report.of("skipped")
    assert skipped and all("not in the catalog" in f.detail for f in skipped)
    assert report.audited == report.sampled - len(skipped)
    args = ["audit", "blocked", "--log", str(decision_log), "--sample", "1000000"]
    result = CliRunner().invoke(app, [*args, "--skills", str(DRIFTED)])
    assert result.exit_code == 1
    assert "SOUNDNESS (blocked, but the procedure completes)" in result.stdout


def test_pairs_of_a_skill_without_procedure_are_not_auditable(
    tmp_path: Path, decision_log: Path
) -> None:
    skills = tmp_path / "skills"
    shutil.copytree(sitecare.skills_dir(), skills)
    sidecar = skills / "upgrade-plan" / "maitred.yaml"
    lines = sidecar.read_text(encoding="utf-8").splitlines(keepends=True)
    sidecar.write_text("".join(x for x in lines if not x.startswith("procedure:")), "utf-8")
    with open_log(decision_log, read_only=True) as log:
        report = audit_blocked(log, load_catalog(skills), 10**6)
    not_auditable = report.of("not_auditable")
    assert not_auditable and {f.pair.skill for f in not_auditable} == {"upgrade-plan"}
    assert report.audited == report.sampled - len(not_auditable) == report.exited
    assert report.ok


def test_pairs_blocked_by_a_failed_closed_turn_are_not_audited(tmp_path: Path) -> None:
    """An unknown account blocks every state-reading skill with no predicate firing: running the
    procedure on that empty snapshot would report false soundness findings."""
    db, tables = tmp_path / "accounts.sqlite", tmp_path / "tables.json"
    sitecare.write_accounts(db, 5, seed=1, as_of=int(time.time()))
    tables.write_text(json.dumps(sitecare.TABLES), encoding="utf-8")
    msgs = tmp_path / "m.jsonl"
    msgs.write_text(
        json.dumps({"id": "x", "text": "connect my own domain name", "account": "nobody"}) + "\n",
        encoding="utf-8",
    )
    log = tmp_path / "log.sqlite"
    args = ["run", str(msgs), "--skills", str(sitecare.skills_dir()), "--state", f"sqlite:///{db}"]
    args += ["--tables", str(tables), "--method", "bm25", "--family", "--log", str(log)]
    assert CliRunner().invoke(app, args).exit_code == 3  # account_not_found
    with open_log(log, read_only=True) as handle:
        report = audit_blocked(handle, load_catalog(sitecare.skills_dir()), 100)
    assert report.sampled > 0 and report.audited == 0 and not report.of("completed")
    assert all(f.outcome == "not_auditable" for f in report.findings)
    assert "failed closed" in report.findings[0].detail
