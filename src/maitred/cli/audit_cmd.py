"""`maitred parity` and `maitred audit blocked`: the gate checked against the skills' procedures.

Both are thin over :mod:`maitred.audit`; both exit 1 on a soundness finding (a blocked skill whose
procedure completes), so they can gate a build. :mod:`maitred.audit` is imported when one of
them runs: it brings in hypothesis, which no other command should pay for at start-up.
"""

from __future__ import annotations

from pathlib import Path

import typer

from maitred.cli._common import LOG_OPT, console, dump_json, err_console
from maitred.cli._conventions import App
from maitred.errors import ConfigError
from maitred.lab.domains.sitecare import skills_dir
from maitred.log.base import open_log
from maitred.settings import Settings
from maitred.skills.catalog import load_catalog


def parity(
    skills: Path = typer.Option(
        ..., "--skills", "-s", help="A folder of skill folders (each with maitred.yaml)."
    ),
    fixtures: int = typer.Option(
        1000, "--fixtures", "-n", min=1, help="How many state fixtures per skill."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the random fixtures."),
    as_json: bool = typer.Option(False, "--json", help="Print per-skill rows and totals as JSON."),
) -> None:
    """Run every skill's procedure in a sandbox on generated states and compare with the gate.

    Exit status 1 when the gate blocks a state on which the procedure completes (a soundness
    violation); missed blocks and procedure errors are reported but do not fail.
    """
    if not skills.exists():
        raise ConfigError(f"--skills {skills}: no such folder; give a folder of skill folders")

    def progress(skill: str, done: int, total: int) -> None:
        err_console.print(f"  parity {done}/{total}: {skill}", highlight=False)

    from maitred.audit.parity import audit_domain

    report = audit_domain(
        skills, fixtures=fixtures, seed=seed, progress=None if as_json else progress
    )
    if as_json:
        dump_json(report.to_json())
    else:
        console.print(report.summary(), highlight=False, markup=False, soft_wrap=True)
    if not report.ok:
        raise typer.Exit(1)


def blocked(
    log: str | None = LOG_OPT,
    sample: int = typer.Option(
        ..., "--sample", "-n", min=1, help="How many blocked pairs to draw."
    ),
    skills: list[Path] | None = typer.Option(
        None,
        "--skills",
        "-s",
        help="The skills the log was written with; repeatable (default: the built-in sitecare "
        "skills).",
    ),
    run: str | None = typer.Option(
        None, "--run", help="Only pairs of this run id (default: every run)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the draw."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Re-run the procedures of a seeded sample of blocked pairs on their logged snapshots.

    Reports how many really exit (with a Wilson interval); exit status 1 when a blocked pair's
    procedure completes (a soundness finding).
    """
    from maitred.audit.forced import audit_blocked

    catalog = load_catalog(list(skills) if skills else skills_dir())
    with open_log(log or Settings.from_env().log, read_only=True) as handle:
        report = audit_blocked(handle, catalog, sample, seed=seed, run_id=run)
    if not skills and not report.catalog_matches:
        raise ConfigError(
            "the log was not written with the built-in sitecare skills (catalog versions "
            "differ): pass the skills it was written with, --skills DIR"
        )
    if as_json:
        dump_json(report.to_json())
    else:
        console.print(report.summary(), highlight=False, markup=False, soft_wrap=True)
    if not report.ok:
        raise typer.Exit(1)


def register(app: App, eval_app: App) -> None:
    """Add `parity` and the `audit` group (`audit blocked`) to the `maitred` app.

    `parity` took its catalog as ``--domain``/``-d``; those stay as hidden aliases.
    """
    app.command("parity", aliases={"--domain": "--skills", "-d": "-s"})(parity)
    audit_app = App(help="Audits of the gate against the decision log.")
    audit_app.command("blocked")(blocked)
    app.add_typer(audit_app, name="audit")
