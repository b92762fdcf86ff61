from maitred.recall.base import Candidate, Cutoff
from maitred.recall.family import expand_families
from maitred.skills.model import Catalog


def test_family_expansion_orders_ranked_members_first_then_catalog_order(
    catalog: Catalog,
) -> None:
    survivors = [
        Candidate("pdf-fill", 1, 0.9, {"bm25": 3.0}),
        Candidate("weather-forecast", 2, 0.7, {"bm25": 2.0}),
        Candidate("pdf-split", 3, 0.5, {"bm25": 1.0}),
    ]
    expanded = expand_families(survivors, catalog)
    assert [(c.name, c.rank, c.score) for c in expanded] == [
        ("pdf-fill", 1, 0.9),
        ("pdf-split", 2, 0.9),
        ("pdf-merge", 3, 0.9),
        ("weather-forecast", 4, 0.7),
    ]
    assert expanded[1].components == {"bm25": 1.0}
    assert expanded[2].components == {"bm25": 3.0, "family_added": 1.0}
    assert survivors[0].rank == 1 and len(survivors) == 3  # input untouched


def test_family_expansion_applies_after_a_cutoff(catalog: Catalog) -> None:
    ranked = [
        Candidate("stock-quote", 1, 0.8),
        Candidate("pdf-merge", 2, 0.4),
        Candidate("currency_convert", 3, 0.1),
    ]
    expanded = expand_families(Cutoff(top_k=3, min_score=0.3).apply(ranked), catalog)
    assert [c.name for c in expanded] == ["stock-quote", "pdf-merge", "pdf-split", "pdf-fill"]
    assert [c.score for c in expanded] == [0.8, 0.4, 0.4, 0.4]


def test_skills_without_family_are_unchanged(catalog: Catalog) -> None:
    ranked = [Candidate("stock-quote", 1, 0.8, {"dense": 0.8})]
    assert expand_families(ranked, catalog) == ranked
    assert expand_families([], catalog) == []
