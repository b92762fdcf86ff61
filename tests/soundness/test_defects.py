"""The minimal counterexamples the soundness properties found, kept as named regression tests.

Each test is the smallest input (one or two tools, one account) on which the library breaks the
promise, written against the reference model of :mod:`tests.soundness.spec`. Each failed on
the code before issue 16's fix of the defect its name gives, and passes since.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maitred import Maitred, PipelineOptions
from maitred.errors import MaitredError
from maitred.state.sql import TableSpec

from . import spec
from .harness import Store, names_in, payload_text

OPTIONS = PipelineOptions(method="bm25", top_k=20)


def _engine(tmp: Path, catalog: spec.CatalogSpec, state: object, **kw: object) -> Maitred:
    tools = spec.write_catalog(tmp / "catalog", catalog)
    return Maitred.open(
        [str(tools)], state, OPTIONS, log=str(tmp / "log.sqlite"), cache_dir=tmp / "cache", **kw
    )  # type: ignore[arg-type]


def _sqlite_engine(tmp: Path, catalog: spec.CatalogSpec, world: spec.World,
                   dropped: frozenset[str] = frozenset()) -> Maitred:  # fmt: skip
    db = tmp / "state.db"
    spec.write_sqlite(db, world, dropped=dropped)
    tables = {
        "account": TableSpec("accounts", updated_column="updated_at"),
        "repo": TableSpec("repos", updated_column="updated_at"),
    }
    return _engine(tmp, catalog, f"sqlite:///{db}", tables=tables, clock=lambda: world.now)


def _both_stages(engine: Maitred, catalog: spec.CatalogSpec, account: str, tool: str) -> tuple[
    bool, bool
]:  # fmt: skip
    """(stage 2 shows ``tool``, stage 5 allows a call to it from the session that saw it)."""
    session = engine.session(account)
    turn = engine.turn(spec.message_for(catalog), session=session)
    decision = engine.check({"name": tool, "arguments": {"n": 0}}, session=session)
    return tool in turn.exposed, decision.allow


FROZEN = spec.Pred("is_frozen", "eq", "repo.frozen", True)
FREEZE = spec.CatalogSpec((spec.ToolSpec("freeze_branch", True, (FROZEN,)),))


def _world(values: dict[str, object]) -> spec.World:
    world = spec.World()
    world.roots["acc-a"] = {"account", "repo"}
    world.accounts["acc-a"] = {k: values.get(k) for k in spec.FIELDS}
    return world


def test_defect_1_a_sqlite_boolean_stored_as_1_fires_the_predicate(tmp_path: Path) -> None:
    """defect 1: untyped state fails open (`repo.frozen == true` over a BOOLEAN column of 1)."""
    world = _world({"repo.frozen": 1})
    assert not spec.executable(FREEZE.tools[0], "acc-a", world)
    try:
        engine = _sqlite_engine(tmp_path, FREEZE, world)
    except MaitredError:
        return  # refusing the contract at load is sound too
    with engine:
        assert _both_stages(engine, FREEZE, "acc-a", "freeze_branch") == (False, False)


def test_a_sqlite_boolean_stored_as_0_leaves_the_tool_runnable(tmp_path: Path) -> None:
    """The other half of defect 1's table: 0 is false, and the tool runs (both stages)."""
    world = _world({"repo.frozen": 0})
    assert spec.executable(FREEZE.tools[0], "acc-a", world)
    with _sqlite_engine(tmp_path, FREEZE, world) as engine:
        assert _both_stages(engine, FREEZE, "acc-a", "freeze_branch") == (True, True)


def _untyped_json_engine(tmp: Path, catalog: spec.CatalogSpec, world: spec.World) -> Maitred:
    """A JSON state file with no ``$types``: every key untyped, values as they were written."""
    data = {a: spec.tree_of(world.accounts[a], roots) for a, roots in world.roots.items()}
    path = tmp / "accounts.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return _engine(tmp, catalog, str(path), clock=lambda: world.now)


ON_FREE = spec.Pred("on_free", "eq", "account.plan", "free")
UPGRADE = spec.CatalogSpec((spec.ToolSpec("upgrade", True, (ON_FREE,)),))


@pytest.mark.parametrize(
    ("catalog", "tool", "values"),
    [(UPGRADE, "upgrade", {"account.plan": 0}), (FREEZE, "freeze_branch", {"repo.frozen": 1})],
    ids=["plan-stored-as-0", "frozen-stored-as-1"],
)
def test_an_untyped_value_of_the_wrong_kind_fails_closed(
    tmp_path: Path, catalog: spec.CatalogSpec, tool: str, values: dict[str, object]
) -> None:
    """Found by the 10,000-example gateway run: with no ``$types``, ``account.plan == "free"``
    over a stored ``0`` was quietly false (CEL's equality across types), so the mutating tool
    was offered and allowed. A value the expression cannot apply to is an evaluation error."""
    world = _world(values)
    assert not spec.executable(catalog.tools[0], "acc-a", world)
    with _untyped_json_engine(tmp_path, catalog, world) as engine:
        assert _both_stages(engine, catalog, "acc-a", tool) == (False, False)


@pytest.mark.parametrize(
    ("catalog", "tool", "values", "runs"),
    [
        (UPGRADE, "upgrade", {"account.plan": "pro"}, True),
        (UPGRADE, "upgrade", {"account.plan": "free"}, False),
        (FREEZE, "freeze_branch", {"repo.frozen": False}, True),
        (FREEZE, "freeze_branch", {"repo.frozen": True}, False),
    ],
    ids=["pro", "free", "not-frozen", "frozen"],
)
def test_an_untyped_value_of_the_right_kind_is_decided_as_usual(
    tmp_path: Path, catalog: spec.CatalogSpec, tool: str, values: dict[str, object], runs: bool
) -> None:
    """The other half: untyped values that fit the expression are decided on what they say."""
    world = _world(values)
    assert spec.executable(catalog.tools[0], "acc-a", world) is runs
    with _untyped_json_engine(tmp_path, catalog, world) as engine:
        assert _both_stages(engine, catalog, "acc-a", tool) == (runs, runs)


def test_defect_2_a_column_the_table_lacks_is_not_missing_state(tmp_path: Path) -> None:
    """defect 2: `repos` has no `frozen` column; the predicate can never be asked."""
    pred = spec.Pred("is_frozen", "eq", "repo.frozen", True, on_missing="offer")
    catalog = spec.CatalogSpec((spec.ToolSpec("freeze_branch", True, (pred,)),))
    world = _world({})
    world.unservable = frozenset({"repo.frozen"})
    assert not spec.executable(catalog.tools[0], "acc-a", world)
    try:
        engine = _sqlite_engine(tmp_path, catalog, world, dropped=world.unservable)
    except MaitredError:
        return  # the fix: a load error naming the key, the table and the tool
    with engine:
        assert _both_stages(engine, catalog, "acc-a", "freeze_branch") == (False, False)


OPEN_ON_MISSING = spec.Pred("on_free", "eq", "account.plan", "free", on_missing="offer")


@pytest.mark.parametrize("mutates", [True, False], ids=["mutating", "read-only"])
def test_defect_3_stage_5_allows_what_stage_2_hid_for_an_unknown_account(
    tmp_path: Path, mutates: bool
) -> None:
    """defect 3: the account was deleted after its turn; a fail-open predicate then lets
    stage 5 allow the call that stage 2, on the same state, hides."""
    catalog = spec.CatalogSpec((spec.ToolSpec("charge_card", mutates, (OPEN_ON_MISSING,)),))
    world = _world({"account.plan": "pro"})
    store = Store(world)
    with _engine(tmp_path, catalog, store) as engine:
        session = engine.session("acc-a")
        assert "charge_card" in engine.turn(spec.message_for(catalog), session=session).exposed
        world.roots["acc-a"] = set()  # the account is gone
        store.refresh()
        assert not spec.executable(catalog.tools[0], "acc-a", world)
        hidden = (
            "charge_card" not in engine.turn(spec.message_for(catalog), account="acc-a").exposed
        )
        decision = engine.check({"name": "charge_card", "arguments": {"n": 0}}, session=session)
        assert (hidden, decision.allow) == (True, False)


def test_defect_3_stage_5_allows_a_read_only_tool_while_the_store_is_down(
    tmp_path: Path,
) -> None:
    """defect 3: the store went down after the turn; stage 2 hides the tool, stage 5 runs it."""
    catalog = spec.CatalogSpec((spec.ToolSpec("export_ledger", False, (OPEN_ON_MISSING,)),))
    world = _world({"account.plan": "pro"})
    store = Store(world)
    with _engine(tmp_path, catalog, store) as engine:
        session = engine.session("acc-a")
        assert "export_ledger" in engine.turn(spec.message_for(catalog), session=session).exposed
        world.down = True
        assert not spec.executable(catalog.tools[0], "acc-a", world)
        hidden = (
            "export_ledger" not in engine.turn(spec.message_for(catalog), account="acc-a").exposed
        )
        decision = engine.check({"name": "export_ledger", "arguments": {"n": 0}}, session=session)
        assert (hidden, decision.allow) == (True, False)


def test_defect_6_a_rejection_never_names_a_tool_the_session_was_not_offered(
    tmp_path: Path,
) -> None:
    """defect 6: a call to a made-up name is answered with the names of hidden tools."""
    hidden = spec.Pred("on_free", "eq", "account.plan", "free")
    catalog = spec.CatalogSpec(
        (spec.ToolSpec("deploy_site", True, (hidden,)), spec.ToolSpec("export_ledger", False, ()))
    )
    world = _world({"account.plan": "free"})
    with _engine(tmp_path, catalog, Store(world)) as engine:
        session = engine.session("acc-a")
        turn = engine.turn(spec.message_for(catalog), session=session)
        assert turn.exposed == ("export_ledger",)
        decision = engine.check({"name": "junk_mail", "arguments": {}}, session=session)
        assert decision.code == "TOOL_UNKNOWN"
        assert names_in(payload_text(decision), catalog.names) <= set(turn.exposed)


def test_defect_6_a_tool_removed_by_a_reload_is_refused_without_naming_hidden_ones(
    tmp_path: Path,
) -> None:
    """defect 6, as the state machine found it: the session was offered archive_items; a
    reload drops it; the call is refused, and the refusal names deploy_site, which is hidden."""
    hidden = spec.ToolSpec(
        "deploy_site", True, (spec.Pred("on_free", "eq", "account.plan", "free"),)
    )
    before = spec.CatalogSpec((spec.ToolSpec("archive_items", False, ()), hidden))
    after = spec.CatalogSpec((hidden, spec.ToolSpec("export_ledger", False, ())))
    world = _world({"account.plan": "free"})
    with _engine(tmp_path / "v1", before, Store(world)) as engine:
        session = engine.session("acc-a")
        offered = engine.turn(spec.message_for(before), session=session).exposed
        assert offered == ("archive_items",)
    with _engine(tmp_path / "v2", after, Store(world)) as engine:
        decision = engine.check({"name": "archive_items", "arguments": {"n": 0}}, session=session)
        assert not decision.allow
        assert names_in(payload_text(decision), after.names) <= set(offered)


def test_item_3_a_session_survives_a_restart(tmp_path: Path) -> None:
    """item 3: a check after a restart is decided against the turn committed before it."""
    catalog = spec.CatalogSpec((spec.ToolSpec("export_ledger", False, ()),))
    world = _world({})
    with _engine(tmp_path, catalog, Store(world)) as engine:
        session = engine.session("acc-a", id="sess-1")
        turn = engine.turn(spec.message_for(catalog), session=session)
        assert turn.exposed == ("export_ledger",)
    with _engine(tmp_path, catalog, Store(world)) as engine:
        again = engine.session("acc-a", id="sess-1")
        decision = engine.check({"name": "export_ledger", "arguments": {"n": 0}}, session=again)
        assert (decision.allow, decision.turn_id) == (True, turn.turn_id)
