"""The verdict: the frozen model's own likelihood and yes/no judgment for shortlisted skills.

For a task and each skill of a (glance) shortlist, the full causal LM reads one prompt::

    <template head> Skill: <skill text> \\n\\nTask: | <task> \\n\\n<QUESTION> <template tail>
    '------------- skill prefix ---------------'   '-------- resumed part ---------'

(the chat template's user turn holds everything up to the question; the tail closes it and opens
the assistant turn). From ONE causal pass it reads two scores per skill:

- **likelihood**: the mean log-probability of the task's tokens given the skill text (the
  generative signal: would this skill have led to this request?);
- **judgment**: the log-odds of "yes" over "no" at the first position of the assistant's answer
  (the discriminative signal). Because the question comes *after* the task, it cannot change the
  task positions' predictions, so both read-outs share one pass.

**Which tokens are "yes" and "no".** :func:`answer_tokens` tokenizes the variants in
:data:`YES_WORDS` / :data:`NO_WORDS` (``yes``, ``Yes``, `` yes``, ``YES`` ...) and keeps those that
are exactly one known token (``YES`` splits into ``Y`` + ``ES`` in SmolLM2's vocabulary and ``Y``
begins many other words, so multi-token variants are skipped; so is the unknown token and any id
on both sides). The judgment is ``logsumexp(log p(yes ids)) - logsumexp(log p(no ids))``: the
answer begins a new line after the assistant header, where a model may say ``Yes`` or ``yes``
with or without a leading space, and the pooled log-odds does not depend on that choice.

**KV reuse.** The skill prefix (template head + skill text + the task label) is the same for
every task, so its key/value cache is computed once per skill and kept in a bounded LRU
(:class:`SkillCache`, :data:`DEFAULT_CACHE_SKILLS` entries; about 46 KB per token for
SmolLM2-135M in float32, so ~6 MB per skill). The cache covers the prefix *minus its last
token*; the resumed part starts with that token, so the first task token's prediction comes out of
the resumed pass and no logits need caching. The shortlist is scored as one batch: the skills'
caches (of different lengths) are right-padded into one cache, the padding is masked out, and each
row's position ids continue from its own prefix length. ``reuse=False`` runs the very same layout
without a cache (every prefix recomputed): same scores (to float rounding; tested), more work --
what the cost benchmark compares.

Assumes a decoder with full attention in every layer (Llama, SmolLM2, Qwen); the padded cache
is built layer by layer from plain key/value tensors.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import torch
from numpy.typing import NDArray
from transformers import DynamicCache, PreTrainedTokenizerBase

from maitred.errors import ConfigError
from maitred.native.backbone import MAX_TOKENS, load_causal_lm

QUESTION: Final = "Is this skill relevant to the task? Answer yes or no."
"""Asked after the task; the answer's first token is read."""

SKILL_LABEL: Final = "Skill: "
TASK_LABEL: Final = "\n\nTask:"
"""Ends every skill prefix, so the task's tokens are the first ones resumed."""

SKILL_TOKENS: Final = MAX_TOKENS
"""Tokens of a skill's text in its prefix (the verdict reads more of it than the glance's 64)."""

TASK_TOKENS: Final = MAX_TOKENS
"""Tokens of the task read (longer tasks are truncated)."""

DEFAULT_CACHE_SKILLS: Final = 64
"""Skill prefixes kept (least recently used dropped): a few shortlists' worth, ~400 MB for
SmolLM2-135M. A 200-skill catalog fits whole at ~1.2 GB; set ``cache_skills`` to taste."""

DEFAULT_BATCH: Final = 16
"""Skills per forward pass (a shortlist of 10 is one batch)."""

YES_WORDS: Final = ("yes", "Yes", " yes", " Yes", "YES", " YES")
NO_WORDS: Final = ("no", "No", " no", " No", "NO", " NO")

F32 = NDArray[np.float32]
KV = tuple[tuple[torch.Tensor, torch.Tensor], ...]


@dataclass(frozen=True)
class AnswerTokens:
    """The token ids pooled as "yes" and as "no" (disjoint, neither empty)."""

    yes: tuple[int, ...]
    no: tuple[int, ...]

    def swapped(self) -> AnswerTokens:
        """The same ids with the roles exchanged (the judgment changes sign)."""
        return AnswerTokens(self.no, self.yes)


def answer_tokens(tokenizer: PreTrainedTokenizerBase) -> AnswerTokens:
    """The single-token, known, unambiguous variants of "yes" and "no" (see the module doc).

    Raises:
        ConfigError: the vocabulary has no single token for "yes" or for "no".
    """
    unk = tokenizer.unk_token_id

    def ids(words: Sequence[str]) -> list[int]:
        found: list[int] = []
        for word in words:
            got = tokenizer(word, add_special_tokens=False)["input_ids"]
            if len(got) == 1 and got[0] != unk and int(got[0]) not in found:
                found.append(int(got[0]))
        return found

    yes, no = ids(YES_WORDS), ids(NO_WORDS)
    both = set(yes) & set(no)
    yes, no = [i for i in yes if i not in both], [i for i in no if i not in both]
    if not yes or not no:
        raise ConfigError(
            "the tokenizer has no single token for 'yes' or 'no'; pass AnswerTokens explicitly"
        )
    return AnswerTokens(tuple(yes), tuple(no))


@dataclass(frozen=True)
class VerdictScores:
    """Per skill, in the order asked.

    Attributes:
        likelihood: mean log-probability of the task's tokens given the skill (<= 0).
        judgment: log-odds of "yes" over "no" after the relevance question.
    """

    likelihood: F32
    judgment: F32


@dataclass(frozen=True)
class _Prefix:
    """A skill prefix's ids and the cache of all but its last token (per layer K, V)."""

    ids: tuple[int, ...]
    kv: KV


class SkillCache:
    """A bounded LRU of skill prefixes' key/value caches, keyed by skill text.

    Attributes:
        max_skills: entries kept; 0 keeps none (every call recomputes).
        hits, misses: lookups served and not served since creation.
    """

    def __init__(self, max_skills: int = DEFAULT_CACHE_SKILLS) -> None:
        if max_skills < 0:
            raise ConfigError(f"cache_skills must be >= 0, got {max_skills}")
        self.max_skills = max_skills
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[str, _Prefix] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: str) -> _Prefix | None:
        """The entry (now the most recently used) or ``None``."""
        entry = self._entries.get(key)
        if entry is None:
            self.misses += 1
            return None
        self.hits += 1
        self._entries.move_to_end(key)
        return entry

    def put(self, key: str, entry: _Prefix) -> None:
        """Keep ``entry``, dropping the least recently used beyond :attr:`max_skills`."""
        if not self.max_skills:
            return
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_skills:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry."""
        self._entries.clear()


def _template_pieces(tokenizer: PreTrainedTokenizerBase) -> tuple[list[int], list[int]]:
    """Ids the chat template puts before a user message and after it (through the assistant
    header); without a template, BOS before and nothing after."""
    marker = "\u2063MAITRED\u2063"
    if getattr(tokenizer, "chat_template", None):
        rendered = tokenizer.apply_chat_template(
            [{"role": "user", "content": marker}], tokenize=False, add_generation_prompt=True
        )
        assert isinstance(rendered, str)
        head, tail = rendered.split(marker, 1)
        return _ids(tokenizer, head), _ids(tokenizer, tail)
    bos = tokenizer.bos_token_id
    return ([] if bos is None else [int(bos)]), []


def _ids(tokenizer: PreTrainedTokenizerBase, text: str, limit: int | None = None) -> list[int]:
    got = tokenizer(text, add_special_tokens=False)["input_ids"]
    return [int(i) for i in got[:limit]]


def layer_kv(cache: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per-layer (keys, values) of a transformers cache (5.x ``layers`` or 4.x lists)."""
    layers = getattr(cache, "layers", None)
    if layers is not None:
        return [(layer.keys, layer.values) for layer in layers]
    return list(zip(cache.key_cache, cache.value_cache, strict=True))


def make_cache(kv: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> Any:
    """A fresh ``DynamicCache`` holding these per-layer keys and values."""
    cache = DynamicCache()
    for layer, (keys, values) in enumerate(kv):
        cache.update(keys, values, layer)
    return cache


class Verdict:
    """Scores a task against skills with the full frozen LM (see the module doc).

    Attributes:
        model_id: names the weights.
        tokenizer: the model's tokenizer.
        answers: the ids pooled as yes / no.
        cache: the skill-prefix LRU.
        batch_size: skills per forward pass.
        device: where the model runs.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: PreTrainedTokenizerBase,
        model_id: str,
        *,
        cache_skills: int = DEFAULT_CACHE_SKILLS,
        batch_size: int = DEFAULT_BATCH,
        answers: AnswerTokens | None = None,
        device: str | None = None,
    ) -> None:
        """Wrap a loaded causal LM (see :meth:`load`; tests pass a tiny random one).

        Args:
            model: a transformers causal LM with its LM head.
            tokenizer: its tokenizer (its chat template, if any, frames the prompt).
            model_id: what :attr:`model_id` reports.
            cache_skills: skill prefixes kept in the LRU.
            batch_size: skills per forward pass.
            answers: yes / no ids (default :func:`answer_tokens`).
            device: ``"cpu"`` / ``"cuda"``; default cuda when available.
        """
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.model_id = model_id
        self.answers = answers or answer_tokens(tokenizer)
        self.cache = SkillCache(cache_skills)
        self.batch_size = max(1, batch_size)
        self._head, self._tail = _template_pieces(tokenizer)
        self._question = _ids(tokenizer, "\n\n" + QUESTION)
        self._label = _ids(tokenizer, TASK_LABEL)
        self._skill_label = _ids(tokenizer, SKILL_LABEL)
        params = inspect.signature(model.forward).parameters
        # transformers 5 renamed the ``past_key_values`` argument to ``cache``
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self._keep_arg = "logits_to_keep" if "logits_to_keep" in params else None
        self._pad = int(tokenizer.pad_token_id or tokenizer.eos_token_id or 0)

    @classmethod
    def load(
        cls,
        path_or_gguf: str | Path | None = None,
        *,
        cache_dir: Path | None = None,
        cache_skills: int = DEFAULT_CACHE_SKILLS,
        device: str | None = None,
    ) -> Verdict:
        """Load the full causal LM (default SmolLM2-135M-Instruct) and wrap it."""
        model, tokenizer, model_id = load_causal_lm(path_or_gguf, cache_dir=cache_dir)
        return cls(model, tokenizer, model_id, cache_skills=cache_skills, device=device)

    def prefix_ids(self, skill_text: str) -> tuple[int, ...]:
        """Template head, ``Skill: <text>`` (truncated) and the task label."""
        text = _ids(self.tokenizer, skill_text.strip(), SKILL_TOKENS)
        return (*self._head, *self._skill_label, *text, *self._label)

    def task_ids(self, task: str) -> list[int]:
        """The task's ids as resumed after the task label (truncated)."""
        return _ids(self.tokenizer, " " + task.strip(), TASK_TOKENS)

    def score(self, task: str, skill_texts: Sequence[str], *, reuse: bool = True) -> VerdictScores:
        """Likelihood and judgment of ``task`` for each skill text.

        Args:
            task: the user's request.
            skill_texts: the shortlisted skills' texts (``maitred.native.data.skill_text``).
            reuse: resume cached skill prefixes (``False`` recomputes them: the cost baseline).

        Raises:
            ConfigError: the task has no tokens.
        """
        task_ids = self.task_ids(task)
        if not task_ids:
            raise ConfigError("the verdict needs a task with at least one token")
        n = len(skill_texts)
        likelihood, judgment = np.zeros(n, np.float32), np.zeros(n, np.float32)
        if reuse:
            prefixes = self._prefixes(skill_texts)
        else:
            prefixes = [_Prefix(self.prefix_ids(t), ()) for t in skill_texts]
        for start in range(0, n, self.batch_size):
            batch = prefixes[start : start + self.batch_size]
            logp = self._suffix_logp(batch, task_ids, reuse=reuse)
            lik, jud = self._read(logp, task_ids)
            likelihood[start : start + len(batch)] = lik
            judgment[start : start + len(batch)] = jud
        return VerdictScores(likelihood, judgment)

    def _prefixes(self, skill_texts: Sequence[str]) -> list[_Prefix]:
        """Each skill's cached prefix, computing (in batches) and caching the missing ones."""
        found: dict[str, _Prefix] = {}
        missing: list[str] = []
        for text in dict.fromkeys(skill_texts):
            entry = self.cache.get(text)
            if entry is None:
                missing.append(text)
            else:
                found[text] = entry
        for start in range(0, len(missing), self.batch_size):
            chunk = missing[start : start + self.batch_size]
            for text, entry in zip(
                chunk, self._encode([self.prefix_ids(t) for t in chunk]), strict=True
            ):
                found[text] = entry
                self.cache.put(text, entry)
        return [found[t] for t in skill_texts]

    @torch.inference_mode()
    def _encode(self, prefixes: Sequence[tuple[int, ...]]) -> list[_Prefix]:
        """Run each prefix but its last token (right-padded batch) and keep its cache."""
        heads = [p[:-1] for p in prefixes]
        width = max(len(h) for h in heads)
        ids = torch.full((len(heads), width), self._pad, dtype=torch.long)
        mask = torch.zeros((len(heads), width), dtype=torch.long)
        for row, head in enumerate(heads):
            ids[row, : len(head)] = torch.tensor(head)
            mask[row, : len(head)] = 1
        kwargs: dict[str, Any] = {self._keep_arg: 1} if self._keep_arg else {}
        out = self.model(
            input_ids=ids.to(self.device),
            attention_mask=mask.to(self.device),
            use_cache=True,
            **kwargs,
        )
        cache = getattr(out, "cache", None) or out.past_key_values
        kv = layer_kv(cache)
        return [
            _Prefix(
                tuple(prefix),
                tuple(
                    (
                        k[row : row + 1, :, : len(head)].clone(),
                        v[row : row + 1, :, : len(head)].clone(),
                    )
                    for k, v in kv
                ),
            )
            for row, (prefix, head) in enumerate(zip(prefixes, heads, strict=True))
        ]

    @torch.inference_mode()
    def _suffix_logp(
        self, batch: Sequence[_Prefix], task_ids: list[int], *, reuse: bool
    ) -> torch.Tensor:
        """Log-probabilities ``[B, L, V]`` at the resumed positions of each row.

        Row b holds its prefix but the last token (from its cache, or recomputed), padding up to
        the longest such head, then ``[last prefix token] + task + question + tail`` (length L,
        the same for every row) at positions continuing its own prefix.
        """
        heads = [len(p.ids) - 1 for p in batch]
        width = max(heads)
        rest = [*task_ids, *self._question, *self._tail]
        length = 1 + len(rest)
        size = len(batch)
        suffix = torch.tensor([[p.ids[-1], *rest] for p in batch], dtype=torch.long)
        mask = torch.zeros((size, width + length), dtype=torch.long)
        positions = torch.zeros((size, length), dtype=torch.long)
        for row, head in enumerate(heads):
            mask[row, :head] = 1
            positions[row] = torch.arange(head, head + length)
        mask[:, width:] = 1
        if reuse:
            kv = []
            for layer in range(len(batch[0].kv)):
                keys = [_pad_seq(p.kv[layer][0], width) for p in batch]
                values = [_pad_seq(p.kv[layer][1], width) for p in batch]
                kv.append((torch.cat(keys).to(self.device), torch.cat(values).to(self.device)))
            out = self.model(
                input_ids=suffix.to(self.device),
                attention_mask=mask.to(self.device),
                position_ids=positions.to(self.device),
                use_cache=True,
                **{self._cache_arg: make_cache(kv)},
            )
        else:
            ids = torch.full((size, width), self._pad, dtype=torch.long)
            for row, prefix in enumerate(batch):
                ids[row, : heads[row]] = torch.tensor(prefix.ids[:-1])
            head_pos = torch.arange(width).expand(size, width)
            kwargs: dict[str, Any] = {self._keep_arg: length} if self._keep_arg else {}
            out = self.model(
                input_ids=torch.cat([ids, suffix], dim=1).to(self.device),
                attention_mask=mask.to(self.device),
                position_ids=torch.cat([head_pos, positions], dim=1).to(self.device),
                use_cache=False,
                **kwargs,
            )
        logits = out.logits[:, -length:, :].float()
        return torch.log_softmax(logits, dim=-1)

    def _read(self, logp: torch.Tensor, task_ids: list[int]) -> tuple[F32, F32]:
        """Mean task log-likelihood and yes/no log-odds from resumed log-probabilities."""
        n_task = len(task_ids)
        target = torch.tensor(task_ids, device=logp.device)
        picked = logp[:, :n_task, :].gather(2, target.expand(len(logp), n_task).unsqueeze(-1))
        likelihood = picked.squeeze(-1).mean(dim=1)
        last = logp[:, -1, :]
        yes = torch.logsumexp(last[:, list(self.answers.yes)], dim=-1)
        no = torch.logsumexp(last[:, list(self.answers.no)], dim=-1)
        return (
            likelihood.cpu().numpy().astype(np.float32),
            (yes - no).cpu().numpy().astype(np.float32),
        )


def _pad_seq(tensor: torch.Tensor, width: int) -> torch.Tensor:
    """Right-pad a ``[1, heads, T, dim]`` cache tensor with zeros to ``T = width``."""
    missing = width - tensor.shape[2]
    if missing == 0:
        return tensor
    pad = tensor.new_zeros((*tensor.shape[:2], missing, tensor.shape[3]))
    return torch.cat([tensor, pad], dim=2)
