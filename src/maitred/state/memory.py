"""Document state providers: a Python mapping in memory, or a JSON file that hot-reloads.

Both hold, per account, a document of fields -- nested (``{"account": {"plan": "free"}}``),
dotted (``{"account.plan": "free"}``) or a mix; they are normalised into one tree when loaded
(see :mod:`maitred.state._values`), so a key can be asked for by its dotted path, and a key that
names a group of fields (``billing.address``) returns that group as a dict.

Invariants:

* every requested key comes back as a value or in ``missing``; an unknown account has every key
  missing **and** ``account_found=False``, so the gate fails closed with the cause
  ``account_not_found`` instead of letting ``on_missing`` policies decide (data, not an error);
* values are copied out, so nothing a caller does to a snapshot changes the provider;
* a JSON file is re-read when its modification time, size or inode changes, and never served
  half-read: a file that stops parsing raises :class:`~maitred.errors.ProviderError` (so the
  gate fails closed) until it parses again.

A JSON file may declare its keys' types under the reserved top-level key ``"$types"``
(``{"$types": {"repo.frozen": "bool", "billing.paid_at": "timestamp"}, "acct-1": {...}}``, types
of :mod:`maitred.state.schema`). Values are then converted to their type (a value that does not
fit is recorded in ``Snapshot.invalid``, and its predicates fail closed), and the file is
:class:`~maitred.state.schema.SchemaAware`: a key the catalog reads that ``$types`` does not
declare is a load error, and predicates are type-checked against the declared types. Without
``$types`` every key is untyped (``any``) and nothing is checked at load.

These are the embedded defaults for tests, fixtures, demos and small deployments; see
:mod:`maitred.state.sql` and :mod:`maitred.state.callables` for live sources.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from maitred.errors import ConfigError, MaitredError, ProviderError
from maitred.state._values import ABSENT, UnsupportedValue, key_parts, lookup, nest
from maitred.state.schema import InvalidValue, KeySchema, StateType, coerce, state_type
from maitred.state.snapshot import Snapshot, now


def snapshot_from_tree(
    account: str,
    keys: Collection[str],
    tree: Mapping[str, Any] | None,
    *,
    as_of: float,
    key_as_of: Mapping[str, float] | None = None,
    version: str = "",
    types: Mapping[str, StateType] | None = None,
) -> Snapshot:
    """Answer ``keys`` from one account's normalised tree.

    Args:
        account: whose state this is.
        keys: the requested dotted keys.
        tree: the account's tree, or None when the source has no such account.
        as_of: the snapshot time.
        key_as_of: key or key prefix -> unix seconds; a key takes the entry of its longest
            prefix (``"billing"`` dates every ``billing.*`` key).
        version: the source's version marker.
        types: key -> declared type; a value that does not fit is kept and marked invalid.

    Returns:
        A snapshot with a value or a ``missing`` entry for every requested key, and
        ``account_found`` False when there is no tree for the account.
    """
    values: dict[str, Any] = {}
    missing: set[str] = set()
    dates: dict[str, float] = {}
    invalid: dict[str, str] = {}
    for key in set(keys):
        value = ABSENT if tree is None else lookup(tree, key)
        if value is ABSENT:
            missing.add(key)
            continue
        kind = types.get(key) if types else None
        if value is None and kind not in (None, "any"):  # a typed null: no value of that type
            missing.add(key)
            continue
        try:
            values[key] = value if kind is None else coerce(value, kind, key)
        except (InvalidValue, UnsupportedValue) as exc:
            values[key], invalid[key] = value, str(exc)
        stamp = _longest_prefix(key_as_of, key) if key_as_of else None
        if stamp is not None:
            dates[key] = stamp
    return Snapshot(
        account,
        values,
        as_of,
        dates,
        frozenset(missing),
        version,
        account_found=tree is not None,
        invalid=invalid,
    )


def _longest_prefix(table: Mapping[str, float], key: str) -> float | None:
    parts = key.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in table:
            return table[prefix]
    return None


def _normalise_accounts(
    data: Mapping[str, Any], source: str, error: type[MaitredError]
) -> dict[str, dict[str, Any]]:
    """``{account: fields}`` -> ``{account: tree}``, or ``error`` naming ``source``."""
    trees: dict[str, dict[str, Any]] = {}
    for account, fields in data.items():
        if not isinstance(fields, Mapping):
            raise error(
                f"{source}: account {account!r} must map to an object of state fields, "
                f'not {type(fields).__name__}; write it as {{{account!r}: {{"root": {{...}}}}}}'
            )
        try:
            trees[str(account)] = nest(fields, f"{source}: account {account!r}")
        except UnsupportedValue as exc:
            raise error(f"{exc}") from None
    return trees


class MemoryStateProvider:
    """State from a mapping held in memory (tests, fixtures, the parity audit).

    Example::

        provider = MemoryStateProvider(
            {"acct-1": {"account": {"plan": "free"}, "billing.status": "past_due"}},
            key_as_of={"acct-1": {"billing": 1_700_000_000}},
        )
        provider.fetch("acct-1", ["account.plan", "billing.status", "domain.lock"])
        # values: account.plan, billing.status; missing: domain.lock

    Args:
        data: account -> fields (nested or dotted; normalised once, here).
        key_as_of: account -> key or key prefix -> unix seconds when that state last changed;
            keys without an entry are taken as current at the snapshot's ``as_of``.
        version: the version marker every snapshot carries.
        clock: the snapshot time source (defaults to the wall clock).
        types: key -> declared type (as a JSON file's ``$types``): values reach predicates as
            that type, a value that does not fit is marked invalid, and the provider is
            schema-aware (a key it does not declare is a load error). ``None``: untyped.

    Raises:
        ConfigError: a field path given twice or as both a value and a group, or a value
            that is not JSON-safe.
    """

    #: answers from memory (see :attr:`maitred.Maitred.in_process`)
    in_process = True

    def __init__(
        self,
        data: Mapping[str, Mapping[str, Any]],
        *,
        key_as_of: Mapping[str, Mapping[str, float]] | None = None,
        version: str = "",
        clock: Callable[[], float] = now,
        types: Mapping[str, StateType] | None = None,
    ) -> None:
        self._trees = _normalise_accounts(data, "memory state", ConfigError)
        self._types = dict(types) if types is not None else None
        self._key_as_of = {
            str(account): {str(k): float(v) for k, v in stamps.items()}
            for account, stamps in (key_as_of or {}).items()
        }
        for account, stamps in self._key_as_of.items():
            bad = sorted(k for k in stamps if key_parts(k) is None)
            if bad:
                raise ConfigError(
                    f"memory state: key_as_of for account {account!r} has malformed keys {bad}; "
                    "use dotted keys such as 'billing.status' or a root such as 'billing'"
                )
        self.version = version
        self._clock = clock

    def fetch(self, account: str, keys: Collection[str]) -> Snapshot:
        """Every requested key of ``account``: a value or missing (see :class:`StateProvider`)."""
        return snapshot_from_tree(
            account,
            keys,
            self._trees.get(account),
            as_of=self._clock(),
            key_as_of=self._key_as_of.get(account),
            version=self.version,
            types=self._types,
        )

    def schema(self, keys: Collection[str]) -> KeySchema:
        """The declared ``types`` of ``keys`` (every key untyped when none were given; a key
        missing from them has no source when they were)."""
        if self._types is None:
            return KeySchema({key: "any" for key in keys})
        declared = self._types
        absent = {
            key: f"the memory state declares no type for it (it declares {sorted(declared)})"
            for key in keys
            if key not in declared
        }
        return KeySchema({k: declared[k] for k in keys if k in declared}, absent)


class JsonStateProvider:
    """State from a JSON file ``{account_id: {fields...}}``, re-read whenever it changes.

    The snapshot's ``as_of`` is the file's modification time (the state is as old as the file,
    however recently it was read) and its ``version`` is a hash of the file's bytes, so two
    turns served from the same file content carry the same version.

    Thread-safe: one lock guards the check-and-reload; a fetch works on the data it loaded.

    Args:
        path: the JSON file.

    Raises:
        ConfigError: the file is missing, unreadable or not valid state (bad JSON is reported
            with its line and column).
    """

    #: reads a file of this machine, never a network (see :attr:`maitred.Maitred.in_process`)
    in_process = True

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._signature: tuple[int, int, int] | None = None
        self._trees: dict[str, dict[str, Any]] = {}
        self._types: dict[str, StateType] | None = None
        self._as_of = 0.0
        self._version = ""
        self._reload(ConfigError)

    def fetch(self, account: str, keys: Collection[str]) -> Snapshot:
        """Every requested key of ``account``, from the file as it is now.

        Raises:
            ProviderError: the file has disappeared or no longer parses (line and column).
        """
        with self._lock:
            self._reload(ProviderError)
            trees, as_of, version, types = self._trees, self._as_of, self._version, self._types
        return snapshot_from_tree(
            account, keys, trees.get(account), as_of=as_of, version=version, types=types
        )

    def schema(self, keys: Collection[str]) -> KeySchema:
        """The file's ``$types`` for ``keys``: every key untyped when it declares none, and a
        key it does not declare has no source when it does (see the module docstring)."""
        with self._lock:
            self._reload(ProviderError)
            types = self._types
        if types is None:
            return KeySchema({key: "any" for key in keys})
        absent = {
            key: f"the JSON state file {str(self.path)!r} declares no such key in its $types "
            f"(it declares {sorted(types)})"
            for key in keys
            if key not in types
        }
        return KeySchema({key: types[key] for key in keys if key in types}, absent)

    def _reload(self, error: type[MaitredError]) -> None:
        """Re-read the file if its stat signature changed; call with the lock held."""
        try:
            stat = self.path.stat()
        except OSError as exc:
            raise error(
                f"JSON state file {str(self.path)!r} cannot be read ({exc.strerror or exc}); "
                "check the path, or create it with an object of accounts"
            ) from exc
        signature = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        if signature == self._signature:
            return
        try:
            raw = self.path.read_bytes()
        except OSError as exc:
            raise error(
                f"JSON state file {str(self.path)!r} cannot be read ({exc.strerror or exc}); "
                "check its permissions"
            ) from exc
        data = dict(self._parse(raw, error))
        self._types = self._declared_types(data.pop("$types", None), error)
        self._trees = _normalise_accounts(data, f"JSON state file {str(self.path)!r}", error)
        self._as_of = stat.st_mtime_ns / 1e9
        self._version = "sha256:" + hashlib.sha256(raw).hexdigest()[:16]
        self._signature = signature

    def _declared_types(
        self, declared: Any, error: type[MaitredError]
    ) -> dict[str, StateType] | None:
        if declared is None:
            return None
        where = f"JSON state file {str(self.path)!r}: $types"
        if not isinstance(declared, dict):
            raise error(f"{where} must map state keys to types")
        try:
            return {
                str(key): state_type(kind, f"{where}[{key!r}]") for key, kind in declared.items()
            }
        except ConfigError as exc:
            raise error(str(exc)) from None

    def _parse(self, raw: bytes, error: type[MaitredError]) -> Mapping[str, Any]:
        where = f"JSON state file {str(self.path)!r}"
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise error(f"{where}: byte {exc.start} is not UTF-8; save the file as UTF-8") from None
        except json.JSONDecodeError as exc:
            raise error(
                f"{self.path}:{exc.lineno}:{exc.colno}: invalid JSON in state file: {exc.msg}; "
                "fix the file (it is re-read as soon as it changes)"
            ) from None
        if not isinstance(data, dict):
            raise error(
                f"{where}: the top level must be an object of accounts "
                f'({{"acct-1": {{"account": {{"plan": "free"}}}}}}), not {type(data).__name__}'
            )
        return data
