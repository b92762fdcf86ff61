"""Every error maitred raises, in one tree.

Gate outcomes (a blocked skill, a rejected call) are *data*, never exceptions. Exceptions are
for bad input, broken environments and bugs. Every message says what went wrong, where (file,
line, field, skill, predicate) and what to do next.

::

    MaitredError
    ├── ConfigError                 a setting or argument that cannot work
    │   └── MissingExtraError       an optional dependency is not installed
    ├── CatalogError                skills and tools
    │   ├── SkillParseError         a SKILL.md / tools file that cannot be read (path, line, field)
    │   ├── DuplicateSkillError     two skills or tools with one name
    │   └── EmptyCatalogError       nothing to route over
    ├── ContractError               the maitred contract beside a skill
    │   ├── SidecarError            a maitred.yaml with invalid entries (every one, with its line)
    │   ├── PredicateCompileError   a CEL expression that does not compile
    │   ├── UndeclaredStateError    a predicate read a state key it did not declare
    │   └── ProcedureError          a procedure that cannot be loaded or run
    ├── StateError                  authoritative state
    │   └── ProviderError           a provider that failed or timed out
    │       └── ProviderTimeout
    ├── RecallError                 indexes and retrieval
    │   └── IndexMismatchError      a persisted index built for another catalog
    ├── InputError                  a message / query file with a bad line (path, line)
    ├── ReplayError                 a replay with nothing to report (no turn, every call failed)
    └── LogError                    the decision log
        ├── SchemaError             a log whose schema cannot be used or migrated
        ├── UnstorableError         a value no backend can store (NUL, lone surrogate, long id)
        ├── VerifyError             recomputed hashes disagree with stored ones
        └── DecisionNotFoundError   a decision id the log does not hold (for that tenant)
"""

from __future__ import annotations

from collections.abc import Iterable


class MaitredError(Exception):
    """The root of every error maitred raises on purpose."""


class ConfigError(MaitredError):
    """A setting, option or argument that cannot work."""


class MissingExtraError(ConfigError):
    """An optional dependency is missing; the message names the install command."""

    def __init__(self, what: str, extra: str, package: str | None = None) -> None:
        pkg = package or extra
        super().__init__(
            f"{what} needs the optional dependency {pkg!r}: install it with "
            f"`pip install 'maitred[{extra}]'`"
        )


class CatalogError(MaitredError):
    """Skills and tools that cannot be loaded."""


class SkillParseError(CatalogError):
    """A skill or tool file that cannot be read.

    Attributes:
        path: the file.
        field: the frontmatter field or JSON key at fault, if any.
        line: 1-based line number, if known.
    """

    def __init__(
        self, path: str, message: str, *, field: str | None = None, line: int | None = None
    ) -> None:
        self.path = path
        self.field = field
        self.line = line
        where = path + (f":{line}" if line else "")
        what = f" field {field!r}:" if field else ""
        super().__init__(f"{where}:{what} {message}")
        self.detail = message


class DuplicateSkillError(CatalogError):
    """Two skills or tools share one name."""

    def __init__(self, name: str, paths: Iterable[str]) -> None:
        self.name = name
        self.paths = tuple(paths)
        super().__init__(
            f"skill name {name!r} is used more than once ({', '.join(self.paths)}); "
            "names must be unique: rename one of them (the folder and its `name` field)"
        )


class EmptyCatalogError(CatalogError):
    """A catalog with no skills or tools."""


class ContractError(MaitredError):
    """A maitred contract (cost, predicates, procedure) that cannot be used."""


class SidecarError(ContractError):
    """A ``maitred.yaml`` sidecar with one or more invalid entries, all reported at once.

    Attributes:
        path: the sidecar file.
        problems: ``(line, message)`` for each problem, in file order (``line`` is 1-based, or
            ``None`` when unknown); the error's message lists them all as ``path:line: message``.
    """

    def __init__(self, path: str, problems: Iterable[tuple[int | None, str]]) -> None:
        self.path = path
        self.problems = tuple(problems)
        shown = [
            f"{path}:{line}: {msg}" if line else f"{path}: {msg}" for line, msg in self.problems
        ]
        super().__init__("\n".join(shown))


class PredicateCompileError(ContractError):
    """A predicate expression that does not compile."""


class UndeclaredStateError(ContractError):
    """A predicate read a state key that it did not declare in `reads`."""

    def __init__(self, predicate: str, key: str, declared: Iterable[str]) -> None:
        self.predicate = predicate
        self.key = key
        super().__init__(
            f"predicate {predicate!r} read state key {key!r} but declares only "
            f"{sorted(declared)}; add {key!r} to its `reads`"
        )


class ProcedureError(ContractError):
    """A skill procedure that cannot be loaded or run."""


class StateError(MaitredError):
    """Authoritative state that cannot be read."""


class ProviderError(StateError):
    """A state provider that failed."""


class ProviderTimeout(ProviderError):
    """A state provider that did not answer in time."""


class RecallError(MaitredError):
    """An index or retrieval problem."""


class IndexMismatchError(RecallError):
    """A persisted index that was built for another catalog version."""


class InputError(MaitredError):
    """A line of an input file (messages, queries) that cannot be used."""

    def __init__(self, path: str, line: int, message: str) -> None:
        self.path = path
        self.line = line
        super().__init__(f"{path}:{line}: {message}")


class ReplayError(MaitredError):
    """A counterfactual replay that has no figure to report: no logged turn to ask about, or
    every model call failed (what the model would pick is then unknown, not zero)."""


class LogError(MaitredError):
    """The decision log cannot be opened, written or read."""


class SchemaError(LogError):
    """A decision log whose schema is unknown or newer than this maitred."""


class UnstorableError(LogError):
    """A value the decision log refuses before it is buffered: the input's fault, not the log's.

    A NUL character (PostgreSQL text cannot hold one), a lone surrogate (no UTF-8 encoding) or
    an id longer than :data:`maitred.log.storable.MAX_KEY_BYTES` would fail the whole batch it
    was committed in, so it is refused alone, at ``write``: adapters answer it as the client's
    error (a 422, ``ARGS_INVALID``, a reported input line), never as an outage.

    Attributes:
        column: the log column the value was meant for (``message_text``, ``conversation_id``).
    """

    def __init__(self, message: str, column: str = "") -> None:
        super().__init__(message)
        self.column = column


class VerifyError(LogError):
    """Stored hashes in the decision log disagree with recomputed ones."""


class DecisionNotFoundError(LogError):
    """A turn or action decision id the log does not hold (or not for the tenant asked)."""
