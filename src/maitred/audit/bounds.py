"""Where a predicate's verdict can flip: the values each state key is compared with.

A parity audit is only as good as its fixtures, and the fixtures that matter sit on the edges of
the predicates: ``site.version_count < 2`` flips between 1 and 2, ``plan == "free"`` between
``"free"`` and anything else, ``now - paid_at > 14 days`` one second either side of 14 days. This
module reads each predicate and returns, per state key it declares, the **boundary values** worth
trying (:class:`KeyHint`):

* **CEL predicates** are tokenised and every comparison (``==``, ``!=``, ``<``, ``<=``, ``>``,
  ``>=``, ``in [...]``) between a declared key and a literal gives that literal and, for numbers,
  its neighbours (``L - 1``, ``L``, ``L + 1``). ``now - key OP n`` and ``key OP now - n`` give the
  timestamps ``now - n`` and its neighbours. ``key OP other_key`` links the two keys so that both
  draw from one numeric pool (and so hit equality). A flag literal (``true``/``false``) brings
  the four encodings a source may send: ``True``, ``False``, ``1``, ``0``.
* **Python predicates** are read with :mod:`ast`: every constant in the function, and every
  module-level constant it names (``REFUND_WINDOW_S``, a ``frozenset`` of plans), is a candidate;
  when the function reads ``state.now``, numbers are also taken as ages (``now - n`` and its
  neighbours). A module may declare exact values with ``AUDIT_VALUES = {"key": [v, ...]}``.
* Keys nothing is compared with get generic values: timestamps (by name: ``*_at``, ``*_ts``)
  a few days either way, anything else a mix of flags, small integers and a string.

Hints never decide anything: they only feed :mod:`maitred.audit.fixtures`, which adds odd
values, missing keys and stale ages on top. Values are deduplicated by type *and* value, since
``True == 1`` in Python but not for a CEL flag test.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from maitred.contract.predicate import CelPredicate, Predicate, PythonPredicate

DAY = 86400
#: The module-level name a predicate's module may use to declare audit values per key.
HINT_NAME = "AUDIT_VALUES"
FLAGS: tuple[Any, ...] = (False, True, 0, 1)
_GENERIC_AGES_DAYS = (0, 1, 7, 30, 365)
_GENERIC: tuple[Any, ...] = (False, True, 0, 1, 2, "x")
_TIMESTAMP_SUFFIXES = ("_at", "_ts", "_time", "_date")


@dataclass
class KeyHint:
    """Boundary values for one state key, in the order they were found (simplest first).

    Attributes:
        key: the dotted state key.
        values: candidate values, deduplicated by (type, value).
        timestamp: the key holds unix seconds (by name, or compared against ``now``).
        numeric: the key is compared as a number somewhere.
        linked: other keys it is compared with (they share numeric values).
    """

    key: str
    values: list[Any] = field(default_factory=list)
    timestamp: bool = False
    numeric: bool = False
    linked: set[str] = field(default_factory=set)

    def add(self, *values: Any) -> None:
        """Append values not seen yet (by type and value)."""
        seen = {_typed(v) for v in self.values}
        for value in values:
            if _typed(value) not in seen:
                seen.add(_typed(value))
                self.values.append(value)


def _typed(value: Any) -> tuple[str, Any]:
    return (type(value).__name__, value)


def looks_like_timestamp(key: str) -> bool:
    """True for keys named like unix-seconds timestamps (``billing.last_payment_at``)."""
    return key.rsplit(".", 1)[-1].endswith(_TIMESTAMP_SUFFIXES)


def hints_for(predicates: Iterable[Predicate], now: int) -> dict[str, KeyHint]:
    """Boundary hints for every key the predicates read, with ``now`` the audit's clock."""
    hints: dict[str, KeyHint] = {}
    for predicate in predicates:
        for key in predicate.reads:
            hints.setdefault(key, KeyHint(key, timestamp=looks_like_timestamp(key)))
        if isinstance(predicate, CelPredicate):
            _from_cel(predicate.expression, predicate.reads, hints, now)
        elif isinstance(predicate, PythonPredicate):
            _from_python(predicate, hints, now)
    _link(hints)
    for hint in hints.values():
        _generic(hint, now)
    return hints


def _neighbours(value: Any) -> tuple[Any, ...]:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return FLAGS if isinstance(value, bool) else (value,)
    if isinstance(value, int):
        return (value - 1, value, value + 1)
    if isinstance(value, float):
        return (value - 0.5, value, value + 0.5)
    return (value,)


def _generic(hint: KeyHint, now: int) -> None:
    """Fill in values for a key nothing compared with a literal."""
    if hint.timestamp:
        hint.add(*(now - d * DAY for d in _GENERIC_AGES_DAYS))
    elif hint.numeric and not hint.values:
        hint.add(0, 1, 2, 3, 5)
    elif not hint.values:
        hint.add(*_GENERIC)


def _link(hints: Mapping[str, KeyHint]) -> None:
    """Keys compared with each other share their numeric values, so equality is reachable."""
    for hint in hints.values():
        for other in sorted(hint.linked):
            peer = hints.get(other)
            if peer is None:
                continue
            numbers = [v for v in [*hint.values, *peer.values] if _is_number(v)]
            if not numbers:
                numbers = [0, 1, 2, 3, 5]
            hint.add(*numbers)
            peer.add(*numbers)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# -- CEL ------------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
   |(?P<str>[rR]?(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'))
   |(?P<num>\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|0x[0-9a-fA-F]+[uU]?|\d+[uU]?)
   |(?P<path>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
   |(?P<op>==|!=|<=|>=|&&|\|\||[<>!\-+*/%\[\](),?:{}])
   |(?P<other>.)
    """,
    re.VERBOSE,
)
_COMPARE = frozenset({"==", "!=", "<", "<=", ">", ">=", "in"})
_WORDS = {"true": True, "false": False, "null": None}


@dataclass(frozen=True)
class _Tok:
    kind: str  # "lit", "path", "op"
    text: str
    value: Any = None


def _tokens(expression: str) -> list[_Tok]:
    out: list[_Tok] = []
    for match in _TOKEN.finditer(expression):
        kind, text = match.lastgroup or "other", match.group()
        if kind == "ws":
            continue
        if kind == "str":
            out.append(_Tok("lit", text, _string(text)))
        elif kind == "num":
            out.append(_Tok("lit", text, _number(text)))
        elif kind == "path" and text in _WORDS:
            out.append(_Tok("lit", text, _WORDS[text]))
        elif kind == "path" and text == "in":
            out.append(_Tok("op", text))
        else:
            out.append(_Tok("path" if kind == "path" else "op", text))
    return out


def _string(text: str) -> str:
    raw = text[1:] if text[0] in "rR" else text
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return raw[1:-1]
    return value if isinstance(value, str) else raw[1:-1]


def _number(text: str) -> int | float:
    text = text.rstrip("uU")
    if text.startswith("0x"):
        return int(text, 16)
    return float(text) if any(c in text for c in ".eE") else int(text)


@dataclass(frozen=True)
class _Operand:
    """One side of a comparison: a key (maybe ``now - key`` or ``key + n``), ``now`` (maybe
    ``now - n``), or literals (one, or the elements of a list)."""

    kind: str  # "key", "age", "now", "lits"
    key: str = ""
    offset: float = 0
    values: tuple[Any, ...] = ()


def _key_of(path: str, reads: Iterable[str]) -> str | None:
    for key in reads:
        if path == key or path.startswith(key + "."):
            return key
    return None


def _from_cel(expression: str, reads: tuple[str, ...], hints: dict[str, KeyHint], now: int) -> None:
    toks = _tokens(expression)
    for i, tok in enumerate(toks):
        if tok.kind != "op" or tok.text not in _COMPARE:
            continue
        left, right = _operand_before(toks, i, reads), _operand_after(toks, i + 1, reads)
        if left is None or right is None:
            continue
        _pair(left, right, hints, now)
        _pair(right, left, hints, now)
    # a key called with literal arguments (``name.endsWith(".io")``) gets those literals
    for i, tok in enumerate(toks[:-2]):
        if tok.kind == "path" and toks[i + 1].text == "(" and toks[i + 2].kind == "lit":
            key = _key_of(tok.text.rsplit(".", 1)[0], reads)
            if key is not None:
                hints[key].add(toks[i + 2].value)


def _pair(a: _Operand, b: _Operand, hints: dict[str, KeyHint], now: int) -> None:
    """Record what comparing ``a`` (a key side) with ``b`` says about ``a``'s key."""
    if a.kind not in ("key", "age"):
        return
    hint = hints[a.key]
    if b.kind == "lits":
        for value in b.values:
            if a.kind == "age" and _is_number(value):
                hint.timestamp = hint.numeric = True
                hint.add(*(int(now - value) + d for d in (-1, 0, 1)))
            elif _is_number(value):
                hint.numeric = True
                hint.add(*_neighbours(value - a.offset))
            else:
                hint.add(*_neighbours(value))
    elif b.kind == "now" and a.kind == "key":
        hint.timestamp = hint.numeric = True
        hint.add(*(int(now + b.offset - a.offset) + d for d in (-1, 0, 1)))
    elif b.kind in ("key", "age"):
        hint.numeric = True
        hint.linked.add(b.key)


def _operand_after(toks: list[_Tok], i: int, reads: tuple[str, ...]) -> _Operand | None:
    if i >= len(toks):
        return None
    tok = toks[i]
    if tok.text == "[":
        values: list[Any] = []
        sign = 1
        for t in toks[i + 1 :]:
            if t.text == "]":
                return _Operand("lits", values=tuple(values))
            if t.text == "-":
                sign = -sign
            elif t.kind == "lit":
                values.append(-t.value if sign < 0 and _is_number(t.value) else t.value)
                sign = 1
            elif t.text != ",":
                return None
        return None
    if tok.text == "-" and i + 1 < len(toks) and _is_number(toks[i + 1].value):
        return _Operand("lits", values=(-toks[i + 1].value,))
    if tok.kind == "lit":
        return _Operand("lits", values=(tok.value,))
    return _chain(list(_window(toks, i, 3)), reads)


def _operand_before(toks: list[_Tok], i: int, reads: tuple[str, ...]) -> _Operand | None:
    if i == 0:
        return None
    tok = toks[i - 1]
    if tok.text == "]":
        opens = [j for j in range(i - 1) if toks[j].text == "["]
        return _operand_after(toks, opens[-1], reads) if opens else None
    arithmetic = i >= 3 and toks[i - 2].text in ("-", "+") and toks[i - 3].kind == "path"
    if arithmetic:  # ``key + n``, ``now - n``, ``now - key``
        return _chain(toks[i - 3 : i], reads)
    if tok.kind == "lit":
        negative = i >= 2 and toks[i - 2].text == "-" and _is_number(tok.value)
        return _Operand("lits", values=(-tok.value if negative else tok.value,))
    return _chain([tok], reads) if tok.kind == "path" else None


def _window(toks: list[_Tok], i: int, n: int) -> Iterator[_Tok]:
    """Up to ``n`` tokens from ``i``, stopping at anything that ends an operand."""
    for tok in toks[i : i + n]:
        if tok.kind == "op" and tok.text not in ("-", "+"):
            return
        yield tok


def _chain(window: list[_Tok], reads: tuple[str, ...]) -> _Operand | None:
    """``key``, ``now``, ``now - key``, ``key +/- n`` or ``now +/- n`` from a token window."""
    if not window or window[0].kind != "path":
        return None
    head = window[0].text
    key = _key_of(head, reads)
    if len(window) >= 3 and window[1].text in ("-", "+"):
        sign = 1 if window[1].text == "+" else -1
        other = window[2]
        if head == "now" and other.kind == "path" and sign < 0:
            age_key = _key_of(other.text, reads)
            return _Operand("age", key=age_key) if age_key else None
        if _is_number(other.value):
            if head == "now":
                return _Operand("now", offset=sign * other.value)
            return _Operand("key", key=key, offset=sign * other.value) if key else None
    if head == "now":
        return _Operand("now")
    return _Operand("key", key=key) if key else None


# -- Python ---------------------------------------------------------------------------------------


def _from_python(predicate: PythonPredicate, hints: dict[str, KeyHint], now: int) -> None:
    fn = predicate.fn
    env: Mapping[str, Any] = getattr(fn, "__globals__", {})
    declared = env.get(HINT_NAME)
    if isinstance(declared, Mapping):
        for key in predicate.reads:
            hints[key].add(*(declared.get(key) or ()))
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return
    uses_now = any(
        isinstance(node, ast.Attribute) and node.attr == "now" for node in ast.walk(tree)
    )
    constants = list(_constants(tree, env))
    for key in predicate.reads:
        hint = hints[key]
        for value in constants:
            if _is_number(value):
                hint.numeric = True
                if uses_now and (hint.timestamp or not looks_like_timestamp(key)):
                    hint.add(*(int(now - value) + d for d in (-1, 0, 1)))
                if not hint.timestamp:
                    hint.add(*_neighbours(value))
            elif value in predicate.reads:
                continue  # ``state["key"]``: a key, not a value
            elif value is None or not hint.timestamp:
                hint.add(*_neighbours(value))


def _constants(tree: ast.AST, env: Mapping[str, Any]) -> Iterator[Any]:
    """Literal constants in the function body and the module constants it names (one level).

    Decorator arguments, the docstring, ``raise`` statements and f-strings are skipped: their
    constants are messages and options, not values the state is compared with."""
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)), None)
    body: list[ast.AST] = list(fn.body) if fn is not None else [tree]
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Raise, ast.JoinedStr)):
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float, str)):
            yield node.value
        elif isinstance(node, ast.Constant) and node.value is None:
            yield None
        elif isinstance(node, ast.Name) and node.id in env and node.id != HINT_NAME:
            yield from _scalars(env[node.id])
        if isinstance(node, ast.BinOp):
            folded = _fold(node)
            if folded is not None:
                yield folded
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _scalars(value: Any) -> Iterator[Any]:
    if value is None or isinstance(value, (bool, int, float, str)):
        yield value
    elif isinstance(value, (set, frozenset, tuple, list)):
        for item in sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value:
            if item is None or isinstance(item, (bool, int, float, str)):
                yield item


def _fold(node: ast.BinOp) -> int | float | None:
    """``30 * 86400`` -> 2592000 (two number literals joined by + - or *)."""
    left = node.left.value if isinstance(node.left, ast.Constant) else None
    right = node.right.value if isinstance(node.right, ast.Constant) else None
    if not (_is_number(left) and _is_number(right)):
        return None
    a: float = left  # type: ignore[assignment]
    b: float = right  # type: ignore[assignment]
    if isinstance(node.op, ast.Add):
        return a + b
    if isinstance(node.op, ast.Sub):
        return a - b
    if isinstance(node.op, ast.Mult):
        return a * b
    return None
