"""Multi-intent recall: splitting, the best-rank interleave, and the ``+intents`` name."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.recall.conftest import HashEmbedder

from maitred.errors import ConfigError
from maitred.recall.base import Candidate
from maitred.recall.intents import IntentSplitRecaller, merge_by_best_rank, split_intents
from maitred.recall.registry import make_recaller
from maitred.skills.model import Catalog


@pytest.mark.parametrize(
    ("text", "pieces"),
    [
        (
            "what is the weather in paris tomorrow and convert 50 dollars to euros",
            ["what is the weather in paris tomorrow", "convert 50 dollars to euros"],
        ),
        (
            "please merge these pdf files. also show the latest stock price",
            ["please merge these pdf files", "show the latest stock price"],
        ),
        (
            "two things: reset my password. second, cancel the old plan",
            ["reset my password", "cancel the old plan"],
        ),
        ("find cats and dogs", []),  # fragments are not requests
        ("what will the weather be tomorrow", []),
    ],
)
def test_split_intents(text: str, pieces: list[str]) -> None:
    assert split_intents(text) == pieces


def _ranking(names: str) -> list[Candidate]:
    return [Candidate(n, r, 1.0 / r) for r, n in enumerate(names.split(), start=1)]


def test_merge_interleaves_by_best_rank_whole_text_first() -> None:
    whole = _ranking("a b c d")
    parts = [_ranking("b a c d"), _ranking("d c a b")]
    merged = merge_by_best_rank(whole, parts)
    # best ranks: a 1, b 1, d 1, c 2; ties broken by the whole text's ranks (a 1, b 2, d 4)
    assert [c.name for c in merged] == ["a", "b", "d", "c"]
    assert [c.rank for c in merged] == [1, 2, 3, 4]
    assert merged[2].score == 1.0  # d: its best score, from the second piece
    assert all(c.components["intents"] == 2.0 for c in merged)


@given(
    st.lists(st.permutations(list("abcdef")), min_size=1, max_size=4),
)
def test_merge_keeps_every_skill_once_and_the_whole_texts_top_first(
    rankings: list[list[str]],
) -> None:
    whole, *parts = ([Candidate(n, r, 0.0) for r, n in enumerate(p, start=1)] for p in rankings)
    merged = merge_by_best_rank(whole, parts)
    assert sorted(c.name for c in merged) == sorted("abcdef")
    assert merged[0].name == whole[0].name
    # every list's top skill is within the first 1 + len(parts) places
    tops = {ranking[0].name for ranking in (whole, *parts)}
    assert tops <= {c.name for c in merged[: 1 + len(parts)]}


def test_wrapper_surfaces_the_second_request(catalog: Catalog) -> None:
    base = make_recaller("dense", catalog, embedder=HashEmbedder())
    wrapped = make_recaller("dense+intents", catalog, embedder=HashEmbedder())
    assert isinstance(wrapped, IntentSplitRecaller)
    assert wrapped.name == "dense+intents"
    text = "rain and wind forecast for the city of lyon and merge several pdf files into one"
    plain = [c.name for c in base.rank(text, 6)]
    split = [c.name for c in wrapped.rank(text, 6)]
    assert split[0] == plain[0]
    assert {"weather-forecast", "pdf-merge"} <= set(split[:2])
    # a one-request text is ranked exactly as the wrapped method ranks it
    single = "latest stock price"
    assert wrapped.rank(single, 3) == base.rank(single, 3)
    assert wrapped.rank_batch([text, single], 6) == [wrapped.rank(text, 6), base.rank(single, 6)]


def test_unknown_suffix_is_a_clear_error(catalog: Catalog) -> None:
    with pytest.raises(ConfigError, match=r"\+intents"):
        make_recaller("dense+clauses", catalog, embedder=HashEmbedder())
