"""Multi-intent recall: splitting, the split decision, the best-rank interleave, ``+intents``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.recall.conftest import CountingEmbedder, HashEmbedder

from maitred.errors import ConfigError
from maitred.recall.base import Candidate
from maitred.recall.intents import (
    AGREE_DEPTH,
    MIN_SHARE,
    IntentSplitRecaller,
    as_close,
    merge_by_best_rank,
    points_elsewhere,
    split_intents,
)
from maitred.recall.registry import make_recaller
from maitred.skills.model import Catalog, Skill


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


# ------------------------------------------------------------------ the split decision

#: six PDF skills crowd the top of any PDF request, so a second request's skill falls below
#: the whole text's top AGREE_DEPTH: the case splitting is for
OFFICE = Catalog(
    skills=tuple(
        Skill(name=name, description=text)
        for name, text in (
            ("pdf-merge", "Merge several PDF files into one PDF document"),
            ("pdf-split", "Split a PDF document into separate PDF files, one per page"),
            ("pdf-fill", "Fill in the form fields of a PDF document"),
            ("pdf-compress", "Compress a PDF document to make the file smaller"),
            ("pdf-rotate", "Rotate the pages of a PDF document"),
            ("pdf-sign", "Sign a PDF document with a digital signature"),
            ("weather-forecast", "Weather forecast: rain, wind and temperature for a city"),
            ("stock-quote", "Latest stock price and market news for a company"),
            ("currency-convert", "Convert an amount of money between two currencies"),
            ("email-send", "Send an email message to a contact"),
            ("calendar-add", "Add an event to the calendar at a date and time"),
            ("translate-text", "Translate a text into another language"),
        )
    )
)
MERGE = "merge these pdf files into one pdf document"
TWO_REQUESTS = (
    "merge several pdf files into one pdf document, split the pdf document, compress the pdf "
    "document. also send an email message to a contact"
)
ONE_REQUEST = (
    f"{MERGE}. the merged pdf document should keep every page",
    f"{MERGE}. my name is john",
    "merge these pdf files into one pdf document please",
)


def _names(ranking: list[Candidate]) -> list[str]:
    return [c.name for c in ranking]


def test_two_unrelated_requests_are_split() -> None:
    fused = make_recaller("fused", OFFICE, embedder=HashEmbedder())
    auto = make_recaller("fused+intents", OFFICE, embedder=HashEmbedder())
    assert isinstance(auto, IntentSplitRecaller)
    assert auto.name == "fused+intents" and auto.probe is not None
    plain = _names(fused.rank(TWO_REQUESTS, 12))
    assert plain.index("email-send") >= AGREE_DEPTH  # buried under PDF skills
    split = auto.rank(TWO_REQUESTS, 12)
    assert _names(split)[:2] == ["pdf-merge", "email-send"]
    assert split[0].components["intents"] == 1.0  # one piece pointed elsewhere
    assert sorted(_names(split)) == sorted(plain)  # the same skills, reordered


@pytest.mark.parametrize("text", ONE_REQUEST)
def test_one_request_is_never_split(text: str) -> None:
    fused = make_recaller("fused", OFFICE, embedder=HashEmbedder())
    auto = make_recaller("fused+intents", OFFICE, embedder=HashEmbedder())
    assert auto.rank(text, 12) == fused.rank(text, 12)
    always = IntentSplitRecaller(fused, always=True)
    assert always.name == "fused+intents-all"
    if split_intents(text):  # the old +intents split it, and reordered the ranking
        assert always.rank(text, 12)[0].components["intents"] == 2.0


_WORDS = sorted({w.lower() for s in OFFICE for w in s.description.replace(":", "").split()})
_NO_CUT = [w for w in _WORDS if w not in {"and", "also", "then", "plus", "second"}]
_AUTO: list[IntentSplitRecaller] = []


def _auto() -> IntentSplitRecaller:
    """One ``fused+intents`` over OFFICE, built once for all hypothesis examples."""
    if not _AUTO:
        _AUTO.append(IntentSplitRecaller(make_recaller("fused", OFFICE, embedder=HashEmbedder())))
    return _AUTO[0]


@given(st.lists(st.sampled_from(_NO_CUT), min_size=1, max_size=12))
def test_a_message_with_no_cut_is_ranked_as_the_wrapped_method_ranks_it(
    words: list[str],
) -> None:
    text = " ".join(words)
    auto = _auto()
    assert auto.rank(text, 5) == auto.inner.rank(text, 5)


def test_agreeing_pieces_cost_no_embedding() -> None:
    embedder = CountingEmbedder(HashEmbedder())
    auto = make_recaller("fused+intents", OFFICE, embedder=embedder)
    embedder.calls.clear()  # the catalog's own embedding
    for text in ONE_REQUEST:
        auto.rank(text, 10)
    assert embedder.calls == [1, 1, 1]  # the whole text only: BM25 judged the pieces
    embedder.calls.clear()
    auto.rank(TWO_REQUESTS, 10)
    assert embedder.calls == [1, 1]  # the whole text, then the one piece that pointed away


def test_a_weak_piece_is_a_detail_not_a_request() -> None:
    bm25 = make_recaller("bm25", OFFICE)
    auto = IntentSplitRecaller(bm25)
    assert auto.probe is bm25
    text = f"{MERGE}, then split the pdf document into pages. please translate it"
    whole = bm25.rank(text, 12)
    piece = bm25.rank("please translate it", 12)
    # the piece points elsewhere, but with under MIN_SHARE of the whole text's best score
    assert points_elsewhere(whole, piece)
    assert piece[0].score < MIN_SHARE * whole[0].score
    assert auto.rank(text, 12) == whole
    # a piece with at least that share is a request of its own, and its skill moves up
    strong = (
        f"{MERGE}, then split the pdf document into pages and rotate the pdf pages. "
        "please translate my text into another language"
    )
    assert _names(bm25.rank(strong, 12)).index("pdf-rotate") == AGREE_DEPTH
    split = auto.rank(strong, 12)
    assert _names(split)[:2] == ["translate-text", "pdf-rotate"]
    assert split[0].components["intents"] == 1.0  # the other pieces agree with the whole


def _cosines(pairs: str) -> list[Candidate]:
    return [
        Candidate(n, r, 1.0 / r, {"dense": float(c)})
        for r, (n, c) in enumerate((p.split("=") for p in pairs.split()), start=1)
    ]


def test_as_close() -> None:
    whole = _cosines("a=0.6 b=0.5 c=0.4")
    assert as_close(whole, _cosines("d=0.62 a=0.3"))  # a clean request: closer than the blend
    assert not as_close(whole, _cosines("d=0.41 e=0.40"))  # context: less close to anything
    assert as_close(whole, _ranking("d e"))  # no cosines (bm25): the test does not apply
    assert as_close(_ranking("a b"), _cosines("d=0.1"))


def test_points_elsewhere() -> None:
    whole = _ranking("a b c d e")
    assert not points_elsewhere(whole, _ranking("c a"))  # inside the top 3
    assert points_elsewhere(whole, _ranking("d a"))
    assert points_elsewhere(whole, _ranking("d"), depth=3)
    assert not points_elsewhere(whole, _ranking("d"), depth=4)
    assert not points_elsewhere(whole, [])  # a piece that ranks nothing points nowhere
    assert not points_elsewhere(whole, [Candidate("z", 1, 0.0)])  # nor one with no match
    assert points_elsewhere([], _ranking("a"))


def test_intents_all_names_the_always_split_method() -> None:
    always = make_recaller("fused+intents-all", OFFICE, embedder=HashEmbedder())
    assert isinstance(always, IntentSplitRecaller)
    assert always.always and always.name == "fused+intents-all"
    with pytest.raises(ConfigError, match=r"'\+intents', '\+intents-all' and '\+servers'"):
        make_recaller("fused+everything", OFFICE, embedder=HashEmbedder())
