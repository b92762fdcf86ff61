from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from maitred.errors import ConfigError
from maitred.lab.native.trajectories import (
    Trace,
    Trajectory,
    calibrate_threshold,
    evaluate_firing,
    load_trajectories,
    onset_token,
    replay,
)
from maitred.native.backbone import Backbone, _capture
from maitred.native.glance import GlanceMaps, KeyBank
from maitred.native.rollout import (
    Fire,
    RollingGlance,
    SkillTrigger,
    _chat,
    _Decoder,
    centred_votes,
    decay_for,
    generate_with_skills,
)
from maitred.skills.model import Skill

from .conftest import tiny_model, tiny_tokenizer

NAMES = ("a", "b", "c", "d")


def _axes() -> tuple[GlanceMaps, KeyBank]:
    """Identity maps in 4 dimensions; skill j's only key is axis j (so votes are exact)."""
    eye = np.eye(4, dtype=np.float32)
    maps = GlanceMaps(np.zeros(4, np.float32), np.ones(4, np.float32), eye, eye.copy(), "b", 1)
    return maps, KeyBank.build(list(NAMES), [eye[j : j + 1] for j in range(4)], maps)


def _axis(j: int) -> np.ndarray:
    return np.eye(4, dtype=np.float32)[j]


def _trigger(threshold: float, *, patience: int = 2, decay: float = 0.9) -> SkillTrigger:
    maps, bank = _axes()
    return SkillTrigger(maps, bank, threshold=threshold, decay=decay, patience=patience, top_k=1)


def test_a_token_votes_its_lead_over_the_library_mean() -> None:
    m = np.array([[1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.5, 0.5]], np.float32)
    votes = centred_votes(m, top_k=1)
    np.testing.assert_allclose(votes[0], [0.75, 0, 0, 0])
    np.testing.assert_allclose(votes[1], 0.0)  # a filler token that fits every bank alike
    np.testing.assert_allclose(centred_votes(m, top_k=None)[0], [0.75, -0.25, -0.25, -0.25])


def test_fires_only_after_patience_consecutive_tops() -> None:
    trigger = _trigger(0.5)
    assert trigger.observe(_axis(0)) is None  # a leads (0.75 > 0.5) for one step
    fire = trigger.observe(_axis(0))
    assert fire == Fire("a", pytest.approx(0.75 * 1.9), pytest.approx(0.75 * 1.9), 1)
    three = _trigger(0.5, patience=3)
    assert [three.observe(_axis(0)) is None for _ in range(3)] == [True, True, False]
    assert three.fired[0].token_index == 2


def test_a_changing_leader_restarts_the_streak() -> None:
    trigger = _trigger(0.1)
    # a, b, a, b: each token puts its own skill on top, so no skill leads twice in a row
    assert all(trigger.observe(_axis(i % 2)) is None for i in range(8))
    assert trigger.fired == ()


def test_never_fires_below_threshold() -> None:
    trigger = _trigger(0.75 / (1 - 0.9))  # the evidence of an endless run of `a` only nears it
    assert all(trigger.observe(_axis(0)) is None for _ in range(50))
    assert trigger.scores[0] == pytest.approx(7.5, rel=1e-2)
    # evidence without a lead: a token between a and b votes for both alike
    tie = _trigger(0.1)
    assert all(tie.observe(np.array([1, 1, 0, 0], np.float32)) is None for _ in range(20))
    assert tie.scores[0] == tie.scores[1] > 1.0


def test_never_fires_twice_for_one_skill_and_reset_forgets() -> None:
    trigger = _trigger(0.5)
    fires = [trigger.observe(_axis(0)) for _ in range(10)]
    assert [f.skill for f in fires if f] == ["a"]
    # while the loaded skill leads nothing fires; b fires once it overtakes a
    fires = [trigger.observe(_axis(1)) for _ in range(10)]
    assert [f.skill for f in fires if f] == ["b"]
    assert [f.skill for f in trigger.fired] == ["a", "b"]
    trigger.reset()
    assert trigger.fired == () and trigger.glance.tokens == 0
    assert [trigger.observe(_axis(0)) for _ in range(2)][1] is not None


def test_decay_makes_old_tokens_matter_less() -> None:
    decay = decay_for(4.0)
    assert decay**4 == pytest.approx(0.5)
    trigger = _trigger(math.inf, decay=decay)
    trigger.observe(_axis(0))
    trigger.observe(_axis(1))
    np.testing.assert_allclose(trigger.scores, [0.75 * decay, 0.75, 0, 0], rtol=1e-6)
    for _ in range(3):
        trigger.observe(np.full(4, 0.5, np.float32))
    # filler adds nothing; four tokens after it, a's vote weighs half
    assert trigger.scores[0] == pytest.approx(0.75 * 0.5, rel=1e-5)
    uniform = _trigger(math.inf, decay=1.0)
    uniform.observe(_axis(0))
    uniform.observe(_axis(1))
    assert uniform.scores[0] == uniform.scores[1]


def test_incremental_evidence_equals_recomputation() -> None:
    rng = np.random.default_rng(0)
    tokens = rng.normal(size=(120, 16)).astype(np.float32)
    maps = GlanceMaps.pca(tokens, 8, backbone_id="b", layer=1)
    bank = KeyBank.build(["x", "y", "z"], [tokens[:20], tokens[20:45], tokens[45:60]], maps)
    stream = rng.normal(size=(30, 16)).astype(np.float32)
    glance = RollingGlance(maps, bank, decay=0.93)
    for row in stream:
        got = glance.push(row)
    votes = centred_votes(bank.max_sim(maps.queries(stream)))
    weights = 0.93 ** np.arange(len(stream))[::-1]
    np.testing.assert_allclose(got, weights @ votes, rtol=1e-4, atol=1e-6)


def test_a_block_is_uniform_weighs_like_streamed_tokens_and_counts_its_tokens() -> None:
    rng = np.random.default_rng(1)
    tokens = rng.normal(size=(80, 16)).astype(np.float32)
    maps = GlanceMaps.pca(tokens, 8, backbone_id="b", layer=1)
    bank = KeyBank.build(["x", "y"], [tokens[:30], tokens[30:60]], maps)
    block = tokens[60:70]
    glance = RollingGlance(maps, bank, decay=0.8)
    votes = centred_votes(bank.max_sim(maps.queries(block)))
    mass = (1 - 0.8**10) / (1 - 0.8)
    np.testing.assert_allclose(glance.push(block), mass * votes.mean(axis=0), rtol=1e-5)
    flat = RollingGlance(maps, bank, decay=1.0)
    streamed = RollingGlance(maps, bank, decay=1.0)
    for row in block:
        streamed.push(row)
    np.testing.assert_allclose(flat.push(block), streamed.scores, rtol=1e-5)
    # a block's leader has led for all its tokens: with patience 2 a block of one token waits
    # for the next token, a block of ten fires at once
    trigger = SkillTrigger(maps, bank, threshold=-math.inf)
    assert trigger.observe(block[:1]) is None and trigger.observe(block[:0]) is None
    leader = int(np.argmax(trigger.scores))
    backing = block[int(np.argmax(votes[:, leader]))]  # a token that votes for the leader
    fire = trigger.observe(backing)
    assert fire is not None and fire.token_index == 1 and fire.skill == ("x", "y")[leader]
    trigger.reset()
    fire = trigger.observe(block)
    assert fire is not None and fire.token_index == 9


def test_observe_rejects_states_of_another_width() -> None:
    with pytest.raises(ConfigError, match="width"):
        _trigger(0.0).observe(np.zeros(5, np.float32))
    with pytest.raises(ConfigError, match="half-life"):
        decay_for(0.0)


# --------------------------------------------------------------------------- with a model

BODIES = {
    "weather": Skill("weather", "check the weather", body="find the city and check rain"),
    "refund": Skill("refund", "refund money", body="pay the refund for the invoice"),
}


class Recording(SkillTrigger):
    """A trigger that keeps every state it observed."""

    def __init__(self, backbone: Backbone, threshold: float) -> None:
        states = backbone.states(["check weather tomorrow city rain", "pay refund invoice money"])
        maps = GlanceMaps.pca(np.concatenate(states), 8, backbone_id="tiny", layer=3)
        super().__init__(maps, KeyBank.build(list(BODIES), states, maps), threshold=threshold)
        self.seen: list[np.ndarray] = []

    def observe(self, state: np.ndarray) -> Fire | None:
        self.seen.append(np.atleast_2d(state))
        return super().observe(state)


@pytest.fixture
def tiny_full() -> Backbone:
    return Backbone(tiny_model(), tiny_tokenizer(), "tiny", layer=3, keep_layers=4, device="cpu")


def test_streaming_states_equal_backbone_states(tiny_full: Backbone) -> None:
    text = "please check the weather for my city tomorrow"
    backbone = tiny_full
    tokenizer = tiny_tokenizer()
    chat = _chat(tokenizer, "system")
    assert tuple(chat.before_prompt) == backbone._wrap.prefix
    decoder = _Decoder(tiny_model(), 3, "cpu")
    decoder.feed(chat.before_prompt)
    ids = backbone.token_ids(text)
    streamed = np.concatenate([decoder.feed([i])[0] for i in ids])
    decoder.close()
    np.testing.assert_allclose(streamed, backbone.states([text])[0], atol=1e-4)


def test_generate_with_skills_inserts_the_body_and_continues(tiny_full: Backbone) -> None:
    trigger = Recording(tiny_full, -math.inf)
    tokenizer = tiny_tokenizer()
    prompt = "please check weather tomorrow"
    roll = generate_with_skills(tiny_model(), tokenizer, trigger, BODIES, prompt, max_new_tokens=6)
    assert roll.loads and roll.loads[0].after_token == 0  # the 4-token prompt block fires at once
    body = BODIES[roll.loads[0].fire.skill].body
    assert roll.loads[0].note.endswith(body) and body in tokenizer.decode(list(roll.context_ids))
    assert len(roll.segments) == len(roll.loads) + 1 and "[loaded skill:" in roll.text
    assert roll.generated_tokens == 6 and roll.stop == "max_new_tokens"
    # where each generated token sits in the context (the notes sit between them)
    chat = _chat(tokenizer, "system")
    positions, at = [], len(chat.before_prompt) + len(tiny_full.token_ids(prompt))
    at += len(chat.after_prompt)
    for k in range(roll.generated_tokens + 1):
        for load in (x for x in roll.loads if x.after_token == k):
            at += len(chat.before_note + chat.after_note) + len(tiny_full.token_ids(load.note))
        if k < roll.generated_tokens:
            positions.append(at)
            at += 1
    assert at == len(roll.context_ids)
    # one uncached pass over the whole context, notes included, gives every greedy choice and
    # every state the trigger saw: the notes really were in the cache
    model = tiny_model()
    cap: dict[int, torch.Tensor] = {}
    hook = model.model.layers[2].register_forward_hook(_capture(cap, 3))
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([roll.context_ids])).logits[0]
    hook.remove()
    assert [int(torch.argmax(logits[p - 1])) for p in positions] == [
        roll.context_ids[p] for p in positions
    ]
    start, n = len(chat.before_prompt), len(tiny_full.token_ids(prompt))
    np.testing.assert_allclose(trigger.seen[0], cap[3][0, start : start + n].numpy(), atol=1e-4)
    np.testing.assert_allclose(
        np.concatenate(trigger.seen[1:]), cap[3][0, positions].numpy(), atol=1e-4
    )


def test_a_streamed_prompt_fires_within_it_and_loads_after_it(tiny_full: Backbone) -> None:
    trigger = Recording(tiny_full, -math.inf)
    prompt = "please check weather tomorrow"
    roll = generate_with_skills(
        tiny_model(),
        tiny_tokenizer(),
        trigger,
        BODIES,
        prompt,
        max_new_tokens=2,
        stream_prompt=True,
    )
    assert [s.shape[0] for s in trigger.seen[:4]] == [1, 1, 1, 1]  # one token at a time
    first = roll.loads[0]
    assert first.fire.token_index < 4 and first.after_token == 0  # fired within the prompt


# --------------------------------------------------------------------------- trajectories


def test_trajectory_file_and_onset_token(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"id": "p", "text": "haha ok check the weather", "gold": ["weather"], "onset": 8}\n'
        '{"id": "n", "text": "haha ok", "gold": []}\n'
        '{"id": "bad", "text": "check rain", "gold": ["weather"]}\n',
        encoding="utf-8",
    )
    trajs = load_trajectories(path)
    assert [t.id for t in trajs] == ["p", "n"] and not trajs[1].positive
    assert onset_token(tiny_tokenizer(), trajs[0].text, 8) == 2  # "haha", "ok" come first


def _trace(tid: str, gold: tuple[str, ...], onset: int | None, rows: list[list[float]]) -> Trace:
    return Trace(Trajectory(tid, "-", gold, onset), onset, np.array(rows, np.float32))


def test_calibration_and_metrics_on_hand_made_traces() -> None:
    names = ("a", "b")
    traces = [
        _trace("p1", ("a",), 2, [[0.1, 0.0], [0.2, 0.1], [0.9, 0.1], [1.0, 0.2]]),
        _trace("p2", ("b",), 1, [[0.0, 0.1], [0.2, 0.8], [0.1, 0.9], [0.1, 0.9]]),
        _trace("n1", (), None, [[0.4, 0.0], [0.5, 0.1], [0.5, 0.1]]),
    ]
    cal = calibrate_threshold(traces, names)
    # leads: p1 .1 .1 .8 .8, p2 .1 .7 .8 .8, n1 .4 .4 .4 -- above n1's, below p1's and p2's .8
    assert 0.4 <= cal.threshold < 0.8 and cal.net == 2
    report = evaluate_firing(traces, names, threshold=0.6)
    assert (report.trigger_rate, report.correct_rate, report.false_fire_rate) == (1.0, 1.0, 0.0)
    assert report.mean_latency == pytest.approx(2.0)  # p1 fires at 3 (onset 2), p2 at 2 (onset 1)
    low = evaluate_firing(traces, names, threshold=0.0)
    assert low.false_fire_rate == 1.0 and low.early_rate == 0.5  # p1's a leads before its onset
    assert [f.skill for f in replay(traces[0], names, 0.0)] == ["a"]


@pytest.mark.model
@pytest.mark.slow
def test_smollm2_loads_a_skill_mid_generation() -> None:
    from maitred.lab.domains import sitecare
    from maitred.native.backbone import default_gguf, load_causal_lm
    from maitred.native.data import skill_text
    from maitred.skills.catalog import load_catalog

    try:
        default_gguf()
    except Exception as exc:  # the extra is not installed here
        pytest.skip(str(exc))
    catalog = load_catalog(Path(sitecare.__file__).parent / "skills")
    backbone = Backbone.load(layer=24)
    states = backbone.states([skill_text(s) for s in catalog], max_tokens=64)
    maps = GlanceMaps.pca(np.concatenate(states), 64, backbone_id=backbone.backbone_id, layer=24)
    trigger = SkillTrigger(maps, KeyBank.build(catalog.names, states, maps), threshold=-math.inf)
    model, tokenizer, _ = load_causal_lm()
    prompt = "I was charged twice this month, can I get my money back?"
    roll = generate_with_skills(model, tokenizer, trigger, catalog, prompt, max_new_tokens=10)
    first = roll.loads[0]
    assert first.after_token == 0  # the prompt (one block of many tokens) fires at once
    body = catalog[first.fire.skill].body.strip()
    assert body[:60] in tokenizer.decode(list(roll.context_ids))
    assert roll.generated_tokens > first.after_token  # it went on writing after the load
