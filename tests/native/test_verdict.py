"""The verdict: likelihood and judgment from one resumed pass, KV reuse, the skill LRU."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from maitred.errors import ConfigError
from maitred.native.verdict import AnswerTokens, SkillCache, Verdict, answer_tokens

from .conftest import tiny_model, tiny_tokenizer

SKILLS = [
    "check the weather rain sun tomorrow in my city",
    "refund money for an invoice",
    "publish site domain dns",
    "play a song",
    "book a flight and hotel for travel please",
]
TASK = "will it rain tomorrow in my city"


def verdict(**kwargs: object) -> Verdict:
    return Verdict(tiny_model(), tiny_tokenizer(), "tiny@test", device="cpu", **kwargs)  # type: ignore[arg-type]


def by_hand(v: Verdict, skill: str, task: str) -> tuple[float, float]:
    """One unpadded, uncached pass over the whole prompt: the reference."""
    prefix, task_ids = list(v.prefix_ids(skill)), v.task_ids(task)
    ids = prefix + task_ids + v._question + v._tail
    with torch.no_grad():
        logp = torch.log_softmax(v.model(input_ids=torch.tensor([ids])).logits[0], dim=-1)
    start = len(prefix) - 1
    likelihood = float(np.mean([logp[start + j, t].item() for j, t in enumerate(task_ids)]))
    last = logp[-1]
    yes = torch.logsumexp(last[list(v.answers.yes)], 0)
    no = torch.logsumexp(last[list(v.answers.no)], 0)
    return likelihood, float(yes - no)


def test_scores_have_one_value_per_skill() -> None:
    scores = verdict().score(TASK, SKILLS)
    assert scores.likelihood.shape == scores.judgment.shape == (len(SKILLS),)
    assert np.all(np.isfinite(scores.judgment)) and np.all(scores.likelihood < 0)
    with pytest.raises(ConfigError, match="task"):
        verdict().score("   ", SKILLS)


@pytest.mark.parametrize("batch_size", [16, 2])
def test_kv_reuse_equals_recomputing_and_the_unpadded_reference(batch_size: int) -> None:
    v = verdict(batch_size=batch_size)
    cold = v.score(TASK, SKILLS)  # fills the cache
    warm = v.score(TASK, SKILLS)  # resumes every skill from it
    fresh = v.score(TASK, SKILLS, reuse=False)
    assert v.cache.hits == len(SKILLS)
    for got in (warm, fresh):
        assert np.allclose(got.likelihood, cold.likelihood, atol=1e-4)
        assert np.allclose(got.judgment, cold.judgment, atol=1e-4)
    for i, skill in enumerate(SKILLS):  # skills of different lengths, padded into one batch
        likelihood, judgment = by_hand(v, skill, TASK)
        assert abs(likelihood - warm.likelihood[i]) < 1e-4
        assert abs(judgment - warm.judgment[i]) < 1e-4


def test_skill_cache_is_a_bounded_lru() -> None:
    v = verdict(cache_skills=2)
    v.score(TASK, SKILLS)
    assert len(v.cache) == 2 and SKILLS[-1] in v.cache and SKILLS[0] not in v.cache
    v.score(TASK, [SKILLS[3]])  # used: now the most recent
    v.score(TASK, [SKILLS[0]])  # evicts the least recent, SKILLS[4]
    assert SKILLS[3] in v.cache and SKILLS[0] in v.cache and SKILLS[4] not in v.cache
    none = verdict(cache_skills=0)
    none.score(TASK, SKILLS[:2])
    assert len(none.cache) == 0
    with pytest.raises(ConfigError):
        SkillCache(-1)


def test_swapping_yes_and_no_flips_the_judgment() -> None:
    v = verdict()
    assert v.answers == answer_tokens(v.tokenizer)
    swapped = verdict(answers=v.answers.swapped())
    a, b = v.score(TASK, SKILLS), swapped.score(TASK, SKILLS)
    assert np.allclose(a.judgment, -b.judgment, atol=1e-5)
    assert np.allclose(a.likelihood, b.likelihood)


def test_answer_tokens_keep_single_known_tokens() -> None:
    tok = tiny_tokenizer()
    answers = answer_tokens(tok)
    # "Yes" / "YES" are unknown to the tiny vocabulary: only the word-level "yes" / "no" stay
    assert answers == AnswerTokens(
        (tok.convert_tokens_to_ids("yes"),), (tok.convert_tokens_to_ids("no"),)
    )


PAIRS = [
    ("What will the weather be like in Paris tomorrow?", 0),
    ("Find me a recipe for a vegetarian lasagna.", 1),
    ("Reset the password of my email account.", 2),
    ("What is the stock price of Apple today?", 3),
]
REAL_SKILLS = [
    "get Weather: Get the current weather and the forecast for any city.",
    "find Recipe: Search cooking recipes by ingredient and cuisine.",
    "email Admin: Manage mailboxes, aliases and password resets for email accounts.",
    "stock Price: Look up live stock prices and market news.",
]


@pytest.mark.model
def test_smollm2_verdict_prefers_the_relevant_skill() -> None:
    """SmolLM2-135M's *likelihood* separates every pair; its yes/no *judgment* is weak (it
    misorders the recipe pair by 0.06 nats), so only its average margin is asserted."""
    from maitred.native.backbone import default_gguf

    try:
        default_gguf()
    except Exception as exc:  # the extra is not installed here
        pytest.skip(str(exc))
    v = Verdict.load(device="cpu")
    margins = []
    for task, good in PAIRS:
        other = good ^ 1  # weather <-> recipe, email <-> stock
        scores = v.score(task, [REAL_SKILLS[good], REAL_SKILLS[other]])
        assert scores.likelihood[0] > scores.likelihood[1], task
        margins.append(float(scores.judgment[0] - scores.judgment[1]))
    assert np.mean(margins) > 0, margins
