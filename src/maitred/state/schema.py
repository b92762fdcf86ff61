"""Typed state: what type each state key has, and how a raw value becomes that type.

A *state type* is one of :data:`STATE_TYPES`. It says what a key's value is when it reaches a
predicate, whatever the source stored:

========== ================================================ =======================
type       accepted from the source                         reaches CEL as
========== ================================================ =======================
bool       ``True``/``False``; the integers 0 and 1          ``bool``
int        integers, integral decimals                      ``int``
double     floats, integers, decimals                       ``double``
string     text (UUIDs as text)                             ``string``
timestamp  datetimes, dates, ISO-8601 text, unix seconds    ``int`` unix seconds
json       dicts, lists, JSON text (a SQLite JSON column)   map / list / scalar
any        any JSON-safe value, unchanged                   as it is
========== ================================================ =======================

Timestamps reach predicates as **whole unix seconds**, the unit of ``now`` (an int), so
``account.trial_ends < now`` and ``now - billing.paid_at > 86400`` compare like with like; a date
is its midnight, UTC; a naive datetime is taken as UTC. A SQL ``NULL`` (a JSON ``null``) read
for a key of any type but ``any`` is a **missing** key, decided by the predicate's
``on_missing`` (``block`` by default): ``billing.paused == true`` over a NULL in a BOOLEAN
column never becomes a quiet ``false`` that offers the tool. Under ``any`` a null is a value.

A value that does not fit its declared type (a 2 in a BOOLEAN column, ``"abc"`` in an INTEGER
column of SQLite, which stores what it is given) is **invalid**: the provider records the key in
:attr:`~maitred.state.snapshot.Snapshot.invalid` with the reason, and every predicate that reads
it is an evaluation error, which holds (fails closed) and is logged with the reason.

A provider that knows its keys' types before any fetch is :class:`SchemaAware`: at load, the
keys the catalog reads are looked up there, so a key with no column is a load error and
predicates are type-checked against the types (:mod:`maitred.contract.typecheck`).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final, Literal, Protocol, get_args, runtime_checkable

from maitred.errors import ConfigError
from maitred.state._values import UnsupportedValue, json_safe

StateType = Literal["bool", "int", "double", "string", "timestamp", "json", "any"]
STATE_TYPES: Final[tuple[StateType, ...]] = get_args(StateType)


@dataclass(frozen=True)
class KeySchema:
    """What a provider knows of some keys before reading any account.

    Attributes:
        types: key -> its state type, for every key the provider has a source for.
        absent: key -> why the provider has no source for it ("table 'mailboxes' (root
            'domain') has no column 'verified'"); such a key would be missing for every account.
    """

    types: Mapping[str, StateType] = field(default_factory=dict)
    absent: Mapping[str, str] = field(default_factory=dict)


@runtime_checkable
class SchemaAware(Protocol):
    """A provider that can tell each key's type, and which keys it can never serve."""

    def schema(self, keys: Collection[str]) -> KeySchema:
        """The types of ``keys`` (and why some have no source). May raise ProviderError."""
        ...


def state_type(value: Any, where: str) -> StateType:
    """``value`` checked as a state type name (what a tables mapping or schema file declares).

    Raises:
        ConfigError: a name that is not one of :data:`STATE_TYPES`.
    """
    if value not in STATE_TYPES:
        raise ConfigError(
            f"{where}: type {value!r} is not a state type; choose one of {list(STATE_TYPES)}"
        )
    return value  # type: ignore[no-any-return]


class InvalidValue(ValueError):
    """A value that does not fit its key's declared type (the message says how)."""


def coerce(value: Any, kind: StateType, where: str) -> Any:
    """``value`` as a JSON-safe value of type ``kind`` (``None`` stays ``None``).

    Raises:
        InvalidValue: the value does not fit ``kind``.
        UnsupportedValue: the value cannot be stored in a snapshot at all (bytes, ...).
    """
    if value is None or kind == "any":
        return json_safe(value, where)
    convert = _CONVERTERS[kind]
    result = convert(value)
    if result is _NO_FIT:
        shown = value if not isinstance(value, (bytes, bytearray)) else "<binary>"
        raise InvalidValue(
            f"{where}: {shown!r} ({type(value).__name__}) is not a valid {kind} value"
        )
    return json_safe(result, where)


_NO_FIT: Final = object()


def _to_bool(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, Decimal)) and value in (0, 1):
        return bool(value)
    return _NO_FIT


def _to_int(value: Any) -> Any:
    if isinstance(value, bool):
        return _NO_FIT
    if isinstance(value, int):
        return value
    if isinstance(value, (float, Decimal)) and math.isfinite(value) and value == int(value):
        return int(value)
    return _NO_FIT


def _to_double(value: Any) -> Any:
    if isinstance(value, bool):
        return _NO_FIT
    if isinstance(value, (int, float, Decimal)) and math.isfinite(value):
        return float(value)
    return _NO_FIT


def _to_string(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, uuid.UUID):
        return str(value)
    return _NO_FIT


def _to_timestamp(value: Any) -> Any:
    if isinstance(value, bool):
        return _NO_FIT
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return math.floor(aware.timestamp())
    if isinstance(value, dt.date):
        return _to_timestamp(dt.datetime(value.year, value.month, value.day))
    if isinstance(value, (int, float, Decimal)):
        return math.floor(value) if math.isfinite(value) else _NO_FIT
    if isinstance(value, str):
        try:
            return _to_timestamp(dt.datetime.fromisoformat(value.strip()))
        except ValueError:
            return _NO_FIT
    return _NO_FIT


def _to_json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return _NO_FIT
    try:
        return json_safe(value, "")
    except UnsupportedValue:
        return _NO_FIT


_CONVERTERS: Final = {
    "bool": _to_bool,
    "int": _to_int,
    "double": _to_double,
    "string": _to_string,
    "timestamp": _to_timestamp,
    "json": _to_json,
}


def sqlite_type(declared: str) -> StateType:
    """The state type of a SQLite column from its declared type.

    SQLite's own affinity rules, with the names it leaves to the application read as their
    names say: BOOL/BOOLEAN -> bool, DATE/DATETIME/TIMESTAMP -> timestamp, JSON -> json. A
    column with no declared type (an expression in a view) is ``any``.
    """
    upper = declared.upper()
    if not upper:
        return "any"
    for marker, kind in _SQLITE_MARKERS:
        if marker in upper:
            return kind
    return "double"  # NUMERIC / DECIMAL affinity


_SQLITE_MARKERS: Final[tuple[tuple[str, StateType], ...]] = (
    ("BOOL", "bool"),
    ("JSON", "json"),
    ("DATE", "timestamp"),  # DATE, DATETIME
    ("TIMESTAMP", "timestamp"),
    ("INT", "int"),
    ("CHAR", "string"),
    ("CLOB", "string"),
    ("TEXT", "string"),
    ("UUID", "string"),
    ("BLOB", "any"),  # refused as a value anyway
    ("REAL", "double"),
    ("FLOA", "double"),
    ("DOUB", "double"),
)


def postgres_type(type_name: str, scale: int | None) -> StateType:
    """The state type of a PostgreSQL column from its type's name (``pg_type.typname``)."""
    name = type_name.lower()
    if name.startswith("_"):
        return "json"  # an array reaches CEL as a list
    if name == "numeric":
        return "int" if scale == 0 else "double"
    return _POSTGRES.get(name, "any")


_POSTGRES: Final[dict[str, StateType]] = {
    "bool": "bool",
    "int2": "int",
    "int4": "int",
    "int8": "int",
    "float4": "double",
    "float8": "double",
    "money": "any",
    "text": "string",
    "varchar": "string",
    "bpchar": "string",
    "name": "string",
    "citext": "string",
    "uuid": "string",
    "date": "timestamp",
    "timestamp": "timestamp",
    "timestamptz": "timestamp",
    "json": "json",
    "jsonb": "json",
}
