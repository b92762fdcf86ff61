"""Build a :class:`~maitred.skills.model.Catalog` from folders of skills and tools files.

Each path given to :func:`load_catalog` is one of:

* a folder of skills, walked recursively: every folder holding a ``SKILL.md`` is a skill (and is
  not descended into; skills do not nest). Hidden folders, ``__pycache__`` and ``node_modules``
  are skipped; symlinks are followed, and a folder reached twice (a symlink loop) is skipped;
* a single skill folder, or its ``SKILL.md``;
* a tools file, by extension: ``.json`` or ``.jsonl`` (see :mod:`maitred.skills.tools`).

What goes wrong is collected, never lost:

* a deviation from the Agent Skills spec is a *warning* in lenient mode and an *error* in strict
  mode (the skill is then not loaded);
* a skill, tool or file that cannot be loaded, a broken ``maitred.yaml`` sidecar (named in the
  error), an unreadable folder, a duplicate name, or nothing found at all is an *error*.

:func:`load_catalog_report` returns everything it found; :func:`load_catalog` raises the first
error (strict mode, duplicates, an empty catalog) or, in lenient mode, logs the errors of skipped
skills on the ``maitred.skills.catalog`` logger and returns what loaded; :func:`validate` is the
never-raising JSON summary behind ``maitred validate``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from maitred.contract.sidecar import SIDECAR
from maitred.contract.tool_sidecar import load_tool_contracts, sidecar_for
from maitred.errors import (
    CatalogError,
    ContractError,
    DuplicateSkillError,
    EmptyCatalogError,
    MaitredError,
    SidecarError,
    SkillParseError,
)
from maitred.skills.agentskills import SKILL_FILE, load_skill, parse_skill_md
from maitred.skills.model import Catalog, Skill
from maitred.skills.report import Diagnostics, LoadReport, Problem
from maitred.skills.tools import TOOL_SUFFIXES, read_tools

PathLike = str | os.PathLike[str]
SKIPPED_DIRS = frozenset({"__pycache__", "node_modules"})
_log = logging.getLogger(__name__)
_WHAT_TO_GIVE = (
    "point at a folder that contains `<name>/SKILL.md` skill folders, a single skill folder, "
    "or a tools .json/.jsonl file"
)


def load_catalog(
    paths: PathLike | Iterable[PathLike],
    *,
    strict: bool = False,
    family_from_parent: bool = False,
    settings: Mapping[str, Any] | None = None,
) -> Catalog:
    """Load every skill and tool under ``paths`` into one catalog.

    Args:
        paths: one path or several: skill folders, folders of skill folders, tools files.
        strict: refuse any deviation from the Agent Skills spec (and raise on any error).
        family_from_parent: give a skill without a declared family its parent folder's name.
        settings: values for the rule factories of tools files' contract sidecars (each
            overrides the sidecar default of the same name; a name no sidecar declares is an
            error).

    Returns:
        The catalog. In lenient mode, skills and tools that could not be loaded are left out and
        logged (use :func:`load_catalog_report` to get them as data).

    Raises:
        SkillParseError: (strict) a skill or tool breaks a rule or cannot be loaded.
        ContractError: (strict) a ``maitred.yaml`` sidecar is invalid.
        DuplicateSkillError: two skills or tools share a name.
        EmptyCatalogError: nothing could be loaded.
    """
    run = _load(paths, strict=strict, family_from_parent=family_from_parent, settings=settings)
    if strict and run.first_error is not None:
        raise run.first_error
    if run.catalog is None:
        assert run.fatal is not None  # lenient: only a catalog-level error leaves no catalog
        raise run.fatal
    for problem in run.diag.warnings:
        _log.warning("%s: %s", problem.where, problem.message)
    for problem in run.diag.errors:
        _log.error("%s: %s (skipped)", problem.where, problem.message)
    return run.catalog


def load_catalog_report(
    paths: PathLike | Iterable[PathLike],
    *,
    strict: bool = False,
    family_from_parent: bool = False,
) -> tuple[Catalog | None, LoadReport]:
    """Like :func:`load_catalog`, but return every warning and error instead of raising.

    Returns:
        ``(catalog, report)``. The catalog is ``None`` when there are duplicate names, nothing
        loaded, or (strict mode) any error at all; lenient mode returns what loaded.
    """
    run = _load(paths, strict=strict, family_from_parent=family_from_parent)
    return run.catalog, run.report()


def validate(
    paths: PathLike | Iterable[PathLike], strict: bool = False, *, lenient: bool = False
) -> dict[str, Any]:
    """Check skills and tools without loading a catalog; never raises on malformed input.

    A validator is stricter than loading for routing: every ``SKILL.md`` deviation from the
    Agent Skills spec (name missing, too long, not ``a-z0-9-``, not the folder's name; a
    description over 1,024 characters; ...) is an *error*, and all of a file's problems are
    reported, not just the first. Advice (a body longer than the spec recommends) and tool-file
    deviations (tools follow MCP/OpenAI rules, not the Agent Skills spec) stay warnings.

    Args:
        paths: as for :func:`load_catalog`.
        strict: load in strict mode: any deviation, tool files' included, is an error, but
            only the first of each file is found.
        lenient: report spec deviations as warnings, as loading for routing treats them.

    Returns:
        ``{"skills": examined, "valid": without errors, "warnings": [...], "errors": [...]}``,
        each warning and error a ``{"path", "field", "message"}`` record (``path`` may end in
        ``:line``; ``field`` may be ``None``).
    """
    try:
        run = _load(paths, strict=strict, family_from_parent=False, rules_are_errors=not lenient)
        return run.report().as_dict()
    except Exception as exc:  # a last guard: validate must answer, whatever it was given
        problem = Problem(str(paths), f"validation failed: {type(exc).__name__}: {exc}")
        return LoadReport(errors=(problem,)).as_dict()


@dataclass
class _Run:
    """One load: what was found, the first error (strict mode raises it) and the error that
    left no catalog (duplicates, nothing found)."""

    strict: bool
    family_from_parent: bool
    diag: Diagnostics
    rules_are_errors: bool = False
    settings: Mapping[str, Any] = field(default_factory=dict)
    settings_used: dict[str, Any] = field(default_factory=dict)
    skills: list[Skill] = field(default_factory=list)
    examined: int = 0
    invalid: int = 0
    first_error: MaitredError | None = None
    fatal: MaitredError | None = None
    catalog: Catalog | None = None

    def fail(self, error: MaitredError, problem: Problem, *, fatal: bool = False) -> None:
        self.diag.error(problem)
        if self.first_error is None:
            self.first_error = error
        if fatal and self.fatal is None:
            self.fatal = error

    def fail_parse(self, error: SkillParseError) -> None:
        self.fail(error, Problem.from_error(error))

    def report(self) -> LoadReport:
        return LoadReport(
            self.examined,
            len(self.skills) - self.invalid,
            tuple(self.diag.warnings),
            tuple(self.diag.errors),
        )


def _load(
    paths: PathLike | Iterable[PathLike],
    *,
    strict: bool,
    family_from_parent: bool,
    rules_are_errors: bool = False,
    settings: Mapping[str, Any] | None = None,
) -> _Run:
    given = [Path(paths)] if isinstance(paths, (str, os.PathLike)) else [Path(p) for p in paths]
    run = _Run(
        strict,
        family_from_parent,
        Diagnostics(strict=strict),
        rules_are_errors,
        dict(settings or {}),
    )
    for path in given:
        _load_path(path, run)
    unused = sorted(set(run.settings) - set(run.settings_used))
    if unused:
        shown = ", ".join(str(p) for p in given)
        unknown = ContractError(
            f"no contract sidecar in {shown} declares the setting(s) {unused}; declared: "
            f"{sorted(run.settings_used) or 'none'}"
        )
        run.fail(unknown, Problem(shown, str(unknown)), fatal=True)
        return run
    names = _check_duplicates(run)
    if not run.skills:
        shown = ", ".join(str(p) for p in given) or "(no paths given)"
        errors = run.diag.errors
        failed = f" ({len(errors)} could not be loaded, first {errors[0].where})" if errors else ""
        error = EmptyCatalogError(f"no skills or tools found in {shown}{failed}: {_WHAT_TO_GIVE}")
        if errors:  # each already says why nothing loaded: a generic report would repeat it
            run.first_error = run.first_error or error
            run.fatal = run.fatal or error
        else:
            run.fail(error, Problem(shown, str(error)), fatal=True)
    elif names and not (strict and run.diag.errors):
        try:
            run.catalog = Catalog(tuple(run.skills))
        except (MaitredError, ValueError, TypeError) as exc:  # values without a canonical form
            shown = ", ".join(str(p) for p in given)
            broken = CatalogError(f"cannot build the catalog from {shown}: {exc}")
            run.fail(broken, Problem(shown, str(broken)), fatal=True)
    return run


def _check_duplicates(run: _Run) -> bool:
    """Record an error for every name used twice; True when all names are unique."""
    first: dict[str, Skill] = {}
    unique = True
    for skill in run.skills:
        if skill.name not in first:
            first[skill.name] = skill
            continue
        unique = False
        error = DuplicateSkillError(skill.name, [first[skill.name].path, skill.path])
        run.fail(error, Problem(skill.path, str(error), "name"), fatal=True)
    return unique


def _load_path(path: Path, run: _Run) -> None:
    """Load whatever ``path`` is (skill folder, folder of skills, SKILL.md, tools file)."""
    where = str(path)
    try:
        if path.is_file():
            if path.suffix.lower() in TOOL_SUFFIXES:
                _load_tools(path, run)
            elif path.name == SKILL_FILE:
                _load_skill(path.parent, run)
            else:
                message = f"is not a skill folder, a {SKILL_FILE} or a tools file: {_WHAT_TO_GIVE}"
                run.fail_parse(SkillParseError(where, message))
        elif path.is_dir():
            if (path / SKILL_FILE).is_file():
                _load_skill(path, run)
            else:
                _load_tree(path, run)
        else:
            run.fail_parse(SkillParseError(where, f"does not exist: {_WHAT_TO_GIVE}"))
    except OSError as exc:
        run.fail_parse(SkillParseError(where, f"cannot be read ({exc.strerror or exc})"))


def _load_tree(root: Path, run: _Run) -> None:
    before = run.examined
    for folder in _skill_folders(root, run):
        _load_skill(folder, run)
    if run.examined == before:
        run.diag.warnings.append(
            Problem(str(root), f"holds no {SKILL_FILE} in any folder below it: {_WHAT_TO_GIVE}")
        )


def _skill_folders(root: Path, run: _Run) -> list[Path]:
    """Folders under ``root`` that hold a ``SKILL.md``, in sorted walk order."""

    def unreadable(exc: OSError) -> None:
        where = exc.filename or str(root)
        message = (
            f"cannot be read ({exc.strerror or exc}): fix its permissions; "
            "skills in it were not loaded"
        )
        run.fail_parse(SkillParseError(str(where), message))

    found: list[Path] = []
    seen: set[tuple[int, int]] = set()
    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable, followlinks=True):
        try:
            info = os.stat(dirpath)
        except OSError:
            dirnames[:] = []
            continue
        if (info.st_dev, info.st_ino) in seen:  # a symlink loop, or a folder linked twice
            dirnames[:] = []
            continue
        seen.add((info.st_dev, info.st_ino))
        if SKILL_FILE in filenames:
            found.append(Path(dirpath))
            dirnames[:] = []
            continue
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIPPED_DIRS)
    return found


def _load_skill(folder: Path, run: _Run) -> None:
    run.examined += 1
    try:
        skill, warnings = load_skill(
            folder, strict=run.strict, family_from_parent=run.family_from_parent
        )
    except SkillParseError as exc:
        run.fail_parse(exc)
    except ContractError as exc:
        _record_md_problems(run, _skill_md_warnings(folder))  # they count all the same
        _fail_sidecar(run, folder, exc)
    except Exception as exc:  # one broken skill must not stop the others from loading
        error = SkillParseError(
            str(folder / SKILL_FILE), f"could not be loaded: {type(exc).__name__}: {exc}"
        )
        error.__cause__ = exc
        run.fail_parse(error)
    else:
        run.invalid += _record_md_problems(run, warnings)
        run.skills.append(skill)  # still checked for duplicate names


def _record_md_problems(run: _Run, warnings: Iterable[Problem]) -> bool:
    """Record a SKILL.md's warnings; True when one breaks a rule a validator counts as error."""
    found = list(warnings)
    broken = [w for w in found if w.rule] if run.rules_are_errors else []
    run.diag.warnings.extend(w for w in found if w not in broken)
    for problem in broken:
        run.fail(problem.to_error(), problem)
    return bool(broken)


def _skill_md_warnings(folder: Path) -> tuple[Problem, ...]:
    """The warnings of a SKILL.md whose sidecar failed (``load_skill`` raised before returning
    them); none when the file cannot be parsed leniently either."""
    md_path = folder / SKILL_FILE
    try:
        here = Path(os.path.abspath(folder)).name
        return parse_skill_md(md_path.read_bytes(), path=str(md_path), folder_name=here)[1]
    except (MaitredError, OSError):
        return ()


def _fail_sidecar(run: _Run, folder: Path, exc: ContractError) -> None:
    """Record a sidecar that cannot be used: each of its problems, with its line."""
    if isinstance(exc, SidecarError):
        for line, message in exc.problems:
            run.fail(exc, Problem(exc.path, message, line=line))
        return
    sidecar = str(folder / SIDECAR)
    wrapped = exc if sidecar in str(exc) else _wrap(sidecar, exc)
    run.fail(wrapped, Problem(sidecar, str(exc).removeprefix(f"{sidecar}: ")))


def _wrap(sidecar: str, exc: Exception) -> ContractError:
    error = ContractError(f"{sidecar}: {exc}")
    error.__cause__ = exc
    return error


def _load_tools(path: Path, run: _Run) -> None:
    diag = Diagnostics(strict=run.strict)
    try:
        tools, examined = read_tools(path, diag)
    except SkillParseError as exc:
        run.examined += 1
        run.fail_parse(exc)
        return
    except Exception as exc:  # as for skills: report it and carry on
        run.examined += 1
        error = SkillParseError(str(path), f"could not be loaded: {type(exc).__name__}: {exc}")
        error.__cause__ = exc
        run.fail_parse(error)
        return
    run.examined += examined
    run.diag.warnings.extend(diag.warnings)
    for problem in diag.errors:
        run.fail(problem.to_error(), problem)
    try:
        found = load_tool_contracts(path, [t.name for t in tools], run.settings)
    except SidecarError as exc:  # no contract, no tools: none may be offered ungated
        for line, message in exc.problems:
            run.fail(exc, Problem(exc.path, message, line=line))
        return
    except ContractError as exc:
        where = str(sidecar_for(path))
        run.fail(exc, Problem(where, str(exc).removeprefix(f"{where}: ")))
        return
    run.settings_used.update(found.settings)
    run.skills.extend(
        replace(
            t,
            contract=found.contracts.get(t.name, t.contract),
            family=found.families.get(t.name, t.family),
        )
        for t in tools
    )
