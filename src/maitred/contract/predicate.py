"""Named predicates over account state: the one declaration that gate and skill share.

An *exit predicate* states a hard condition under which a skill's procedure stops before
completing ("the account has no paid plan"). It **holds** when that condition is true in the
state. The executability gate hides a skill when any of its exit predicates holds; the skill's
procedure checks the very same objects (through
:class:`~maitred.contract.procedure.ProcedureContext`) and stops with
:class:`~maitred.contract.procedure.SkillExit`. Nothing is written twice.

Every predicate declares the state keys it reads (dotted paths such as ``account.plan``), what to
do when one of them is missing or older than ``max_age_s`` (``"block"`` = fail-closed, ``"offer"``
= fail-open), and carries a version: a hash of its source text or expression.

Two kinds share the :class:`Predicate` protocol:

* :class:`PythonPredicate`, made with the :func:`exit_predicate` decorator;
* :class:`CelPredicate`, a Common Expression Language expression, usually from a sidecar file.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import inspect
import sys
import textwrap
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Final, Literal, Protocol, runtime_checkable

from maitred._canonical import text_hash
from maitred.contract.celcheck import check_expression
from maitred.errors import ContractError, PredicateCompileError, UndeclaredStateError
from maitred.state.schema import StateType

#: what a missing or stale read means: ``"block"`` (fail closed) or ``"offer"`` (fail open)
FailMode = Literal["block", "offer"]
FAIL_MODES: tuple[FailMode, ...] = ("block", "offer")
#: a freshness bound: seconds for every key the predicate reads, or per key (keys left out of
#: the mapping have no bound), or None for no bound at all
MaxAge = float | Mapping[str, float] | None


def max_age_for(bound: MaxAge, key: str) -> float | None:
    """The freshness bound that applies to ``key`` under ``bound``."""
    if bound is None or isinstance(bound, (int, float)):
        return bound
    return bound.get(key)


@runtime_checkable
class Predicate(Protocol):
    """What the gate and procedures need of a predicate."""

    @property
    def name(self) -> str: ...
    @property
    def reads(self) -> tuple[str, ...]: ...
    @property
    def version(self) -> str: ...
    @property
    def on_missing(self) -> FailMode: ...
    @property
    def on_stale(self) -> FailMode: ...
    @property
    def max_age_s(self) -> MaxAge: ...
    @property
    def message(self) -> str: ...

    def holds(self, view: StateView) -> bool:
        """True when the exit condition is true in ``view``. May raise on bad state."""
        ...


class StateView(Mapping[str, Any]):
    """Read-only access to exactly the keys a predicate declared.

    Reading any other key raises :class:`~maitred.errors.UndeclaredStateError`, which the
    evaluator turns into a holding predicate (never a silent pass).
    """

    __slots__ = ("_declared", "_predicate", "_values", "now")

    def __init__(
        self,
        values: Mapping[str, Any],
        declared: Iterable[str],
        predicate: str,
        now: float = 0.0,
    ) -> None:
        self._values = values
        # a predicate's reads are a short tuple: membership in it is as fast as in a set
        self._declared = declared if isinstance(declared, (tuple, frozenset)) else tuple(declared)
        self._predicate = predicate
        #: the snapshot's ``as_of`` (unix seconds): "now" for date rules, fixed for replay
        self.now = now

    def __getitem__(self, key: str) -> Any:
        if key not in self._declared:
            raise UndeclaredStateError(self._predicate, key, self._declared)
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return (k for k in self._declared if k in self._values)

    def __len__(self) -> int:
        return sum(1 for k in self._declared if k in self._values)

    def nested(self) -> dict[str, Any]:
        """The declared values as nested maps (``{"account.plan": x}`` ->
        ``{"account": {"plan": x}}``), plus ``now``: the snapshot time as an int of unix seconds
        (CEL does not mix int and double: store timestamps as ints)."""
        out: dict[str, Any] = {"now": int(self.now)}
        for key in self._declared:
            if key not in self._values:
                continue
            node = out
            parts = key.split(".")
            for part in parts[:-1]:
                nxt = node.setdefault(part, {})
                if not isinstance(nxt, dict):
                    raise ContractError(
                        f"predicate {self._predicate!r}: state key {key!r} nests under a "
                        f"key that holds a value; declare either {'.'.join(parts[:-1])!r} "
                        f"or its fields, not both"
                    )
                node = nxt
            node[parts[-1]] = self._values[key]
        return out


def _check_max_age(name: str, bound: MaxAge, keys: tuple[str, ...]) -> None:
    values = list(bound.values()) if isinstance(bound, Mapping) else [bound]
    if isinstance(bound, Mapping):
        unknown = sorted(set(bound) - set(keys))
        if unknown:
            raise ContractError(
                f"predicate {name!r}: max_age_s names {unknown}, which it does not read; "
                f"it reads {list(keys)}"
            )
    for value in values:
        bad_type = isinstance(value, bool) or not isinstance(value, (int, float))
        if value is not None and (bad_type or value < 0):
            raise ContractError(
                f"predicate {name!r}: max_age_s must be seconds >= 0 (or a map of key -> seconds)"
            )


def _check_common(
    name: str, reads: Iterable[str], on_missing: str, on_stale: str
) -> tuple[str, ...]:
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ContractError(
            f"predicate name {name!r} must be letters, digits, '_' or '-' (it is used in logs)"
        )
    keys = tuple(reads)
    if not keys:
        raise ContractError(f"predicate {name!r} declares no state keys in `reads`")
    for key in keys:
        if not isinstance(key, str) or not all(part for part in key.split(".")):
            raise ContractError(
                f"predicate {name!r}: state key {key!r} must be a dotted path like 'account.plan'"
            )
    for label, mode in (("on_missing", on_missing), ("on_stale", on_stale)):
        if mode not in FAIL_MODES:
            raise ContractError(
                f"predicate {name!r}: {label} is {mode!r}; choose one of {list(FAIL_MODES)}"
            )
    return keys


@dataclass(frozen=True)
class PythonPredicate:
    """A predicate written as a Python function ``fn(state) -> bool``.

    ``state`` is a :class:`StateView`: ``state["account.plan"]`` for a declared key,
    ``state.now`` for the snapshot time (unix seconds)."""

    fn: Callable[[StateView], bool]
    name: str
    reads: tuple[str, ...]
    on_missing: FailMode = "block"
    on_stale: FailMode = "block"
    max_age_s: MaxAge = None
    message: str = ""
    version: str = field(default="")

    def __post_init__(self) -> None:
        keys = _check_common(self.name, self.reads, self.on_missing, self.on_stale)
        _check_max_age(self.name, self.max_age_s, keys)
        object.__setattr__(self, "reads", keys)
        if not self.version:
            try:
                src = textwrap.dedent(inspect.getsource(self.fn))
            except (OSError, TypeError):
                src = f"{self.fn.__module__}.{self.fn.__qualname__}"
            object.__setattr__(self, "version", text_hash(src))

    def holds(self, view: StateView) -> bool:
        result = self.fn(view)
        if not isinstance(result, bool):
            raise ContractError(
                f"predicate {self.name!r} returned {type(result).__name__}, not bool"
            )
        return result

    def __call__(self, view: StateView) -> bool:
        return self.holds(view)


def exit_predicate(
    *,
    reads: Iterable[str],
    name: str | None = None,
    on_missing: FailMode = "block",
    on_stale: FailMode = "block",
    max_age_s: MaxAge = None,
    message: str = "",
) -> Callable[[Callable[[StateView], bool]], PythonPredicate]:
    """Declare a Python function as an exit predicate.

    Example::

        @exit_predicate(reads=["account.plan"], message="Custom domains need a paid plan.")
        def on_free_plan(state):
            return state["account.plan"] == "free"
    """

    def wrap(fn: Callable[[StateView], bool]) -> PythonPredicate:
        return PythonPredicate(
            fn=fn,
            name=name or fn.__name__,
            reads=tuple(reads),
            on_missing=on_missing,
            on_stale=on_stale,
            max_age_s=max_age_s,
            message=message or _first_line(fn.__doc__),
        )

    return wrap


@dataclass(frozen=True)
class CelPredicate:
    """A predicate written as a CEL expression over the declared keys as nested maps.

    ``reads: [account.plan]`` makes ``account.plan`` available to the expression; ``now`` is
    always available (the snapshot time, unix seconds, so date rules replay identically). The
    expression is compiled once; references to undeclared top-level names are refused at
    load time, and so is an expression that can never be a condition (see
    :func:`_check_gives_bool`). Any evaluation error makes the predicate hold. ``origin`` is
    where the expression was written (``path:line``), for load-time type errors
    (:mod:`maitred.contract.typecheck`).
    """

    expression: str
    name: str
    reads: tuple[str, ...]
    on_missing: FailMode = "block"
    on_stale: FailMode = "block"
    max_age_s: MaxAge = None
    message: str = ""
    source: str = ""
    version: str = field(default="")
    origin: str = field(default="", compare=False)
    _program: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        cel = cel_binding()
        keys = _check_common(self.name, self.reads, self.on_missing, self.on_stale)
        _check_max_age(self.name, self.max_age_s, keys)
        object.__setattr__(self, "reads", keys)
        where = f" in {self.source}" if self.source else ""
        try:
            program = cel.compile(self.expression)
        except Exception as exc:  # the binding raises ValueError with a caret diagram
            raise PredicateCompileError(
                f"predicate {self.name!r}{where}: CEL expression does not compile: {exc}\n"
                "fix the expression (see https://cel.dev for the syntax)"
            ) from None
        roots = {key.split(".")[0] for key in keys} | {"now"}
        bound = _comprehension_vars(self.expression)
        unknown = sorted(set(program.variables()) - roots - bound)
        if unknown:
            raise UndeclaredStateError(self.name, unknown[0], keys)
        _check_gives_bool(program, keys, f"predicate {self.name!r}{where}", self.expression)
        object.__setattr__(self, "_program", program)
        if not self.version:
            object.__setattr__(self, "version", text_hash(self.expression))

    def holds(self, view: StateView) -> bool:
        kinds = tuple(_kind_of(view.get(key)) for key in self.reads)
        if fault := _kind_fault(self.expression, self.reads, kinds):
            raise ContractError(f"predicate {self.name!r}: {fault}")
        result = self._program.execute(view.nested())
        if not isinstance(result, bool):
            raise ContractError(
                f"predicate {self.name!r}: expression gave {type(result).__name__}, not bool"
            )
        return result


def _kind_of(value: Any) -> StateType:
    """The state type a value is, as read (``any`` for null, lists and maps)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    return "string" if isinstance(value, str) else "any"


@lru_cache(maxsize=4096)
def _kind_fault(expression: str, reads: tuple[str, ...], kinds: tuple[StateType, ...]) -> str:
    """Why ``expression`` cannot apply to values of these ``kinds`` ("" when it can).

    CEL's equality across types is ``false``, not an error, so ``account.plan == "free"`` over
    a stored ``0`` would quietly never fire. A typed store refuses such a value before it gets
    here (it does not fit its declared type) and refuses such an expression at load; an untyped
    one (a JSON file without ``$types``, a provider that cannot tell) cannot. So every value is
    also checked as what it is: the expression is type-checked, with the load-time checker and
    its allowances, against the kinds of the values read, and one that does not apply to them
    is an evaluation error -- the predicate holds. Cached per expression and kinds, so the
    checker runs once per shape of state, not per call.
    """
    if all(kind == "any" for kind in kinds):
        return ""
    types = {key: kind for key, kind in zip(reads, kinds, strict=True) if kind != "any"}
    errors, _ = check_expression(expression, reads, types)
    if not errors:
        return ""
    shown = ", ".join(f"{key}: {kind}" for key, kind in types.items())
    said = "; ".join(str(error) for error in errors)
    return f"the values read do not fit the expression ({shown}): {said}"


@cache
def cel_binding() -> Any:
    """The CEL binding's compiled core (``cel.cel``: ``compile``, ``Program``, ``Context``).

    It is loaded without running the ``cel`` package's ``__init__``, which also imports the
    package's interactive shell (typer, prompt_toolkit): about 0.2 s of CPU, paid by every
    one-shot command that compiles a predicate, for nothing maitred uses (the package's
    pure-Python ``stdlib`` functions are opt-in through a ``Context``, which maitred does not
    pass). A later ``import cel`` finds this same module, so there is one binding per process.
    Where the extension cannot be found this way, the package is imported as usual.
    """
    with _CEL_LOCK:  # an extension module initialises once per process: never twice at once
        return _load_cel()


_CEL_LOCK = threading.Lock()


def _load_cel() -> Any:
    loaded = sys.modules.get("cel.cel")
    if loaded is not None:
        return loaded
    spec = importlib.util.find_spec("cel")  # a top-level name: found, not imported
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder) / f"cel{suffix}"
            if not path.is_file():
                continue
            loader = importlib.machinery.ExtensionFileLoader("cel.cel", str(path))
            found = importlib.util.spec_from_file_location("cel.cel", path, loader=loader)
            if found is None:
                continue
            module = importlib.util.module_from_spec(found)
            loader.exec_module(module)
            sys.modules["cel.cel"] = module
            return module
    import cel

    return cel


_PROBES: tuple[tuple[str, Any], ...] = (
    ("bool", False),
    ("int", 0),
    ("double", 0.5),
    ("string", ""),
    ("list", []),
    ("map", {}),
    ("null", None),
)
"""One value of each kind state can hold (JSON's kinds, with int and double apart)."""

_CEL_TYPES: Mapping[str, str] = {
    "int": "int",
    "float": "double",
    "str": "string",
    "list": "list",
    "dict": "map",
    "NoneType": "null",
    "bytes": "bytes",
}


_MISSING: Final = object()


def _nest(keys: tuple[str, ...], value: Any) -> dict[str, Any]:
    """Every key set to ``value``, as nested maps (a key under a scalar key is left out)."""
    out: dict[str, Any] = {}
    for key in keys:
        *parents, leaf = key.split(".")
        node: Any = out
        for part in parents:
            node = node.setdefault(part, {}) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node[leaf] = value
    return out


def _check_gives_bool(program: Any, keys: tuple[str, ...], what: str, expression: str) -> None:
    """Refuse at load an expression that yields a value but never a bool.

    The ``cel`` binding has no type checker, so the expression is evaluated with every declared
    key set to one value of each kind (all bools, all ints, ... and all missing). A predicate
    that gives a non-bool for every kind it accepts (``size(account.domains)``, a string
    literal, ``now``) would fail on every turn at run time; one that gives a bool for some kind
    is accepted, since the real types are only known then (a bare ``account.plan`` passes
    here, and fails on its first evaluation if the key does not hold a bool). Errors for a
    probe only mean the expression does not accept that kind.

    Raises:
        PredicateCompileError: no probe gave a bool and at least one gave another value.
    """
    got: set[str] = set()
    for probe in (*_PROBES, ("missing", _MISSING)):
        context = {"now": 0} if probe[1] is _MISSING else {"now": 0, **_nest(keys, probe[1])}
        try:
            result = program.execute(context)
        except Exception:  # this kind of value is not accepted: no information
            continue
        if isinstance(result, bool):
            return
        got.add(_CEL_TYPES.get(type(result).__name__, type(result).__name__))
    if got:
        raise PredicateCompileError(
            f"{what}: CEL expression {expression!r} gives {' or '.join(sorted(got))}, never a "
            "bool, for every kind of value its state keys may hold; a predicate must be true or "
            'false: compare the value (e.g. `size(x) > 0`, `x == "free"`)'
        )


def _first_line(doc: str | None) -> str:
    lines = (doc or "").strip().splitlines()
    return lines[0].strip() if lines else ""


_MACROS = ("all", "exists", "exists_one", "map", "filter")


def _comprehension_vars(expression: str) -> set[str]:
    """Names bound by CEL macros (``xs.all(x, ...)``), which the binding lists as variables."""
    import re

    macros = "|".join(_MACROS)
    pattern = r"\.(?:" + macros + r")\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,"
    return set(re.findall(pattern, expression))
