from __future__ import annotations

from pathlib import Path

import pytest

from maitred.errors import ConfigError
from maitred.native.backbone import Backbone
from maitred.native.data import skill_text, split_by_tool
from maitred.native.recall import NativeGlanceRecaller, build_recaller
from maitred.recall import registry
from maitred.recall.evaluate import Query, evaluate_routing
from maitred.recall.store import IndexStore
from maitred.skills.model import Catalog, Skill

SKILLS = (
    Skill("weather", "check the weather rain sun tomorrow in my city", kind="tool"),
    Skill("refund", "refund money for an invoice", kind="tool"),
    Skill("dns", "publish site domain dns", kind="tool"),
)


def test_native_glance_ranks_every_skill(tiny_backbone: Backbone, tmp_path: Path) -> None:
    catalog = Catalog(SKILLS)
    rec = build_recaller(
        catalog,
        backbone=tiny_backbone,
        maps_path=tmp_path / "none.npz",
        store=IndexStore(tmp_path / "cache"),
    )
    assert isinstance(rec, NativeGlanceRecaller)
    ranked = rec.rank("will it rain tomorrow", 3)
    assert sorted(c.name for c in ranked) == ["dns", "refund", "weather"]
    assert [c.rank for c in ranked] == [1, 2, 3] and rec.rank("  ", 3) == []
    again = build_recaller(
        catalog,
        backbone=tiny_backbone,
        maps_path=tmp_path / "none.npz",
        store=IndexStore(tmp_path / "cache"),
    )
    assert [c.name for c in again.rank("will it rain tomorrow", 3)] == [c.name for c in ranked]
    result = evaluate_routing(rec, [Query("1", "refund my invoice", ("refund",))], "native-glance")
    assert result["n_queries"] == 1


def test_native_methods_are_entry_points_loaded_on_demand() -> None:
    from maitred import plugins

    factory = plugins.load("recall", "native-glance")
    assert callable(factory) and "native-glance" in registry.recaller_names()
    with pytest.raises(ConfigError, match="unknown recall method"):
        registry.make_recaller("native-nope", Catalog(SKILLS))


def test_split_by_tool_is_disjoint() -> None:
    tools = [f"t{i}" for i in range(50)]
    queries = [Query(str(i), "x", (tools[i % 50],)) for i in range(200)]
    queries.append(Query("mixed", "x", tuple(tools)))
    sides = split_by_tool(queries, tools)
    golds = {side: {g for q in qs for g in q.gold} for side, qs in sides.items()}
    assert golds["train"].isdisjoint(golds["test"]) and golds["val"].isdisjoint(golds["test"])
    assert sum(len(v) for v in sides.values()) == 200  # the straddling query is dropped
    assert skill_text(Skill("getWeather", "d", body="**b**")) == "get Weather: d\nb"
