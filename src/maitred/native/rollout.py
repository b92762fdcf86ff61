"""Mid-rollout firing: the glance read on the agent's own tokens as it writes them.

When the backbone is itself the agent, the hidden state of every token it reads or writes is
already computed; the glance can score the library on them as they come and *fire* a skill the
moment its need appears, even halfway through a message.

**Evidence.** Each observed token t gets its unit query and its best match in every skill's bank
(:meth:`KeyBank.max_sim`, computed once, when it arrives). It votes, as in the glance, for its
top-k skills -- but with its match *in excess of its mean match over the library*
(:func:`centred_votes`): a token that fits every bank alike (a function word, chat filler) is
no evidence that any skill is needed, however high its raw cosines. A skill's *evidence* after
token t is the recency-weighted sum of its votes::

    E_t = sum_i decay**(t - i) * v_i        kept as   E <- decay * E + v_t

O(skills) per token after the token's one sweep of the banks, never a pass over the context.
It is a sum, not the glance's average: the average of one or two tokens is as high as that of
a whole request, so a lone early token would look decisive, while evidence has to build up
over several tokens (the ranking is the same: at any moment every skill would be divided by
the same total weight). Fired by the same rule, the glance's own score (raw top-k votes,
averaged) found no useful threshold on MetaTool's validation trajectories and loaded half as
many right skills on sitecare's (docs/native.md, "Mid-rollout firing").

**Blocks.** :meth:`SkillTrigger.observe` also takes ``[n, hidden]``: n tokens of the same age.
The written task (the user's prompt) enters this way, with *uniform* weights among its tokens
(the paper's weights for written tasks), and a total weight equal to what n streamed tokens
would have by the time the last is read, ``(1 - decay**n) / (1 - decay)`` -- so a long prompt
counts as at most one window of tokens. It then decays as a whole while the agent writes. For
the firing rule a block is n observed tokens that share one score: its leader has led for n tokens,
so a prompt whose leader clears the threshold fires at once, before the first generated token
(patience guards against a one-token blip mid-stream, which a block average is not).

**The firing rule.** After each observation the leader is checked: when the same skill leads, by a
*lead* (its evidence minus the runner-up's) above the threshold, for ``patience`` consecutive
observed tokens (two, as in the paper), it fires. The lead rather than the evidence itself,
because what makes a load safe is a clear winner: on the test trajectories firing on the lead
loaded about as many right skills and fewer wrong ones (right when fired 0.67 vs 0.55 on
MetaTool, 1.00 vs 0.88 on sitecare). A fired skill never fires again in the rollout, and
while it still leads no other skill can fire (the streak restarts): only a skill that
overtakes the loaded one fires next, so one load does not cascade to the runner-up. The
threshold is calibrated on validation trajectories
(:func:`maitred.lab.native.trajectories.calibrate_threshold`).

**Generation.** :func:`generate_with_skills` decodes greedily with the full causal LM and a KV
cache, feeds the trigger the read-out layer's state of the prompt (one block, or token by
token with ``stream_prompt``) and of every generated token, and on a fire closes the assistant
turn, adds the skill's body as a ``note_role`` message (default ``system``) and opens a new
assistant turn, all through the model's own chat template; the note's tokens enter the cache
but are not observed (the skill's own text would vote for itself).
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

import numpy as np
import torch
from numpy.typing import NDArray
from transformers import PreTrainedTokenizerBase

from maitred.errors import ConfigError
from maitred.native.glance import DEFAULT_TOP_K, GlanceMaps, KeyBank
from maitred.skills.model import Skill

F32 = NDArray[np.float32]

DEFAULT_HALF_LIFE: Final = 4.0
"""Tokens after which a token's vote weighs half (decay ``0.5 ** (1 / 4)`` ~ 0.84): the
evidence is mostly the last dozen tokens, a phrase ("connect my own domain"). Calibrated on
the validation trajectories (benchmarks/native_rollout.py), the net of correct minus false
fires falls as the half-life grows -- 36 / 32 / 28 / 27 at 2 / 4 / 8 / 16 tokens over
MetaTool and sitecare together -- so a long memory mostly carries stale words; 4 rather than
the val-best 2 (a difference within noise) so that a need spread over a phrase is not cut to
its last word or two."""

DEFAULT_PATIENCE: Final = 2
"""Consecutive tokens the same skill must lead above the threshold (the paper's firing rule)."""

MARKER: Final = "\u2063MAITRED{}\u2063"
"""Placeholder contents used to cut the chat template around a message."""


def decay_for(half_life: float) -> float:
    """The per-token decay whose weights halve every ``half_life`` tokens (``inf``: 1.0).

    Raises:
        ConfigError: a half-life that is not positive.
    """
    if not half_life > 0:
        raise ConfigError(f"half-life must be a positive number of tokens, got {half_life}")
    return 1.0 if math.isinf(half_life) else float(0.5 ** (1.0 / half_life))


@dataclass(frozen=True)
class Fire:
    """A skill the trigger fired.

    Attributes:
        skill: its name.
        score: its evidence when it fired.
        lead: its evidence minus the runner-up's (what the threshold was compared with).
        token_index: 0-based index, among all observed tokens, of the last token read.
    """

    skill: str
    score: float
    lead: float
    token_index: int


def leads(scores: F32) -> F32:
    """Each row's lead: its best score minus its second best (the best itself for one skill)."""
    rows = np.atleast_2d(scores)
    if rows.shape[1] < 2:
        return np.asarray(rows[:, 0], dtype=np.float32)
    top2 = np.partition(rows, rows.shape[1] - 2, axis=1)[:, -2:]
    return np.asarray(top2[:, 1] - top2[:, 0], dtype=np.float32)


def centred_votes(m: F32, top_k: int | None = DEFAULT_TOP_K) -> F32:
    """Each token's votes ``[T, skills]`` from its best matches ``m`` (:meth:`KeyBank.max_sim`).

    A token votes for its ``top_k`` skills (all for ``None``) with its match *in excess of its
    mean match over the library*: a token that fits every bank alike (a function word, chat
    filler) votes about nothing, while a decisive one ("invoice", "DNS") votes its excess.
    """
    excess = m - m.mean(axis=1, keepdims=True)
    n = m.shape[1]
    if top_k is None or top_k >= n:
        return np.asarray(excess, dtype=np.float32)
    cut = np.partition(m, n - top_k, axis=1)[:, n - top_k : n - top_k + 1]
    return np.asarray(np.where(m >= cut, excess, 0.0), dtype=np.float32)


class RollingGlance:
    """Decayed evidence per skill over a growing context (no firing rule).

    Attributes:
        maps, bank: the glance.
        decay: weight factor per token of age, in (0, 1].
        top_k: skills each token votes for.
    """

    def __init__(
        self,
        maps: GlanceMaps,
        bank: KeyBank,
        *,
        decay: float = decay_for(DEFAULT_HALF_LIFE),
        top_k: int | None = DEFAULT_TOP_K,
    ) -> None:
        if not 0.0 < decay <= 1.0:
            raise ConfigError(f"decay must be in (0, 1], got {decay}")
        self.maps, self.bank, self.decay, self.top_k = maps, bank, decay, top_k
        self._evidence = np.zeros(len(bank.names), np.float64)
        self._tokens = 0

    @property
    def tokens(self) -> int:
        """Tokens observed since the last reset."""
        return self._tokens

    @property
    def scores(self) -> F32:
        """Every skill's current evidence (zeros before any token)."""
        return self._evidence.astype(np.float32)

    def block_mass(self, n: int) -> float:
        """Total weight of a block of ``n`` same-age tokens: what ``n`` streamed tokens would
        weigh once the last is read, ``(1 - decay**n) / (1 - decay)`` (``n`` without decay)."""
        return float(n) if self.decay == 1.0 else (1.0 - self.decay**n) / (1.0 - self.decay)

    def push(self, states: F32) -> F32:
        """Add one token (``[hidden]``) or a block of same-age tokens (``[n, hidden]``).

        Returns:
            The evidence after the push.

        Raises:
            ConfigError: states of another width than the maps read.
        """
        x = np.asarray(states, dtype=np.float32)
        x = x[None, :] if x.ndim == 1 else x
        if x.ndim != 2 or x.shape[1] != self.maps.mean.shape[0]:
            raise ConfigError(
                f"states of shape {np.shape(states)} do not fit maps of width "
                f"{self.maps.mean.shape[0]} (layer {self.maps.layer} of {self.maps.backbone_id})"
            )
        if len(x):
            votes = centred_votes(self.bank.max_sim(self.maps.queries(x)), self.top_k)
            mean_vote = votes.mean(axis=0, dtype=np.float64)
            self._evidence = self.decay * self._evidence + self.block_mass(len(x)) * mean_vote
            self._tokens += len(x)
        return self.scores

    def reset(self) -> None:
        """Forget every observed token."""
        self._evidence[:] = 0.0
        self._tokens = 0


class FiringRule:
    """Fire the skill that leads by more than ``threshold`` for ``patience`` consecutive tokens.

    Attributes:
        names: skill names, in score order.
        threshold: a leader's lead must be strictly above it.
        patience: consecutive observed tokens it must lead.
    """

    def __init__(
        self, names: tuple[str, ...], threshold: float, patience: int = DEFAULT_PATIENCE
    ) -> None:
        if patience < 1:
            raise ConfigError(f"patience must be at least 1 token, got {patience}")
        self.names, self.threshold, self.patience = names, threshold, patience
        self._leader = -1
        self._streak = 0
        self._fired: list[Fire] = []

    @property
    def fired(self) -> tuple[Fire, ...]:
        """Fires since the last reset, in order."""
        return tuple(self._fired)

    def step(self, scores: F32, token_index: int, tokens: int = 1) -> Fire | None:
        """One observation of ``tokens`` tokens, the last at ``token_index``; the scores after."""
        top = int(np.argmax(scores))
        lead = float(leads(scores)[0])
        done = any(f.skill == self.names[top] for f in self._fired)
        if done or not lead > self.threshold:
            self._leader, self._streak = -1, 0
            return None
        self._streak = self._streak + tokens if top == self._leader else tokens
        self._leader = top
        if self._streak < self.patience:
            return None
        fire = Fire(self.names[top], float(scores[top]), lead, token_index)
        self._fired.append(fire)
        self._leader, self._streak = -1, 0
        return fire

    def reset(self) -> None:
        """A new rollout: no leader, nothing fired."""
        self._leader, self._streak = -1, 0
        self._fired.clear()


class SkillTrigger:
    """The streaming interface: ``observe(state)`` per token, a :class:`Fire` when one fires.

    Any runtime that can read the maps' layer per token (``maps.layer``: output of decoder block
    ``layer``, 1-based, as :class:`~maitred.native.backbone.Backbone` reads it) can drive it.

    Attributes:
        glance: the rolling evidence.
        rule: the firing rule.
    """

    def __init__(
        self,
        maps: GlanceMaps,
        bank: KeyBank,
        *,
        threshold: float,
        decay: float = decay_for(DEFAULT_HALF_LIFE),
        patience: int = DEFAULT_PATIENCE,
        top_k: int | None = DEFAULT_TOP_K,
    ) -> None:
        """A trigger that has observed nothing and fired nothing.

        Args:
            maps, bank: the glance (the bank's names are what can fire).
            threshold: calibrated lead a leader must exceed.
            decay: per-token recency factor (:func:`decay_for` a half-life).
            patience: consecutive observed tokens a leader must hold.
            top_k: skills each token votes for.
        """
        self.glance = RollingGlance(maps, bank, decay=decay, top_k=top_k)
        self.rule = FiringRule(bank.names, threshold, patience)

    @property
    def layer(self) -> int:
        """The layer whose states :meth:`observe` takes."""
        return self.glance.maps.layer

    @property
    def scores(self) -> F32:
        """Every skill's current evidence."""
        return self.glance.scores

    @property
    def fired(self) -> tuple[Fire, ...]:
        """What fired since the last reset."""
        return self.rule.fired

    def observe(self, state: F32) -> Fire | None:
        """Read one token's state (``[hidden]``) or a block of same-age tokens (``[n, hidden]``).

        Returns:
            The fire, if this observation completed one (an empty block changes nothing).
        """
        before = self.glance.tokens
        scores = self.glance.push(state)
        if self.glance.tokens == before:
            return None
        return self.rule.step(scores, self.glance.tokens - 1, self.glance.tokens - before)

    def reset(self) -> None:
        """Start a new rollout."""
        self.glance.reset()
        self.rule.reset()


# --------------------------------------------------------------------------- generation


@dataclass(frozen=True)
class SkillLoad:
    """One fire during generation.

    Attributes:
        fire: what the trigger reported (its ``token_index`` counts prompt tokens too).
        after_token: generated tokens when it fired; the note follows that token.
        note: the message put into the context.
    """

    fire: Fire
    after_token: int
    note: str


@dataclass(frozen=True)
class Rollout:
    """What :func:`generate_with_skills` did.

    Attributes:
        prompt: the user's message.
        segments: the assistant's text before the first load, between loads, after the last.
        loads: the skills loaded, in order (``len(segments) == len(loads) + 1``).
        generated_tokens: tokens generated (notes not counted).
        stop: ``"eos"`` (the model ended its turn) or ``"max_new_tokens"``.
        context_ids: every token the model read, template, prompt, notes and its own output.
    """

    prompt: str
    segments: tuple[str, ...]
    loads: tuple[SkillLoad, ...]
    generated_tokens: int
    stop: Literal["eos", "max_new_tokens"]
    context_ids: tuple[int, ...]

    @property
    def text(self) -> str:
        """The generated text with a ``[loaded skill: name]`` line where each load happened."""
        parts = [self.segments[0]]
        for load, segment in zip(self.loads, self.segments[1:], strict=True):
            parts += [f"\n[loaded skill: {load.fire.skill}]\n", segment]
        return "".join(parts)


class SkillSource(Protocol):
    """Anything that gives a skill by name (a :class:`~maitred.skills.model.Catalog`, a dict)."""

    def __getitem__(self, name: str, /) -> Skill: ...


def skill_note(skill: Skill) -> str:
    """The message that loads a skill: its name and SKILL.md body (the description if none)."""
    body = skill.body.strip() or skill.description.strip()
    return f"Skill loaded: {skill.name}\n\n{body}"


@dataclass(frozen=True)
class _Chat:
    """Token ids the chat template puts around a prompt and around a mid-rollout note."""

    before_prompt: list[int]
    after_prompt: list[int]
    before_note: list[int]
    after_note: list[int]


def _chat(tokenizer: PreTrainedTokenizerBase, note_role: str) -> _Chat:
    """Cut the template's rendering at placeholder contents (needs a chat template)."""
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError("generate_with_skills needs a chat model: the tokenizer has no template")
    user, said, note = (MARKER.format(i) for i in range(3))
    messages = [
        {"role": "user", "content": user},
        {"role": "assistant", "content": said},
        {"role": note_role, "content": note},
    ]
    try:
        full = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        first = tokenizer.apply_chat_template(
            messages[:1], tokenize=False, add_generation_prompt=True
        )
    except Exception as exc:  # jinja raises whatever the template's author chose
        raise ConfigError(
            f"the chat template refused a {note_role!r} message after the assistant's "
            f"({exc}); pass another note_role (e.g. 'user')"
        ) from exc
    assert isinstance(full, str) and isinstance(first, str)

    def ids(text: str) -> list[int]:
        return [int(i) for i in tokenizer(text, add_special_tokens=False)["input_ids"]]

    head, tail = first.split(user)
    return _Chat(
        ids(head),
        ids(tail),
        ids(full[full.index(said) + len(said) : full.index(note)]),
        ids(full[full.index(note) + len(note) :]),
    )


class _Decoder:
    """The full causal LM with a KV cache, reading one decoder block's output per token."""

    def __init__(self, model: Any, layer: int, device: str) -> None:
        blocks = model.model.layers
        if not 1 <= layer <= len(blocks):
            raise ConfigError(f"layer {layer} is outside 1..{len(blocks)} of this model")
        self.model = model.to(device).eval()
        self.device = device
        self.cache: Any = None
        self.state: torch.Tensor | None = None
        params = inspect.signature(model.forward).parameters
        # transformers 5 renamed ``past_key_values`` to ``cache``
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self._hook = blocks[layer - 1].register_forward_hook(self._keep)

    def _keep(self, _module: Any, _inputs: Any, output: Any) -> None:
        self.state = output[0] if isinstance(output, tuple) else output

    @torch.inference_mode()
    def feed(self, ids: list[int]) -> tuple[F32, torch.Tensor]:
        """Run ``ids`` after the cache: their states at the layer and the next-token logits."""
        kwargs = {} if self.cache is None else {self._cache_arg: self.cache}
        out = self.model(
            input_ids=torch.tensor([ids], device=self.device), use_cache=True, **kwargs
        )
        self.cache = getattr(out, "cache", None) or out.past_key_values
        assert self.state is not None
        states = self.state[0].float().cpu().numpy()
        return np.asarray(states, np.float32), out.logits[0, -1]

    def close(self) -> None:
        self._hook.remove()


def _stop_ids(model: Any, tokenizer: PreTrainedTokenizerBase) -> set[int]:
    """Tokens that end the assistant's turn: the tokenizer's EOS and the generation config's."""
    found: set[int] = set()
    config = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    for value in (tokenizer.eos_token_id, config):
        if isinstance(value, int):
            found.add(value)
        elif isinstance(value, list):
            found.update(int(v) for v in value)
    return found


def generate_with_skills(
    model: Any,
    tokenizer: PreTrainedTokenizerBase,
    trigger: SkillTrigger,
    skills: SkillSource,
    prompt: str,
    *,
    max_new_tokens: int = 64,
    note_role: str = "system",
    stream_prompt: bool = False,
    device: str = "cpu",
) -> Rollout:
    """Greedy generation that loads a skill into the context whenever the trigger fires.

    Args:
        model: the full causal LM (:func:`~maitred.native.backbone.load_causal_lm`), the
            backbone the trigger's maps were made for.
        tokenizer: its tokenizer, with a chat template.
        trigger: reset here, then fed the prompt (one block) and every generated token.
        skills: name -> :class:`Skill` (a :class:`~maitred.skills.model.Catalog` works).
        prompt: the user's message.
        max_new_tokens: generated tokens at most (notes do not count).
        note_role: the chat role of the message that carries a skill's body.
        stream_prompt: observe the prompt token by token, with decay, as the trajectory
            evaluation does (the need may lie anywhere in a long message), instead of as one
            block with uniform weights (the written task). Fires on it load after the prompt.
        device: where the model runs.

    Returns:
        The transcript: text segments and the loads between them.
    """
    chat = _chat(tokenizer, note_role)
    text_ids = [int(i) for i in tokenizer(prompt, add_special_tokens=False)["input_ids"]]
    stops = _stop_ids(model, tokenizer)
    decoder = _Decoder(model, trigger.layer, device)
    trigger.reset()
    segments: list[list[int]] = [[]]
    loads: list[SkillLoad] = []
    context = chat.before_prompt + text_ids + chat.after_prompt
    generated = 0
    stop: Literal["eos", "max_new_tokens"] = "max_new_tokens"
    try:
        states, logits = decoder.feed(context)
        start = len(chat.before_prompt)
        read = states[start : start + len(text_ids)]
        fires = [trigger.observe(row) for row in read] if stream_prompt else [trigger.observe(read)]
        while True:
            for fire in (f for f in fires if f is not None):
                note = skill_note(skills[fire.skill])
                note_ids = tokenizer(note, add_special_tokens=False)["input_ids"]
                wrapped = chat.before_note + [int(i) for i in note_ids] + chat.after_note
                _, logits = decoder.feed(wrapped)
                context += wrapped
                loads.append(SkillLoad(fire, generated, note))
                segments.append([])
            if generated >= max_new_tokens:
                break
            token = int(torch.argmax(logits))
            if token in stops:
                stop = "eos"
                break
            generated += 1
            segments[-1].append(token)
            context.append(token)
            states, logits = decoder.feed([token])
            fires = [trigger.observe(states[-1])]
    finally:
        decoder.close()
    texts = tuple(str(tokenizer.decode(ids, skip_special_tokens=True)) for ids in segments)
    return Rollout(prompt, texts, tuple(loads), generated, stop, tuple(context))
