"""`maitred skills validate` and `maitred index`."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from maitred.cli._common import (
    CACHE_OPT,
    METHOD_OPT,
    SKILLS_OPT,
    console,
    dump_json,
    index_progress,
)
from maitred.recall.registry import make_recaller
from maitred.settings import Settings
from maitred.skills.catalog import load_catalog
from maitred.skills.catalog import validate as validate_paths


def validate(
    paths: list[Path] = typer.Argument(..., help="Skill folders or tool files."),
    lenient: bool = typer.Option(
        False,
        "--lenient",
        help="Report Agent Skills spec deviations as warnings (as loading for routing does).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Check skill folders and tool files against the Agent Skills spec; never crashes.

    Every deviation from the spec's rules is an error (exit 1) unless --lenient; size advice
    and tool-file deviations are warnings. Each problem names its file and line.
    """
    report = validate_paths([str(p) for p in paths], lenient=lenient)
    if as_json:
        dump_json(report)
    else:
        console.print(
            f"{report['valid']}/{report['skills']} valid, {len(report['warnings'])} warnings, "
            f"{len(report['errors'])} errors"
        )
        for kind, items in (("warning", report["warnings"]), ("error", report["errors"])):
            for item in items:
                field = f" [{item['field']}]" if item.get("field") else ""
                console.print(
                    f"  {kind}: {item['path']}{field}: {item['message']}",
                    highlight=False,
                    markup=False,  # paths, fields ("[name]") and messages are not markup
                    soft_wrap=True,  # one line per problem, whatever the terminal width
                )
    if report["errors"]:
        raise typer.Exit(1)


def index(
    skills: list[str] = SKILLS_OPT,
    method: str = METHOD_OPT,
    cache_dir: Path | None = CACHE_OPT,
) -> None:
    """Build (or reuse) the persisted recall index for a catalog."""
    catalog = load_catalog(skills)
    where = cache_dir or Settings.from_env().cache_dir
    start = time.perf_counter()
    make_recaller(method, catalog, cache_dir=where, progress=index_progress())
    console.print(
        f"{method} index for {len(catalog)} skills (catalog {catalog.version[:15]}) ready in "
        f"{where} ({time.perf_counter() - start:.1f}s; reused when the catalog is unchanged)",
        highlight=False,
    )
