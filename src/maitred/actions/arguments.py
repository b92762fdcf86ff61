"""A call's arguments checked against its tool's JSON schema, before any policy runs.

The schema is the one the tool file declares (MCP ``inputSchema``, OpenAI ``parameters``,
Anthropic ``input_schema``), checked with the ``jsonschema`` library (Draft 2020-12 keywords:
``type``, ``required``, ``enum``, ``const``, numeric bounds, string and array sizes, nested
``properties`` / ``items``, ``additionalProperties`` ...). Two maitred choices:

* **unknown arguments are refused** unless the schema says otherwise: a top-level object schema
  with ``properties`` and no ``additionalProperties`` is read as ``additionalProperties: false``
  (a model that invents an argument has misread the tool; letting it through would make the
  call's meaning depend on the tool's leniency);
* an integer-valued float (``2.0``) is not an ``integer``: JSON Schema says it is, but a tool
  written in a typed language may not, and the model should send ``2``.

A missing required argument gives ``ARGS_MISSING``; any other violation ``ARGS_INVALID``. Each
names the offending field as a path (``passengers[1].dob``). A schema that is itself invalid
is a contract error at load time.

Validators are compiled once per schema, not per tool or per gate: a process keeps the last
:data:`COMPILED_KEPT` compiled schemas, keyed by the schema's canonical JSON, so tools that share
a schema share one validator, and a catalog rebuilt (an upstream joining the gateway, a second
gate over the same rulebook) compiles only the schemas it has not seen. A validator holds no
state between checks, so sharing one is safe across tools and threads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from maitred.actions.model import ARGS_INVALID, ARGS_MISSING
from maitred.errors import ContractError

if TYPE_CHECKING:  # jsonschema is imported when the first schema is compiled
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

#: how many compiled schemas a process keeps (least recently used dropped first)
COMPILED_KEPT = 4096


@dataclass(frozen=True)
class ArgumentProblem:
    """Why a call's arguments do not fit the schema.

    Attributes:
        code: ``ARGS_MISSING`` or ``ARGS_INVALID``.
        message: one sentence per problem, for the model and for people.
        fields: the offending argument paths.
    """

    code: str
    message: str
    fields: tuple[str, ...]


class ArgumentChecker:
    """The compiled schema of one tool.

    Raises:
        ContractError: the schema is not a valid JSON Schema (names the tool).
    """

    def __init__(self, tool: str, schema: Mapping[str, Any]) -> None:
        from jsonschema.exceptions import SchemaError

        self.tool = tool
        strict = dict(schema)
        if strict.get("type") == "object" and "properties" in strict:
            strict.setdefault("additionalProperties", False)
        key = _key(strict)
        try:
            self._validator = _compile(strict) if key is None else _compiled(key)
        except SchemaError as exc:
            raise ContractError(
                f"tool {tool!r}: its argument schema is not valid JSON Schema: {exc.message}"
            ) from None

    def check(self, arguments: Mapping[str, Any]) -> ArgumentProblem | None:
        """``None`` when the arguments fit; otherwise every problem found, missing ones first."""
        errors = sorted(_leaves(self._validator.iter_errors(dict(arguments))), key=_order)
        if not errors:
            return None
        missing = [e for e in errors if e.validator == "required"]
        chosen = missing or errors
        fields: list[str] = []
        lines: list[str] = []
        for err in chosen:
            for name in _fields_of(err):
                if name not in fields:
                    fields.append(name)
            lines.append(_sentence(err))
        code = ARGS_MISSING if missing else ARGS_INVALID
        return ArgumentProblem(code, "; ".join(dict.fromkeys(lines)), tuple(fields))


def _key(schema: dict[str, Any]) -> str | None:
    """``schema``'s canonical JSON (keys sorted), or ``None`` when the schema is not plain JSON
    data that the text gives back as it is (a key that is not a string, a tuple): then it is
    compiled for its tool alone."""
    try:
        key = json.dumps(schema, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return None
    return key if json.loads(key) == schema else None


@lru_cache(maxsize=COMPILED_KEPT)
def _compiled(key: str) -> Validator:
    """The validator of the schema whose canonical JSON is ``key`` (compiled from a copy of its
    own, so no caller's later change to its schema reaches it)."""
    return _compile(json.loads(key))


def _compile(schema: dict[str, Any]) -> Validator:
    """A validator of ``schema``, checked first against the Draft 2020-12 meta-schema (with
    JSON Schema's own ``integer``).

    Raises:
        SchemaError: ``schema`` is not valid JSON Schema.
    """
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(schema)
    return _strict()(schema)


@cache
def _strict() -> type[Validator]:
    """Draft 2020-12 with maitred's ``integer``: an integer-valued float is not one."""
    from jsonschema import Draft202012Validator
    from jsonschema.validators import extend

    checker = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, v: isinstance(v, int) and not isinstance(v, bool)
    )
    return extend(Draft202012Validator, type_checker=checker)  # type: ignore[no-untyped-call,no-any-return]


def _leaves(errors: Iterator[ValidationError]) -> Iterator[ValidationError]:
    """The most specific errors (``anyOf``/``oneOf`` keep their sub-errors' best match)."""
    for err in errors:
        if err.context:
            yield min(err.context, key=lambda e: -len(e.absolute_path))
        else:
            yield err


def _order(err: ValidationError) -> tuple[int, str]:
    return (0 if err.validator == "required" else 1, _path(err.absolute_path))


def _path(parts: Sequence[Any] | Any) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _properties(err: ValidationError) -> Mapping[str, Any]:
    """The ``properties`` of the schema an error was raised against (``{}`` when none)."""
    schema = err.schema
    found = schema.get("properties") if isinstance(schema, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def _fields_of(err: ValidationError) -> list[str]:
    base = _path(err.absolute_path)
    if err.validator == "required":
        missing = err.message.split("'")[1] if "'" in err.message else ""
        return [f"{base}.{missing}" if base else missing]
    if err.validator == "additionalProperties":
        given = err.instance if isinstance(err.instance, Mapping) else {}
        extra = [k for k in given if k not in _properties(err)]
        return [f"{base}.{k}" if base else str(k) for k in extra]
    return [base or "(arguments)"]


def _sentence(err: ValidationError) -> str:
    where = _path(err.absolute_path)
    if err.validator == "required":
        return f"missing required argument {_fields_of(err)[0]}"
    if err.validator == "additionalProperties":
        extra = ", ".join(_fields_of(err))
        known = ", ".join(sorted(_properties(err)))
        return f"unknown argument(s) {extra}; the arguments are: {known}"
    if err.validator == "type":
        wanted = err.validator_value
        return f"{where or 'the arguments'} must be of type {wanted}, got {_kind(err.instance)}"
    return f"{where or 'the arguments'}: {err.message}"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number (with a fraction)" if not value.is_integer() else "number (float)"
    names = {str: "string", list: "array", dict: "object"}
    return next((n for t, n in names.items() if isinstance(value, t)), type(value).__name__)
