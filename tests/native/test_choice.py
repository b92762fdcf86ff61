"""The replay's local model on the native extra's runtime: the pick is always a menu name or
None, the one whose answer the model finds most likely, and the same every time."""

from __future__ import annotations

import pytest
import torch

from maitred.native.choice import NONE, LikelihoodChoiceModel
from maitred.replay.prompt import MenuItem

from .conftest import WORDS, tiny_model, tiny_tokenizer

MENU = [MenuItem(WORDS[0], f"{WORDS[1]} {WORDS[2]}"), MenuItem(WORDS[3], f"{WORDS[4]}")]


def _model() -> LikelihoodChoiceModel:
    return LikelihoodChoiceModel(model=(tiny_model(), tiny_tokenizer(), "tiny"))


def test_the_pick_is_the_most_likely_answer_and_always_on_the_menu() -> None:
    model = _model()
    conversation = [f"{WORDS[5]} {WORDS[6]}"]
    prompt = model._prompt(conversation, MENU)
    scores = {o: model._score(prompt, o) for o in [m.name for m in MENU] + [NONE]}
    best = max(scores, key=lambda o: scores[o])
    pick = model.choose(conversation, MENU)
    assert pick == (None if best == NONE else best)
    assert model.choose(conversation, MENU) == pick  # deterministic
    assert model.choose(conversation, []) is None
    assert model.name == "local:tiny"


def test_a_score_is_the_mean_log_likelihood_of_the_answer_tokens() -> None:
    model = _model()
    prompt = model._prompt(["x"], MENU)
    answer = [int(i) for i in model._tokenizer(WORDS[0], add_special_tokens=False)["input_ids"]]
    answer.append(int(model._tokenizer.eos_token_id))
    with torch.no_grad():
        logits = model._lm(input_ids=torch.tensor([prompt + answer])).logits[0]
    expected = sum(
        float(torch.log_softmax(logits[len(prompt) - 1 + i], dim=-1)[t])
        for i, t in enumerate(answer)
    ) / len(answer)
    assert model._score(prompt, WORDS[0]) == pytest.approx(expected, rel=1e-5)
