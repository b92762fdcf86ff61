from pathlib import Path

import pytest

from maitred.errors import ConfigError, IndexMismatchError
from maitred.recall.bm25 import BM25Recaller, s_stem
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


def test_scores_are_the_weighted_sum_of_field_scores(catalog: Catalog) -> None:
    recaller = BM25Recaller.build(catalog, weights={"name": 2.0, "description": 0.5})
    per_field = recaller.field_scores("pdf split pages")
    expected = 2.0 * per_field["name"] + 0.5 * per_field["description"]
    assert recaller.scores("pdf split pages") == pytest.approx(expected)


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
