"""``rank_steps``: the needs of one task ranked together (the task's servers weigh in, each
need's top k brings tools the earlier needs did not); one need, or no servers, as before."""

from __future__ import annotations

import pytest

from maitred.errors import ConfigError
from maitred.recall.base import Candidate
from maitred.recall.steps import rank_steps, server_shares
from maitred.skills.model import Catalog, Skill

TOOLS = [
    ("search_papers", "papers"),
    ("get_paper_details", "papers"),
    ("search_repos", "code"),
    ("get_repo_details", "code"),
    ("weather_now", "weather"),
]


def catalog(servers: bool = True) -> Catalog:
    return Catalog(
        tuple(Skill(n, n.replace("_", " "), kind="tool", server=s if servers else None)
              for n, s in TOOLS)
    )  # fmt: skip


class Fixed:
    """A fixed ranking (name, score) per text; records what it was asked."""

    name = "fixed"

    def __init__(self, rankings: dict[str, list[tuple[str, float]]], cat: Catalog) -> None:
        self.rankings = rankings
        self.catalog = cat
        self.asked: list[tuple[str, int]] = []

    def rank(self, text: str, k: int) -> list[Candidate]:
        self.asked.append((text, k))
        return [
            Candidate(n, r, s, {"inner": s})
            for r, (n, s) in enumerate(self.rankings.get(text, [])[:k], start=1)
        ]


def names(ranking: list[Candidate], k: int) -> list[str]:
    return [c.name for c in ranking[:k]]


# the task is about papers; the second need alone leans to the code server's detail tool
# (papers' share: 1 + 0.9 of the heads, code's: 0.4 + 1; scaled, papers 1, code 0.74)
RANKINGS = {
    "find papers on retrieval": [("search_papers", 5.0), ("search_repos", 2.0)],
    "get the details of each": [("get_repo_details", 1.0), ("get_paper_details", 0.9)],
}
NEEDS = ["find papers on retrieval", "get the details of each"]


def test_the_tasks_server_lifts_the_tool_a_need_alone_ranks_second() -> None:
    ranked = rank_steps(Fixed(RANKINGS, catalog()), NEEDS, 1)
    assert [names(r, 1) for r in ranked] == [["search_papers"], ["get_paper_details"]]
    lifted = ranked[1][0]
    assert lifted.score == pytest.approx(0.9 + 0.5 * 1.0)  # own 0.9/1.0, papers' share 1
    assert lifted.components["inner"] == 0.9 and lifted.components["steps"] == lifted.score


def test_without_servers_or_prior_the_need_keeps_its_own_order() -> None:
    for cat, prior in ((catalog(servers=False), 0.5), (catalog(), 0.0)):
        ranked = rank_steps(Fixed(RANKINGS, cat), NEEDS, 1, prior=prior)
        assert names(ranked[1], 2) == ["get_repo_details", "get_paper_details"]


def test_a_tool_an_earlier_need_showed_moves_below_the_fresh_ones() -> None:
    same = {"a": [("search_papers", 3.0), ("search_repos", 2.0), ("weather_now", 1.0)]}
    fixed = Fixed({"one": same["a"], "two": same["a"]}, catalog(servers=False))
    ranked = rank_steps(fixed, ["one", "two"], 2)
    assert names(ranked[0], 2) == ["search_papers", "search_repos"]
    assert names(ranked[1], 3) == ["weather_now", "search_papers", "search_repos"]
    assert [c.rank for c in ranked[1]] == [1, 2, 3]
    kept = rank_steps(fixed, ["one", "two"], 2, fresh=False)
    assert names(kept[1], 2) == ["search_papers", "search_repos"]


def test_one_need_is_ranked_as_the_recaller_ranks_it() -> None:
    fixed = Fixed(RANKINGS, catalog())
    (only,) = rank_steps(fixed, ["get the details of each"], 1)
    assert names(only, 2) == ["get_repo_details", "get_paper_details"]
    assert fixed.asked == [("get the details of each", 100)]  # no joined text asked


def test_server_shares_sum_every_needs_head_and_scale_the_leader_to_one() -> None:
    ranked = [Candidate("a", 1, 4.0), Candidate("b", 2, 2.0), Candidate("x", 3, 3.0)]
    servers = {"a": "s", "b": "s", "x": "t"}
    assert server_shares([ranked], servers) == {"s": 1.0, "t": 0.5}
    other = [Candidate("x", 1, 1.0)]  # a second need led by t: t now leads, 1.75 to 1.5
    assert server_shares([ranked, other], servers) == {"s": pytest.approx(1.5 / 1.75), "t": 1.0}
    assert server_shares([[Candidate("a", 1, 0.0)]], {"a": "s"}) == {}
    assert server_shares([ranked], {"a": "s"}, depth=1) == {"s": 1.0}


def test_bad_settings_are_refused() -> None:
    fixed = Fixed(RANKINGS, catalog())
    with pytest.raises(ConfigError, match="k >= 1"):
        rank_steps(fixed, NEEDS, 0)
    with pytest.raises(ConfigError, match="prior must be >= 0"):
        rank_steps(fixed, NEEDS, 1, prior=-1.0)
