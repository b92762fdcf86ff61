"""A differential run over real SQLite stores: declared column types, NULLs, rows missing from
one table, rows older than a predicate's freshness bound, columns a table lacks.

For each drawn catalog and store, one turn per account and a call to every tool from that
turn's session are checked against the reference model (:mod:`tests.soundness.spec`): the menu
holds only executable tools, an allow only what the model allows, and the two stages agree.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from maitred import Maitred, PipelineOptions
from maitred.errors import MaitredError
from maitred.state.sql import TableSpec

from . import spec
from .conftest import SOUNDNESS, examples

ACCOUNTS = ("acc-a", "acc-b", "acc-c")
TYPED = tuple(k for k, kind in spec.FIELDS.items() if kind != "bool")
TABLES = {
    "account": TableSpec("accounts", updated_column="updated_at"),
    "repo": TableSpec("repos", updated_column="updated_at"),
}


@st.composite
def stores(draw: st.DrawFn, *, drop_columns: bool) -> spec.World:
    """Accounts with a row in some tables (none: unknown), any value or NULL, row ages."""
    world = spec.World()
    for account in ACCOUNTS:
        world.roots[account] = draw(st.sets(st.sampled_from(["account", "repo"])))
        world.accounts[account] = {
            k: draw(spec.raw_values(k, untyped=False))
            for k in spec.FIELDS
            if k.partition(".")[0] in world.roots[account]
        }
        ages = st.sampled_from([0.0, 120.0, 7200.0, None])  # None: updated_at is NULL
        world.stamps[account] = {
            r: spec.UNKNOWN_AGE if (age := draw(ages)) is None else world.now - age
            for r in ("account", "repo")
        }
    if drop_columns:
        world.unservable = draw(st.frozensets(st.sampled_from(sorted(spec.FIELDS)), max_size=2))
    return world


def _differential(catalog: spec.CatalogSpec, world: spec.World) -> None:
    with tempfile.TemporaryDirectory(prefix="maitred-soundness-") as tmp:
        root = Path(tmp)
        db = root / "state.db"
        spec.write_sqlite(db, world, dropped=world.unservable)
        tools = spec.write_catalog(root / "catalog", catalog)
        try:
            engine = Maitred.open(
                [str(tools)],
                f"sqlite:///{db}",
                PipelineOptions(method="bm25", top_k=20),
                tables=TABLES,
                log=str(root / "log.sqlite"),
                cache_dir=root / "cache",
                clock=lambda: world.now,
            )
        except MaitredError:
            if world.unservable & {p.key for t in catalog.tools for p in t.preds}:
                return  # refusing a contract the store cannot serve is sound
            raise
        with engine:
            for account in ACCOUNTS:
                _one_account(engine, catalog, world, account)


def _one_account(
    engine: Maitred, catalog: spec.CatalogSpec, world: spec.World, account: str
) -> None:
    session = engine.session(account)
    turn = engine.turn(spec.message_for(catalog), session=session)
    blocked = {b.skill for b in turn.record.blocked}
    for tool in catalog.tools:
        model = spec.executable(tool, account, world)
        shown = tool.name in turn.exposed
        assert not shown or model, f"stage 2 offered {tool.name} to {account}; the model refuses"
        decision = engine.check({"name": tool.name, "arguments": {"n": 0}}, session=session)
        if decision.allow:
            assert spec.allowed(tool, {"n": 0}, account, world, frozenset(turn.exposed))
        if shown:
            assert decision.allow, f"stage 2 showed {tool.name}, stage 5 said {decision.code}"
        elif tool.name in blocked:
            assert decision.code == "TOOL_NOT_OFFERED"


@settings(SOUNDNESS, max_examples=examples())
@given(catalog=spec.catalogs(keys=TYPED), world=stores(drop_columns=False))
def test_typed_columns_nulls_missing_rows_and_stale_rows_keep_the_promise(
    catalog: spec.CatalogSpec, world: spec.World
) -> None:
    """INTEGER and TEXT columns, NULLs, an account missing from a table or from all, stale rows
    (and rows whose ``updated_at`` is NULL: unknown, so infinitely old)."""
    _differential(catalog, world)


def _one(values: dict[str, object], dropped: frozenset[str] = frozenset()) -> spec.World:
    world = spec.World()
    world.roots["acc-a"] = {"account", "repo"}
    world.accounts["acc-a"] = {k: values.get(k) for k in spec.FIELDS}
    world.unservable = dropped
    return world


_FROZEN = spec.Pred("is_frozen", "eq", "repo.frozen", True, on_missing="offer")
_FREEZE = spec.CatalogSpec((spec.ToolSpec("freeze_branch", True, (_FROZEN,)),))


@settings(SOUNDNESS, max_examples=examples())
@given(catalog=spec.catalogs(), world=stores(drop_columns=True))
@example(catalog=_FREEZE, world=_one({"repo.frozen": 1}))  # defect 1
@example(catalog=_FREEZE, world=_one({}, frozenset({"repo.frozen"})))  # defect 2
def test_boolean_columns_and_absent_columns_keep_the_promise(
    catalog: spec.CatalogSpec, world: spec.World
) -> None:
    """Every field type, BOOLEAN columns included, and tables that lack a column predicates read."""
    _differential(catalog, world)
