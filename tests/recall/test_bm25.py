import math
from pathlib import Path

import pytest

from maitred.errors import ConfigError, EmptyCatalogError, IndexMismatchError
from maitred.recall.analyzers import analyze, s_stem
from maitred.recall.bm25 import (
    DEFAULT_B,
    DEFAULT_K1,
    LEXICAL_BODY_CHARS,
    BM25Recaller,
    fill_bodies,
)
from maitred.recall.bm25_plain import PlainBM25Recaller
from maitred.recall.fields import FIELDS, skill_fields
from maitred.skills.model import Catalog, Skill


def _names(recaller: BM25Recaller, text: str) -> list[str]:
    return [c.name for c in recaller.rank(text, 5)]


def test_field_weights_change_the_ranking() -> None:
    catalog = Catalog(
        skills=(
            Skill(name="invoice-tool", description="Create documents for customers"),
            Skill(name="mailer", description="Send an invoice reminder to an invoice contact"),
        )
    )
    recaller = BM25Recaller.build(catalog)
    by_name = recaller.with_weights({"name": 5.0, "description": 0.1})
    by_description = recaller.with_weights({"name": 0.1, "description": 5.0})
    assert _names(by_name, "invoice")[0] == "invoice-tool"
    assert _names(by_description, "invoice")[0] == "mailer"


def _bm25f_by_hand(catalog: Catalog, term: str, weights: dict[str, float]) -> list[float]:
    """The module docstring's BM25F formula, written out with plain Python for one term."""
    texts = fill_bodies([skill_fields(s, body_chars=LEXICAL_BODY_CHARS) for s in catalog])
    tokens = {f: analyze([t[f] for t in texts]) for f in FIELDS}
    tf_tilde = [0.0] * len(catalog)
    for f in FIELDS:
        lengths = [len(doc) for doc in tokens[f]]
        present = [n for n in lengths if n]
        if not present or not weights.get(f):
            continue
        avg = sum(present) / len(present)
        for i, doc in enumerate(tokens[f]):
            norm = (1 - DEFAULT_B) + DEFAULT_B * lengths[i] / avg
            tf_tilde[i] += weights[f] * doc.count(term) / norm
    n = len(catalog)
    df = sum(1 for x in tf_tilde if x > 0)
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return [idf * x * (DEFAULT_K1 + 1) / (x + DEFAULT_K1) for x in tf_tilde]


def test_scores_follow_the_bm25f_formula(catalog: Catalog) -> None:
    weights = {"name": 3.0, "description": 2.0, "body": 1.0, "params": 0.5}
    recaller = BM25Recaller.build(catalog, weights=weights)
    for term in ("pdf", "currency", "rain"):
        assert recaller.scores(term) == pytest.approx(
            _bm25f_by_hand(catalog, term, weights), rel=1e-5
        ), term


def test_field_weights_act_before_saturation() -> None:
    """BM25F, not a sum of per-field BM25s: a term spread over two fields of one skill scores
    less than twice its score in one field (both fields feed one saturated tf)."""
    catalog = Catalog(
        skills=(
            Skill(name="alpha", description="invoice"),
            Skill(name="invoice", description="invoice"),
            Skill(name="gamma", description="other words here"),
        )
    )
    recaller = BM25Recaller.build(catalog, weights={"name": 1.0, "description": 1.0})
    one_field, two_fields = recaller.scores("invoice")[:2]
    assert one_field < two_fields < 2 * one_field


def test_missing_bodies_are_filled_only_where_others_have_one() -> None:
    documented = {"name": "a", "description": "alpha", "body": "long text", "params": ""}
    bare = {"name": "b", "description": "beta", "body": "", "params": ""}
    assert fill_bodies([documented, bare])[1]["body"] == "beta"
    assert fill_bodies([bare, {**bare, "name": "c"}])[0]["body"] == ""


def test_a_documented_skill_is_not_favoured_for_having_a_body() -> None:
    """Regression: with unfilled bodies, the documented skill outranked the skill that is
    exactly the query only because its body repeated the query's word."""
    catalog = Catalog(
        skills=(
            Skill(
                name="archive",
                description="Restore and archive files",
                body="Use it to restore a deleted file or to restore a folder.",
            ),
            Skill(name="undelete", description="Restore files"),
        )
    )
    ranked = BM25Recaller.build(catalog, weights={"name": 1.0, "description": 1.0, "body": 1.0})
    assert ranked.rank("restore files", 2)[0].name == "undelete"


def test_a_catalog_without_indexable_text_is_refused() -> None:
    catalog = Catalog(skills=(Skill(name="a", description="the"), Skill(name="b", description="")))
    with pytest.raises(EmptyCatalogError, match="no skill has an indexable word"):
        BM25Recaller.build(catalog)
    with pytest.raises(EmptyCatalogError, match="no skill has an indexable word"):
        PlainBM25Recaller.build(catalog)


def test_plain_baseline_ranks_over_all_text(catalog: Catalog) -> None:
    plain = PlainBM25Recaller.build(catalog)
    assert [c.name for c in plain.rank("snow and wind", 3)] == ["weather-forecast"]
    assert plain.rank("xyzzy", 3) == []
    assert [c.name for c in plain.rank("from currency", 1)] == ["currency_convert"]


def test_save_and_load_keep_the_weights(catalog: Catalog, tmp_path: Path) -> None:
    weights = {"name": 1.0, "body": 2.0}
    BM25Recaller.build(catalog, weights=weights).save(tmp_path)
    loaded = BM25Recaller.load(tmp_path, catalog, weights=weights)
    assert loaded.weights["body"] == 2.0
    with pytest.raises(IndexMismatchError, match="field weights"):
        BM25Recaller.load(tmp_path, catalog)


def test_candidates_are_ranked_with_bm25_component(catalog: Catalog) -> None:
    ranked = BM25Recaller.build(catalog).rank("split this pdf into pages", 3)
    assert ranked[0].name == "pdf-split"
    assert [c.rank for c in ranked] == list(range(1, len(ranked) + 1))
    assert all(c.components == {"bm25": c.score} and c.score > 0 for c in ranked)


@pytest.mark.parametrize("text", ["", "   ", "the and of is", "xyzzy"])
def test_query_without_known_terms_ranks_nothing(catalog: Catalog, text: str) -> None:
    assert BM25Recaller.build(catalog).rank(text, 5) == []


def test_identifiers_in_params_are_searchable(catalog: Catalog) -> None:
    assert _names(BM25Recaller.build(catalog, weights={"params": 1.0}), "from currency") == [
        "currency_convert"
    ]


def test_s_stemmer_conflates_plurals() -> None:
    assert [s_stem(w) for w in ("policies", "forecasts", "class", "status", "bus")] == [
        "policy",
        "forecast",
        "class",
        "status",
        "bus",
    ]


def test_bad_weights_are_config_errors(catalog: Catalog) -> None:
    with pytest.raises(ConfigError, match="choose one of name, description, body, params"):
        BM25Recaller.build(catalog, weights={"title": 1.0})
    with pytest.raises(ConfigError, match=">= 0"):
        BM25Recaller.build(catalog, weights={"name": -1.0})
    with pytest.raises(ConfigError, match="at least one"):
        BM25Recaller.build(catalog, weights={"name": 0.0})


def test_save_and_load_round_trip(catalog: Catalog, tmp_path: Path) -> None:
    built = BM25Recaller.build(catalog)
    built.save(tmp_path)
    loaded = BM25Recaller.load(tmp_path, catalog)
    assert loaded.rank("convert money", 3) == built.rank("convert money", 3)


def test_load_refuses_another_catalog(catalog: Catalog, tmp_path: Path) -> None:
    BM25Recaller.build(catalog).save(tmp_path)
    other = Catalog(skills=(*catalog.skills, Skill(name="new-one", description="something new")))
    with pytest.raises(IndexMismatchError, match="delete the folder or rebuild"):
        BM25Recaller.load(tmp_path, other)
