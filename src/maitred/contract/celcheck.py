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
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from maitred.state.schema import StateType

_ERROR: Final = re.compile(r"ERROR: <input>:(\d+):(\d+): (.*)")
_OVERLOAD: Final = re.compile(r"found no matching overload for '(_[^']*_)' applied to '\((.*)\)'")
_UNDECLARED: Final = re.compile(r"undeclared reference to '([^']*)'")
_TRAILER: Final = re.compile(r"\s*\[[A-Z_]+\]$")  # the status the last error ends with
_NUMERIC: Final = frozenset({"int", "uint", "double"})
_COMPARISONS: Final = frozenset({"_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_"})


@dataclass(frozen=True)
class CelTypeError:
    """One type error the checker found in an expression, with where it points.

    ``str()`` is one line that quotes the expression's line (for a decision's message);
    :meth:`pointed` is that line with a caret under the column (for a load error).

    Attributes:
        expression: the whole expression checked.
        line: the 1-based line of ``expression`` the error is on (the checker's count).
        column: the 1-based column on that line.
        message: the checker's words (``found no matching overload for '_==_' ...``).
    """

    expression: str
    line: int
    column: int
    message: str

    @property
    def source_line(self) -> str:
        """The line of the expression the error is on."""
        lines = self.expression.splitlines() or [""]
        return lines[min(max(self.line, 1), len(lines)) - 1]

    @property
    def where(self) -> str:
        """``column 7``, or ``line 2, column 7`` in an expression of several lines."""
        several = len(self.expression.splitlines()) > 1
        return f"line {self.line}, column {self.column}" if several else f"column {self.column}"

    def __str__(self) -> str:
        return f"CEL type error at {self.where} of `{self.source_line.strip()}`: {self.message}"

    def pointed(self, indent: str = "    ") -> str:
        """The expression's line, then a caret under the column the error is at."""
        text = self.source_line.rstrip()
        caret = " " * max(self.column - 1, 0) + "^"
        return f"{indent}{text}\n{indent}{caret}"


def check_expression(
    expression: str, reads: Collection[str], types: Mapping[str, StateType]
) -> tuple[list[CelTypeError], str]:
    """(type errors the evaluator would hit, the result type) of ``expression`` with each key
    in ``reads`` declared as its type in ``types`` (``dyn`` when absent) and ``now`` as int."""
    cel = _checker()
    variables = {key: _cel_type(cel, types.get(key, "any")) for key in reads}
    variables["now"] = cel.Type.INT
    env = cel.NewEnv(variables=variables)
    try:
        compiled = env.compile(expression)
    except Exception as exc:  # the checker raises RuntimeError with every error in its text
        return list(_real_errors(expression, str(exc), reads)), "dyn"  # only tolerated: none
    return [], str(compiled.return_type().name()).lower()


def _real_errors(expression: str, text: str, reads: Collection[str]) -> Iterable[CelTypeError]:
    """The errors in the checker's text (``ERROR: <input>:LINE:COL: message`` lines, each
    followed by the checker's own diagram, which is dropped) that the evaluator would hit."""
    for line in text.splitlines():
        match = _ERROR.search(line)
        if match is None:
            continue
        message = _TRAILER.sub("", match.group(3)).strip()
        if not _tolerated(message, reads):
            yield CelTypeError(expression, int(match.group(1)), int(match.group(2)), message)


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
