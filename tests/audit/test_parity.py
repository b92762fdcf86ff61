"""The parity audit on sitecare (sound), the shipped drifted skills (caught) and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from maitred.audit import audit_catalog, audit_domain
from maitred.cli.main import app
from maitred.lab.domains.sitecare import skills_dir

from .conftest import catalog_of, write_skill

DRIFTED = Path(__file__).resolve().parents[2] / "examples" / "drifted"
FIXTURES = 300


@pytest.fixture(scope="module")
def sitecare_report():  # type: ignore[no-untyped-def]
    return audit_domain(skills_dir(), fixtures=FIXTURES, seed=0)


def test_sitecare_has_no_disagreement(sitecare_report) -> None:  # type: ignore[no-untyped-def]
    totals = sitecare_report.totals
    assert totals["skills"] == 11 and totals["fixtures"] == 11 * FIXTURES
    assert totals["soundness_violations"] == 0
    assert totals["missed_blocks"] == 0
    assert totals["procedure_errors"] == 0 and totals["not_auditable"] == 0
    assert sitecare_report.ok


def test_sitecare_fixtures_reach_both_verdicts_and_every_predicate(sitecare_report) -> None:  # type: ignore[no-untyped-def]
    for row in sitecare_report.skills:
        assert 0 < row.gate_blocked < row.fixtures, row.skill
        assert row.procedure_completed > 0, row.skill
        assert row.unchecked == (), row.skill
        for stats in row.predicates:
            assert stats.checked and stats.gate_sole > 0, (row.skill, stats)
            assert stats.procedure_exits > 0, (row.skill, stats)


def test_same_seed_same_report() -> None:
    catalog = catalog_of(skills_dir())
    first = audit_catalog(catalog, fixtures=120, seed=7).to_json()
    assert audit_catalog(catalog, fixtures=120, seed=7).to_json() == first


def test_drifted_example_fails_naming_skill_predicate_and_counterexample() -> None:
    result = CliRunner().invoke(app, ["parity", "--skills", str(DRIFTED), "--fixtures", "400"])
    assert result.exit_code == 1, result.stdout + str(result.exception)
    out = result.stdout
    inline = next(line for line in out.splitlines() if line.startswith("SOUNDNESS setup-mailbox"))
    assert "mailbox_limit_reached" in inline and "inline" in inline
    # the minimal counterexample sits on the boundary the drift moved: count == limit
    assert "mailbox.count=0, mailbox.limit=0" in inline
    skipped = next(line for line in out.splitlines() if line.startswith("SOUNDNESS cancel-sub"))
    assert "never checks already_set_to_cancel" in skipped
    assert "subscription.cancel_at_period_end=True" in skipped
    missed = next(line for line in out.splitlines() if line.startswith("MISSED BLOCK request"))
    assert "payment_older_than_14_days" in missed and "[now-14d]" in missed


def test_drifted_example_as_json() -> None:
    result = CliRunner().invoke(
        app, ["parity", "--skills", str(DRIFTED), "--fixtures", "300", "--json"]
    )
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    for key in ("fixtures", "soundness_violations", "missed_blocks", "not_auditable"):
        assert key in data["totals"]
        assert all(key in row for row in data["skills"])
    rows = {row["skill"]: row for row in data["skills"]}
    assert rows["setup-mailbox"]["soundness_violations"] > 0
    assert rows["cancel-subscription"]["unchecked_predicates"] == ["already_set_to_cancel"]
    assert rows["request-refund"]["soundness_violations"] == 0
    assert rows["request-refund"]["missed_blocks"] > 0
    finding = rows["setup-mailbox"]["findings"][0]
    assert finding["predicates"] == ["mailbox_limit_reached"] and finding["shrunk"]
    assert finding["counterexample"]["values"]["mailbox.count"] == 0
    assert finding["counterexample"]["values"]["mailbox.limit"] == 0


def test_sitecare_cli_passes() -> None:
    result = CliRunner().invoke(
        app, ["parity", "--skills", str(skills_dir()), "--fixtures", "50", "--json"]
    )
    assert result.exit_code == 0, result.stdout
    assert json.loads(result.stdout)["totals"]["soundness_violations"] == 0


SIDECAR = """\
exit_predicates:
  - name: on_free_plan
    expr: account.plan == "free"
    reads: [account.plan]
"""


def test_skill_without_procedure_is_not_auditable(skill_root: Path) -> None:
    write_skill(skill_root, "no-procedure", SIDECAR)
    report = audit_catalog(catalog_of(skill_root), fixtures=50)
    (row,) = report.skills
    assert row.not_auditable and row.fixtures == 0 and "no procedure" in row.reason
    assert report.totals["not_auditable"] == 1
    assert "NOT AUDITABLE no-procedure" in report.summary()


def test_skill_that_fails_to_load_is_not_auditable(skill_root: Path) -> None:
    write_skill(skill_root, "good", SIDECAR + "procedure: scripts/procedure.py:run\n", GOOD)
    write_skill(skill_root, "broken", SIDECAR + "procedure: scripts/missing.py:run\n")
    report = audit_domain(skill_root, fixtures=20)
    rows = {r.skill: r for r in report.skills}
    assert rows["good"].fixtures == 20 and not rows["good"].not_auditable
    assert rows["broken"].not_auditable and "could not be loaded" in rows["broken"].reason
    assert "missing.py" in rows["broken"].reason


GOOD = """\
    def run(ctx):
        ctx.exit_if("on_free_plan")
        ctx.tools.call("do_it", account=ctx.snapshot.account)
        return "done"
"""

RAISES = """\
    def run(ctx):
        ctx.exit_if("on_free_plan")
        if ctx.state.get("account.plan") == "other":
            raise KeyError("plan_limits")
        return "done"
"""


def test_procedure_raising_is_reported_not_crashed_on(skill_root: Path) -> None:
    write_skill(skill_root, "raises", SIDECAR + "procedure: scripts/procedure.py:run\n", RAISES)
    report = audit_catalog(catalog_of(skill_root), fixtures=100)
    (row,) = report.skills
    assert row.procedure_errors > 0 and row.soundness_violations == 0
    (finding,) = [f for f in row.findings if f.kind == "error"]
    assert "KeyError" in finding.procedure and "procedure.py:4" in finding.procedure
    assert finding.counterexample.to_json()["values"] == {"account.plan": "other"}
    assert "PROCEDURE ERROR raises" in report.summary()


def test_tool_calls_are_recorded_not_performed(skill_root: Path) -> None:
    write_skill(skill_root, "good", SIDECAR + "procedure: scripts/procedure.py:run\n", GOOD)
    report = audit_catalog(catalog_of(skill_root), fixtures=60)
    (row,) = report.skills
    assert row.procedure_completed > 0
    assert row.soundness_violations == row.missed_blocks == row.procedure_errors == 0
