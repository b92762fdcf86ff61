"""``+servers`` recall: a dominant server's siblings rise; no servers, no change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maitred.errors import ConfigError
from maitred.recall import make_recaller
from maitred.recall.base import Candidate
from maitred.recall.servers import ServerRecaller, dominant_share, lift_server, servers_of
from maitred.skills.catalog import load_catalog
from maitred.skills.model import Catalog, Skill
from maitred.skills.tools import parse_tools

TOOLS = [
    ("search_papers", "papers", "Search academic papers by keyword"),
    ("get_paper_details", "papers", "Details of one paper: authors, venue"),
    ("download_pdf", "papers", "Download the PDF file of a paper"),
    ("weather_now", "weather", "Current weather and temperature in a city"),
    ("weather_week", "weather", "Seven-day weather forecast for a city"),
    ("convert_units", "units", "Convert lengths, weights and temperatures between units"),
]


def catalog(servers: bool = True) -> Catalog:
    return Catalog(
        tuple(Skill(n, d, kind="tool", server=s if servers else None) for n, s, d in TOOLS)
    )


class Fixed:
    """A recaller that returns a fixed ranking (the inner method under test)."""

    name = "fixed"

    def __init__(self, ranked: list[tuple[str, float]]) -> None:
        self.ranked = ranked
        self.asked: list[int] = []

    def rank(self, text: str, k: int) -> list[Candidate]:
        self.asked.append(k)
        return [
            Candidate(n, r, s, {"inner": s}) for r, (n, s) in enumerate(self.ranked[:k], start=1)
        ]


def test_siblings_of_a_dominant_server_are_pulled_up_even_unranked() -> None:
    cat = catalog()
    inner = Fixed([("search_papers", 4.0), ("weather_now", 1.0), ("get_paper_details", 0.5)])
    ranked = ServerRecaller(inner, cat, dominance=0.5, bonus=1.0).rank("find papers", 5)
    names = [c.name for c in ranked]
    # papers holds 4.5 of 5.5 of the head: its third tool, never ranked, comes in above weather
    assert names[:3] == ["search_papers", "get_paper_details", "download_pdf"]
    assert names.index("download_pdf") < names.index("weather_now")
    assert [c.rank for c in ranked] == list(range(1, len(ranked) + 1))
    scores = [c.score for c in ranked]
    assert scores == sorted(scores, reverse=True)
    added = ranked[2]
    assert added.components["server_added"] == 1.0 and "inner" not in added.components
    assert ranked[0].components["inner"] == 4.0 and "servers" in ranked[0].components


def test_a_split_head_leaves_the_ranking_alone() -> None:
    cat = catalog()
    order = [("weather_now", 2.0), ("convert_units", 1.9), ("search_papers", 1.8)]
    ranked = ServerRecaller(Fixed(order), cat, dominance=0.5).rank("temperature", 3)
    assert [(c.name, c.score) for c in ranked] == order
    assert dominant_share(ranked, {t: s for s, ts in servers_of(cat).items() for t in ts}) < 0.5


def test_a_strong_tool_of_another_server_stays_above_weak_siblings() -> None:
    cat = catalog()
    order = [("weather_now", 3.0), ("weather_week", 2.0), ("convert_units", 2.4)]
    ranked = ServerRecaller(Fixed(order), cat, dominance=0.5, bonus=0.5).rank("x", 5)
    # weather: 1 + .5 and .67 + .5; units: .8 + .4 = 1.2 beats weather_week's 1.17
    assert [c.name for c in ranked][:3] == ["weather_now", "convert_units", "weather_week"]


@pytest.mark.parametrize("k", [1, 2, 4])
def test_k_is_respected_and_the_inner_pool_is_read_deeper(k: int) -> None:
    inner = Fixed([("search_papers", 4.0), ("get_paper_details", 3.0), ("weather_now", 1.0)])
    ranked = ServerRecaller(inner, catalog(), pool=50).rank("papers", k)
    assert len(ranked) == k and inner.asked == [50]
    assert ranked[0].name == "search_papers"


def test_a_catalog_without_servers_is_ranked_as_the_inner_method() -> None:
    inner = Fixed([("weather_now", 4.0), ("weather_week", 3.0), ("search_papers", 0.1)])
    wrapped = ServerRecaller(inner, catalog(servers=False))
    assert not wrapped.active
    assert wrapped.rank("rain", 2) == inner.rank("rain", 2)
    assert inner.asked == [2, 2]  # asked for k, not the pool


def test_one_server_is_not_a_signal() -> None:
    cat = Catalog(tuple(Skill(n, d, kind="tool", server="one") for n, _, d in TOOLS))
    inner = Fixed([("weather_now", 1.0)])
    assert not ServerRecaller(inner, cat).active


def test_lift_server_on_empty_or_zero_scores() -> None:
    cat = catalog()
    members = servers_of(cat)
    server_of = {t: s for s, ts in members.items() for t in ts}
    assert lift_server([], members, server_of, 5) == []
    flat = [Candidate("search_papers", 1, 0.0)]
    assert lift_server(flat, members, server_of, 5, dominance=0.0) == flat
    assert lift_server(flat, members, server_of, 0) == []


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ConfigError, match="dominance"):
        ServerRecaller(Fixed([]), catalog(), dominance=1.5)
    with pytest.raises(ConfigError, match="bonus"):
        ServerRecaller(Fixed([]), catalog(), bonus=-1.0)


def test_the_tools_file_server_key_reaches_the_skill_and_its_version() -> None:
    tools = [{"name": n, "description": d, "server": s} for n, s, d in TOOLS]
    with_servers, report = parse_tools(tools)
    assert not report.warnings and with_servers[0].server == "papers"
    plain, _ = parse_tools([{k: v for k, v in t.items() if k != "server"} for t in tools])
    assert plain[0].server is None
    assert Catalog(with_servers).version != Catalog(plain).version
    odd, report = parse_tools([{"name": "a", "description": "b", "server": 3}])
    assert odd[0].server is None and report.warnings


def test_make_recaller_builds_bm25_servers(tmp_path: Path) -> None:
    path = tmp_path / "tools.jsonl"
    path.write_text(
        "".join(json.dumps({"name": n, "description": d, "server": s}) + "\n" for n, s, d in TOOLS)
    )
    cat = load_catalog([path])
    recaller = make_recaller("bm25+servers", cat)
    assert isinstance(recaller, ServerRecaller) and recaller.name == "bm25+servers"
    ranked = [c.name for c in recaller.rank("search papers by keyword", 3)]
    assert ranked[0] == "search_papers" and set(ranked) == {t for t, s, _ in TOOLS if s == "papers"}
    with pytest.raises(ConfigError, match=r"\+servers"):
        make_recaller("bm25+nonsense", cat)
