"""The promise as a spec, independent of the engine: catalogs as data, and a reference model.

maitred promises: *a tool that was not offered, or that cannot run for this account now, does
not run, and every decision is on record.* This module states the first half without importing
anything of maitred's decision code, so a differential test can hold the engine to it:

* A :class:`ToolSpec` is a tool described as data: whether it mutates, one integer argument,
  its exit predicates drawn from a small grammar (:class:`Pred`: ``root.f == literal``,
  ``root.f > n``, ``root.flag``, ``!root.flag``), each with an ``on_missing`` / ``on_stale``
  fail mode and an optional freshness bound, and at most one call policy over its argument.
* Every state field has a **declared type** (:data:`FIELDS`). The model reads a stored value as
  that type first -- SQLite's 0/1 in a BOOLEAN column *is* a bool -- and then evaluates the
  predicate with CEL's semantics for these types. A NULL is a missing key (every field is
  typed), under the predicate's ``on_missing``. A value that does not fit its type is an error,
  and an error holds.
* :func:`executable` decides, for one tool and one state read, whether the tool may run now:
  the state store must answer, the account must exist (for a tool that reads state), a column
  the store cannot serve at all blocks, missing and stale keys follow their fail mode, and no
  predicate may hold. :func:`allowed` adds the session's last *committed* offer, the argument
  schema and the call policy.

The model is deliberately the most permissive sound reading: the engine may refuse more (a load
error for a contract the store cannot serve, a stricter rule for writes), never allow more. The
tests therefore check ``engine allows => model allows`` and that the engine's two stages agree
with each other, not that the engine allows everything the model would.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from hypothesis import strategies as st

FieldType = Literal["bool", "int", "str"]
#: key -> declared type; the roots are ``account`` and ``repo`` (one SQL table each)
FIELDS: dict[str, FieldType] = {
    "account.plan": "str",
    "account.seats": "int",
    "account.suspended": "bool",
    "repo.frozen": "bool",
    "repo.size": "int",
}
PLANS = ("free", "pro", "team")
#: tool names that are whole words and no one's substring (a leak check greps for them)
NAMES = (
    "archive_items", "backup_vault", "charge_card", "deploy_site", "export_ledger",
    "freeze_branch", "grant_access", "hide_listing", "invite_member", "junk_mail",
)  # fmt: skip
FailMode = Literal["block", "offer"]
MISSING: Any = object()
#: a row's change time that is unknown (NULL in SQL): infinitely old, so every bound is past
UNKNOWN_AGE = 0.0


@dataclass(frozen=True)
class Pred:
    """One exit predicate of the grammar: ``kind`` over ``key`` (and ``literal``)."""

    name: str
    kind: Literal["eq", "gt", "is", "not"]
    key: str
    literal: Any = None
    on_missing: FailMode = "block"
    on_stale: FailMode = "block"
    max_age_s: float | None = None

    def cel(self) -> str:
        if self.kind == "eq":
            return f"{self.key} == {json.dumps(self.literal)}"
        if self.kind == "gt":
            return f"{self.key} > {self.literal}"
        return self.key if self.kind == "is" else f"!{self.key}"

    def sidecar(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "expr": self.cel(),
            "reads": [self.key],
            "on_missing": self.on_missing,
            "on_stale": self.on_stale,
            "message": f"{self.name} holds.",
        }
        if self.max_age_s is not None:
            out["max_age_s"] = self.max_age_s
        return out


@dataclass(frozen=True)
class ToolSpec:
    """A tool as data. ``limit``: the call policy ``args.n > limit`` rejects (None: no policy)."""

    name: str
    mutates: bool
    preds: tuple[Pred, ...]
    limit: int | None = None

    @property
    def reads(self) -> frozenset[str]:
        return frozenset(p.key for p in self.preds)


@dataclass(frozen=True)
class CatalogSpec:
    tools: tuple[ToolSpec, ...]

    def by_name(self) -> dict[str, ToolSpec]:
        return {t.name: t for t in self.tools}

    @property
    def names(self) -> frozenset[str]:
        return frozenset(t.name for t in self.tools)


# -- the reference model --------------------------------------------------------------------


class _Error(Exception):
    """CEL would raise: no such overload, or a value that does not fit its declared type."""


def typed(key: str, raw: Any) -> Any:
    """``raw`` read as ``key``'s declared type (None stays CEL's null)."""
    kind = FIELDS[key]
    if raw is None:
        return None
    if kind == "bool":
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, int) and raw in (0, 1):  # SQLite's BOOLEAN
            return bool(raw)
        raise _Error(f"{key}: {raw!r} is not a bool")
    if kind == "int":
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        raise _Error(f"{key}: {raw!r} is not an int")
    if isinstance(raw, str):
        return raw
    raise _Error(f"{key}: {raw!r} is not a string")


def holds_on(pred: Pred, raw: Any) -> bool:
    """Does ``pred`` hold on the stored value ``raw`` (present, fresh)? An error holds."""
    try:
        value = typed(pred.key, raw)
        if pred.kind == "eq":
            return value is not None and value == pred.literal
        if value is None:
            raise _Error("null has no ordering and no negation")
        if pred.kind == "gt":
            return bool(value > pred.literal)
        return bool(value) if pred.kind == "is" else not value
    except _Error:
        return True


@dataclass
class World:
    """What the state store holds, as the model sees it.

    Attributes:
        accounts: account -> key -> stored value (a key absent: missing for that account).
        roots: account -> roots that have a row (an account with none does not exist).
        stamps: account -> root -> when that root's row last changed (absent: now).
        unservable: keys the store can never serve (a column the table lacks).
        down: the store raises on every read.
        now: the clock of both the store and the gates.
    """

    accounts: dict[str, dict[str, Any]] = field(default_factory=dict)
    roots: dict[str, set[str]] = field(default_factory=dict)
    stamps: dict[str, dict[str, float]] = field(default_factory=dict)
    unservable: frozenset[str] = frozenset()
    down: bool = False
    now: float = 1_800_000_000.0
    typed: bool = True  # False: a store without declared types (a JSON file), where null is a value


def fires(pred: Pred, account: str, world: World) -> bool:
    """Does ``pred`` keep its tool from running for ``account`` now?"""
    if pred.key in world.unservable:
        return True
    values = world.accounts.get(account, {})
    root = pred.key.partition(".")[0]
    if pred.key not in values or root not in world.roots.get(account, set()):
        return pred.on_missing == "block"  # no such value, or its table has no row for it
    if values[pred.key] is None and world.typed:  # a NULL in a typed column: missing
        return pred.on_missing == "block"
    stamp = world.stamps.get(account, {}).get(root)
    if pred.max_age_s is not None and stamp is not None and world.now - stamp > pred.max_age_s:
        return pred.on_stale == "block"
    return holds_on(pred, values[pred.key])


def executable(tool: ToolSpec, account: str, world: World) -> bool:
    """May ``tool`` run for ``account`` on this state read (its exit predicates alone)?"""
    if not tool.preds:
        return True
    if world.down or not world.roots.get(account):
        return False
    return not any(fires(p, account, world) for p in tool.preds)


def allowed(
    tool: ToolSpec | None,
    args: Mapping[str, Any],
    account: str,
    world: World,
    offer: frozenset[str] | None,
) -> bool:
    """May this call run: known, in the last committed offer, executable, valid, in policy."""
    if tool is None or offer is None or tool.name not in offer:
        return False
    if not executable(tool, account, world):
        return False
    n = args.get("n", MISSING)
    if set(args) - {"n"} or isinstance(n, bool) or not isinstance(n, int):
        return False
    return tool.limit is None or not n > tool.limit


# -- strategies -----------------------------------------------------------------------------


@st.composite
def preds(
    draw: st.DrawFn, name: str, *, fail_open: bool = True, keys: tuple[str, ...] = ()
) -> Pred:
    """One predicate of the grammar over one of ``keys`` (every field by default)."""
    key = draw(st.sampled_from(sorted(keys or FIELDS)))
    kind = FIELDS[key]
    modes: list[FailMode] = ["block", "offer"] if fail_open else ["block"]
    if kind == "bool":
        shape = draw(st.sampled_from(["eq", "is", "not"]))
        literal: Any = draw(st.booleans()) if shape == "eq" else None
    elif kind == "int":
        shape = draw(st.sampled_from(["eq", "gt"]))
        literal = draw(st.integers(0, 4))
    else:
        shape, literal = "eq", draw(st.sampled_from(PLANS))
    return Pred(
        name,
        shape,  # type: ignore[arg-type]
        key,
        literal,
        draw(st.sampled_from(modes)),
        draw(st.sampled_from(modes)),
        draw(st.one_of(st.none(), st.sampled_from([60.0, 3600.0]))),
    )


@st.composite
def catalogs(
    draw: st.DrawFn, *, min_tools: int = 2, max_tools: int = 5, keys: tuple[str, ...] = ()
) -> CatalogSpec:
    """Tools with distinct names, 0-2 predicates each over ``keys``, an optional policy."""
    names = draw(st.lists(st.sampled_from(NAMES), min_size=min_tools, max_size=max_tools,
                          unique=True))  # fmt: skip
    tools = []
    for name in names:
        n = draw(st.integers(0, 2))
        tools.append(
            ToolSpec(
                name,
                draw(st.booleans()),
                tuple(draw(preds(f"{name}_stop_{i}", keys=keys)) for i in range(n)),
                draw(st.one_of(st.none(), st.integers(0, 5))),
            )
        )
    return CatalogSpec(tuple(tools))


def raw_values(key: str, *, untyped: bool) -> st.SearchStrategy[Any]:
    """Stored values of ``key``: well typed, NULL, and (``untyped``) SQLite-style 0/1 or junk."""
    kind = FIELDS[key]
    good: st.SearchStrategy[Any] = (
        st.booleans()
        if kind == "bool"
        else st.integers(0, 6)
        if kind == "int"
        else st.sampled_from(PLANS)
    )
    if not untyped:
        return st.one_of(good, st.none())
    junk: st.SearchStrategy[Any] = (
        st.sampled_from([0, 1]) if kind == "bool" else st.sampled_from(["3", True])
        if kind == "int" else st.integers(0, 2)
    )  # fmt: skip
    return st.one_of(good, st.none(), junk)


# -- writing a catalog and a store to disk ---------------------------------------------------


def write_catalog(folder: Path, catalog: CatalogSpec) -> Path:
    """``tools.json`` (an MCP ``tools/list``) and its contract sidecar; returns the tools file."""
    folder.mkdir(parents=True, exist_ok=True)
    tools = [
        {
            "name": t.name,
            "description": f"{t.name.replace('_', ' ')}: do the {t.name.split('_')[0]} job "
            "for the account",
            "inputSchema": {
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": ["n"],
                "additionalProperties": False,
            },
        }
        for t in catalog.tools
    ]
    path = folder / "tools.json"
    path.write_text(json.dumps({"tools": tools}), encoding="utf-8")
    sidecar: dict[str, Any] = {"tools": {}}
    for t in catalog.tools:
        entry: dict[str, Any] = {"mutates": t.mutates}
        if t.preds:
            entry["exit_predicates"] = [p.sidecar() for p in t.preds]
        if t.limit is not None:
            entry["policies"] = [
                {
                    "name": f"{t.name}_limit",
                    "expr": f"args.n > {t.limit}",
                    "code": "N_TOO_LARGE",
                    "reads": ["args.n"],
                    "fields": ["n"],
                    "message": f"n is at most {t.limit}.",
                }
            ]
        sidecar["tools"][t.name] = entry
    (folder / "tools.maitred.yaml").write_text(yaml.safe_dump(sidecar), encoding="utf-8")
    return path


def message_for(catalog: CatalogSpec) -> str:
    """A message that recalls every tool of the catalog (so the menu is what the gate left)."""
    return " ".join(t.name.replace("_", " ") for t in catalog.tools) + " job for the account"


_SQL_TYPES = {"bool": "BOOLEAN", "int": "INTEGER", "str": "TEXT"}


def write_sqlite(path: Path, world: World, *, dropped: frozenset[str] = frozenset()) -> None:
    """The world as SQLite tables ``accounts`` and ``repos`` (declared column types, NULLs,
    an ``updated_at`` per row, NULL for :data:`UNKNOWN_AGE`); a key in ``dropped`` is a
    column the table lacks."""
    with sqlite3.connect(path) as conn:
        for root, table in (("account", "accounts"), ("repo", "repos")):
            cols = [k.partition(".")[2] for k in FIELDS if k.startswith(root + ".")]
            cols = [c for c in cols if f"{root}.{c}" not in dropped]
            decl = ", ".join(f"{c} {_SQL_TYPES[FIELDS[f'{root}.{c}']]}" for c in cols)
            conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.execute(
                f"CREATE TABLE {table} (account_id TEXT PRIMARY KEY, updated_at REAL"
                f"{', ' + decl if decl else ''})"
            )
            for account, roots in world.roots.items():
                if root not in roots:
                    continue
                values = world.accounts.get(account, {})
                stamp: float | None = world.stamps.get(account, {}).get(root, world.now)
                if stamp == UNKNOWN_AGE:
                    stamp = None  # NULL: when the row changed is unknown
                row = [account, stamp, *(values.get(f"{root}.{c}") for c in cols)]
                marks = ", ".join("?" for _ in row)
                conn.execute(
                    f"INSERT INTO {table} (account_id, updated_at{''.join(', ' + c for c in cols)})"
                    f" VALUES ({marks})",
                    row,
                )
    conn.close()


def tree_of(values: Mapping[str, Any], roots: set[str]) -> dict[str, Any]:
    """One account's values as the nested tree a memory provider holds."""
    tree: dict[str, Any] = {root: {} for root in roots}
    for key, value in values.items():
        root, _, leaf = key.partition(".")
        if root in roots:
            tree[root][leaf] = value
    return tree
