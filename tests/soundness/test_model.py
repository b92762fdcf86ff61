"""The reference model's own check: on well-typed values its reading of each predicate of the
grammar is CEL's (the engine's evaluator), so a disagreement elsewhere is the engine's.

On untyped values (SQLite's 0/1 for a bool) the model reads the declared type first and CEL
does not: that difference is issue 16's defect 1, shown in test_defects.py, not here.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from maitred.contract.evaluate import evaluate
from maitred.contract.predicate import CelPredicate
from maitred.state.snapshot import Snapshot

from . import spec
from .conftest import SOUNDNESS, examples


@st.composite
def cases(draw: st.DrawFn) -> tuple[spec.Pred, object]:
    pred = draw(spec.preds("p"))
    return pred, draw(spec.raw_values(pred.key, untyped=False))


@settings(SOUNDNESS, max_examples=examples(4))
@given(case=cases())
def test_the_model_reads_typed_values_as_cel_does(case: tuple[spec.Pred, object]) -> None:
    pred, value = case
    cel = CelPredicate(expression=pred.cel(), name=pred.name, reads=(pred.key,))
    outcome = evaluate(cel, Snapshot("acc", {pred.key: value}, 0.0), 0.0)
    assert outcome.holds == spec.holds_on(pred, value), (pred.cel(), value, outcome.detail)


def test_the_model_reads_sqlite_booleans_as_their_declared_type() -> None:
    frozen = spec.Pred("p", "eq", "repo.frozen", True)
    assert spec.holds_on(frozen, 1) and not spec.holds_on(frozen, 0)
    assert spec.holds_on(frozen, 7), "a value that does not fit its type is an error, which holds"
    assert not spec.holds_on(frozen, None), "null == true is false in CEL"
    assert spec.holds_on(spec.Pred("p", "not", "repo.frozen"), None), "!null is an error"


def test_a_value_whose_row_was_deleted_is_missing_to_the_model() -> None:
    """Found by the 10,000-example run: after ``delete_rows`` kept only the account's
    ``account`` row, the model still read ``repo.frozen`` (a NULL) from its world and called an
    ``on_missing: offer`` predicate an error, while the store -- rightly -- served the key as
    missing. The model was wrong, not the engine."""
    world = spec.World(
        accounts={"acc-a": {"account.plan": "free", "repo.frozen": None}},
        roots={"acc-a": {"account"}},
    )
    lenient = spec.Pred("p", "is", "repo.frozen", on_missing="offer")
    strict = spec.Pred("p", "is", "repo.frozen", on_missing="block")
    assert not spec.fires(lenient, "acc-a", world)
    assert spec.fires(strict, "acc-a", world)
