"""`maitred skills validate` and `maitred index`."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from maitred.cli._common import (
    CACHE_OPT,
    METHOD_OPT,
    SKILLS_OPT,
    TABLES_OPT,
    console,
    dump_json,
    index_progress,
    load_tables,
)
from maitred.contract.typecheck import policy_argument_problems, typed_state_problems
from maitred.errors import ConfigError
from maitred.gate.executability import require_coverage
from maitred.recall.registry import make_recaller
from maitred.settings import Settings
from maitred.skills.catalog import load_catalog
from maitred.skills.catalog import validate as validate_paths
from maitred.skills.model import Catalog
from maitred.state.registry import open_provider


def validate(
    paths: list[Path] = typer.Argument(..., help="Skill folders or tool files."),
    lenient: bool = typer.Option(
        False,
        "--lenient",
        help="Report Agent Skills spec deviations as warnings (as loading for routing does).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    state: str | None = typer.Option(
        None,
        "--state",
        metavar="URL|PATH",
        help="Also check the contracts against this state store (as `route` opens it): every "
        "key read must exist, every CEL predicate must type-check against its columns "
        "(default: the contracts alone, without a store).",
    ),
    tables: Path | None = TABLES_OPT,
) -> None:
    """Check skill folders and tool files against the Agent Skills spec; never crashes.

    Every deviation from the spec's rules is an error (exit 1) unless --lenient; size advice
    and tool-file deviations are warnings. Each problem names its file and line. With
    --state, the load-time checks a pipeline makes against its store are errors too.
    """
    report = validate_paths([str(p) for p in paths], lenient=lenient)
    if not report["errors"]:
        catalog = load_catalog([str(p) for p in paths])
        report["errors"].extend(
            {"path": "", "field": "policies", "message": problem}
            for problem in policy_argument_problems(catalog)
        )
        if state is not None:
            report["errors"].extend(_state_errors(catalog, state, tables))
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


def _state_errors(catalog: Catalog, state: str, tables: Path | None) -> list[dict[str, str]]:
    """The load-time state checks of a pipeline (:func:`require_coverage`,
    :func:`typed_state_problems`), as report errors naming the state store."""
    provider = open_provider(state, load_tables(tables))
    try:
        require_coverage(catalog, provider)
        problems = typed_state_problems(catalog, provider)
    except ConfigError as exc:
        problems = [str(exc)]
    finally:
        close = getattr(provider, "close", None)
        if callable(close):
            close()
    return [{"path": state, "field": "", "message": problem} for problem in problems]


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
