"""Findings from loading skills and tools: warnings, errors, and the report that holds them.

Loading has two modes, and this module is where they differ:

* **lenient** (the default) loads real-world deviations from the Agent Skills spec and records
  each one as a *warning* (a :class:`Problem`); a file or line that cannot be loaded at all is an
  *error*, reported and skipped so the rest still loads;
* **strict** turns every deviation into a :class:`~maitred.errors.SkillParseError`.

A validator wants a third reading: load leniently (so every problem of a file is found, not just
the first), then report each warning that breaks a spec rule (:attr:`Problem.rule`) as an error.
Advice (:meth:`Diagnostics.advise`, e.g. a body longer than the spec recommends) stays a warning
in every mode.

Parsers report through a :class:`Diagnostics` collector, so a rule is written once and the mode
decides whether breaking it warns or raises. A :class:`LoadReport` is the immutable summary the
catalog hands back; :meth:`LoadReport.as_dict` is the JSON shape ``validate`` returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from maitred.errors import SkillParseError


@dataclass(frozen=True)
class Problem:
    """One warning or error found while loading.

    Attributes:
        path: the file (or folder) at fault.
        message: what is wrong and what to do about it.
        field: the frontmatter field or JSON key at fault, if any (``"metadata.owner"``).
        line: 1-based line number in ``path``, if known.
        rule: whether it breaks a rule of the spec (``maitred skills validate`` reports those as
            errors unless ``--lenient``), rather than advice such as a size recommendation.
    """

    path: str
    message: str
    field: str | None = None
    line: int | None = None
    rule: bool = False

    @property
    def where(self) -> str:
        """``path`` or ``path:line``: where to look."""
        return f"{self.path}:{self.line}" if self.line else self.path

    def as_dict(self) -> dict[str, str | None]:
        """The record ``validate`` returns: ``{"path", "field", "message"}``.

        The line, when known, is folded into ``path`` as ``file:line`` so the record keeps its
        three keys.
        """
        return {"path": self.where, "field": self.field, "message": self.message}

    @classmethod
    def from_error(cls, exc: SkillParseError) -> Problem:
        """The problem a :class:`~maitred.errors.SkillParseError` describes."""
        return cls(exc.path, exc.detail, exc.field, exc.line)

    def to_error(self) -> SkillParseError:
        """The :class:`~maitred.errors.SkillParseError` strict mode raises for this problem."""
        return SkillParseError(self.path, self.message, field=self.field, line=self.line)


@dataclass(frozen=True)
class LoadReport:
    """What loading a catalog found.

    Attributes:
        examined: skill and tool definitions looked at (each ``SKILL.md``, each tool entry; a
            tools file that cannot be parsed at all counts once).
        loaded: definitions that loaded (a duplicate name still counts here, but then the catalog
            itself is refused).
        warnings: deviations that were loaded anyway (lenient mode only).
        errors: what could not be loaded, and catalog-level failures (duplicates, nothing found).
    """

    examined: int = 0
    loaded: int = 0
    warnings: tuple[Problem, ...] = ()
    errors: tuple[Problem, ...] = ()

    @property
    def ok(self) -> bool:
        """True when there are no errors (warnings are allowed)."""
        return not self.errors

    def as_dict(self) -> dict[str, Any]:
        """``{"skills", "valid", "warnings", "errors"}``, the JSON shape of ``validate``."""
        return {
            "skills": self.examined,
            "valid": self.loaded,
            "warnings": [w.as_dict() for w in self.warnings],
            "errors": [e.as_dict() for e in self.errors],
        }


@dataclass
class Diagnostics:
    """Collects warnings and errors while parsing; the one mutable helper of the loaders.

    Args:
        strict: when true, :meth:`deviation` raises instead of warning.
    """

    strict: bool = False
    warnings: list[Problem] = field(default_factory=list)
    errors: list[Problem] = field(default_factory=list)

    def deviation(
        self, path: str, message: str, *, field: str | None = None, line: int | None = None
    ) -> None:
        """A broken spec rule that lenient mode can load anyway: warn, or raise when strict.

        Raises:
            SkillParseError: in strict mode.
        """
        problem = Problem(path, message, field, line, rule=True)
        if self.strict:
            raise problem.to_error()
        self.warnings.append(problem)

    def advise(self, path: str, message: str, *, line: int | None = None) -> None:
        """A recommendation the spec makes but does not require: always only a warning."""
        self.warnings.append(Problem(path, message, line=line))

    def error(self, problem: Problem) -> None:
        """Record something that could not be loaded (it is skipped)."""
        self.errors.append(problem)
