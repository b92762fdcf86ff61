"""Google's CEL type checker, asked about one expression: what the evaluator would trip on.

Predicates are *evaluated* by the ``cel`` binding; this module asks the checker of
``cel-expr-python`` whether an expression fits given types for the keys it reads, allowing
what the binding runs anyway (see :mod:`maitred.contract.typecheck`, which uses it at load, and
:class:`~maitred.contract.predicate.CelPredicate`, which uses it on the kinds of the values read).
It imports nothing else of maitred's, so both can.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from functools import cache
from typing import Any, Final

from maitred.state.schema import StateType

_ERROR: Final = re.compile(r"ERROR: <input>:(\d+):(\d+): (.*)")
_OVERLOAD: Final = re.compile(r"found no matching overload for '(_[^']*_)' applied to '\((.*)\)'")
_UNDECLARED: Final = re.compile(r"undeclared reference to '([^']*)'")
_NUMERIC: Final = frozenset({"int", "uint", "double"})
_COMPARISONS: Final = frozenset({"_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_"})


def check_expression(
    expression: str, reads: Collection[str], types: Mapping[str, StateType]
) -> tuple[list[str], str]:
    """(type errors the evaluator would hit, the result type) of ``expression`` with each key
    in ``reads`` declared as its type in ``types`` (``dyn`` when absent) and ``now`` as int."""
    cel = _checker()
    variables = {key: _cel_type(cel, types.get(key, "any")) for key in reads}
    variables["now"] = cel.Type.INT
    env = cel.NewEnv(variables=variables)
    try:
        compiled = env.compile(expression)
    except Exception as exc:  # the checker raises RuntimeError with every error in its text
        return list(_real_errors(str(exc), reads)), "dyn"  # only tolerated errors: none
    return [], str(compiled.return_type().name()).lower()


def _real_errors(text: str, reads: Collection[str]) -> Iterable[str]:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        match = _ERROR.search(line)
        if match is None:
            continue
        message = match.group(3).strip()
        if _tolerated(message, reads):
            continue
        snippet = lines[i + 2].strip() if i + 2 < len(lines) else ""
        yield f"CEL type error at column {match.group(2)}: {message}" + (
            f" in `{snippet}`" if snippet else ""
        )


def _tolerated(message: str, reads: Collection[str]) -> bool:
    """Whether the evaluator (the ``cel`` binding) runs what the checker refused."""
    overload = _OVERLOAD.search(message)
    if overload is not None and overload.group(1) in _COMPARISONS:
        operands = {part.strip() for part in overload.group(2).split(",")}
        if operands <= _NUMERIC or "null_type" in operands:
            return True
    undeclared = _UNDECLARED.search(message)
    if undeclared is not None:
        name = undeclared.group(1)
        roots = {key.split(".")[0] for key in reads} | {"now"}
        return name.split(".")[0] not in roots  # a function the checker lacks
    return False


def _cel_type(cel: Any, kind: StateType) -> Any:
    return {
        "bool": cel.Type.BOOL,
        "int": cel.Type.INT,
        "double": cel.Type.DOUBLE,
        "string": cel.Type.STRING,
        "timestamp": cel.Type.INT,  # whole unix seconds, like `now`
    }.get(kind, cel.Type.DYN)


@cache
def _checker() -> Any:
    """Google's CEL (``cel-expr-python``), used for its type checker only."""
    from cel_expr_python import cel  # type: ignore[import-untyped]

    return cel
