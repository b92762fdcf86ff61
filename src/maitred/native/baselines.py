"""Two baselines on the same frozen backbone as the glance and verdict.

``native-rerank`` (:class:`RerankRecaller`): retrieve-and-rerank. maitred's ``dense`` recaller
shortlists the top :data:`~maitred.native.gavel.DEFAULT_SHORTLIST` skills and the verdict
re-scores them: likelihood alone by default (:data:`DEFAULT_RERANK_WEIGHTS`), or judgment and
likelihood fused with weights calibrated on validation queries (:func:`calibrate_rerank`). The
shortlist always ranks above the rest, which keep dense's order.

``native-progressive`` (:class:`ProgressiveRecaller`): progressive disclosure, as agent
harnesses do it. Every skill's name and the first sentence of its description are listed in the
system prompt; the user turn holds the task; the model names one skill. Instead of sampling, each
skill's name is scored as the assistant's whole answer -- the sum of the log-probabilities of its
tokens and of the end-of-turn token that closes it (so a name is not rewarded for being the
prefix of a longer one) -- giving a full ranking. The menu's key/value cache is computed once and
shared by every task; per task, the task is run once after it and then all names are scored in
one packed pass (each name attends to the prompt and to its own earlier tokens only, through a
4D additive mask, at positions continuing the prompt).

The menu must fit the model's context (8,192 tokens for SmolLM2) with room for the task and the
longest name: descriptions are cut further (halved until they fit, down to names alone) with a
warning. :func:`menu_token_count` counts the menu's tokens -- the context a progressive-disclosure
menu costs on *every* call of a session, which the cost benchmark sets against the verdict.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import torch
from numpy.typing import NDArray
from transformers import PreTrainedTokenizerBase

from maitred.errors import ConfigError
from maitred.native import backbone as backbone_module
from maitred.native.backbone import Progress
from maitred.native.data import skill_text
from maitred.native.gavel import (
    DEFAULT_SHORTLIST,
    EXPERTS,
    NativeRecaller,
    build_native,
    extra_experts,
    resolve_weights,
    ruling_weights_path,
)
from maitred.native.ruling import RulingWeights, calibrate, fuse, save_weights
from maitred.native.verdict import TASK_TOKENS, Verdict, layer_kv, make_cache
from maitred.recall.base import Candidate
from maitred.recall.dense import DenseRecaller, Embedder
from maitred.recall.evaluate import Query
from maitred.recall.fields import truncate
from maitred.recall.store import IndexStore
from maitred.skills.model import Catalog

logger = logging.getLogger(__name__)

F32 = NDArray[np.float32]

DEFAULT_RERANK_WEIGHTS: Final = {"likelihood": 1.0}
"""The verdict's likelihood alone, until calibrated. Not the judgment: on SmolLM2-135M the
yes/no log-odds rank MetaTool's dense top-10 below chance (Hit@1 0.03 on 120 held-out-tool
queries, against 0.58 for the likelihood; ``benchmarks/native_verdict.py``)."""

MENU_INTRO: Final = (
    "You can use exactly one of the tools below. Reply with the name of the tool that best "
    "fits the user's task, and nothing else.\n\nTools:\n"
)

DESCRIPTION_CHARS: Final = 160
"""Characters of a description's first sentence shown in the menu (before any cut to fit)."""

NAME_CHUNK: Final = 512
"""Packed name tokens per forward pass (bounds the 4D mask and the logits)."""

BOUND_CHUNK: Final = 16
"""Names scored per step of :meth:`ProgressiveRecaller.rank`'s bounded search."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n")


# --------------------------------------------------------------------------- rerank


class RerankRecaller:
    """Dense shortlist, re-scored by the verdict.

    Attributes:
        name: ``"native-rerank"``.
        catalog: the catalog it ranks.
        dense: shortlists.
        verdict: re-scores the shortlist.
        weights: over ``"judgment"`` and ``"likelihood"``.
        shortlist: skills re-scored per task.
    """

    name = "native-rerank"

    def __init__(
        self,
        dense: DenseRecaller,
        verdict: Verdict,
        weights: RulingWeights,
        *,
        shortlist: int = DEFAULT_SHORTLIST,
    ) -> None:
        kept = {k: w for k, w in weights.weights.items() if k in ("judgment", "likelihood") and w}
        if not kept:
            raise ConfigError(f"rerank weights {dict(weights.weights)} weigh no verdict signal")
        self.catalog = dense.catalog
        self.dense = dense
        self.verdict = verdict
        self.weights = weights
        self.shortlist = shortlist
        self._fused = kept
        self._texts = {s.name: skill_text(s) for s in self.catalog}

    def experts(self, text: str) -> tuple[list[Candidate], dict[str, F32]]:
        """Dense's shortlist and the verdict's scores over it (in the shortlist's order)."""
        listed = self.dense.rank(text, self.shortlist)
        read = self.verdict.score(text, [self._texts[c.name] for c in listed])
        return listed, {"likelihood": read.likelihood, "judgment": read.judgment}

    def rank(self, text: str, k: int) -> list[Candidate]:
        """The shortlist re-scored, then dense's order beyond it (empty for a blank text)."""
        if not text.strip():
            return []
        listed, experts = self.experts(text)
        if not listed:
            return []
        fused = fuse(experts, self._fused)
        out: list[Candidate] = []
        for i in np.argsort(-fused, kind="stable"):
            components = {
                **listed[i].components,
                **{name: float(v[i]) for name, v in experts.items()},
            }
            out.append(Candidate(listed[i].name, len(out) + 1, float(fused[i]), components))
        if k > len(out):
            rest = self.dense.rank(text, k)[len(listed) :]
            out += [
                Candidate(c.name, len(out) + j, c.score, c.components)
                for j, c in enumerate(rest, start=1)
            ]
        return out[:k]


def calibrate_rerank(
    rerank: RerankRecaller, queries: Sequence[Query], gold: Sequence[set[int]]
) -> RulingWeights:
    """Weights of judgment and likelihood over the dense shortlist, by validation MRR.

    Golds outside the shortlist add nothing whatever the weights, so they are left out of the
    search (the reported MRR counts them as misses).
    """
    index = {name: i for i, name in enumerate(rerank.catalog.names)}
    vectors, inside = [], []
    for query, g in zip(queries, gold, strict=True):
        listed, experts = rerank.experts(query.text)
        vectors.append(experts)
        inside.append({j for j, c in enumerate(listed) if index[c.name] in g})
    weights, val_mrr = calibrate(vectors, inside)
    return RulingWeights(
        "native-rerank",
        weights,
        rerank.shortlist,
        rerank.verdict.model_id,
        val_mrr=round(val_mrr, 4),
        n_queries=len(vectors),
        meta={"experts": ["judgment", "likelihood"], "shortlist_from": "dense"},
    )


def build_rerank(
    catalog: Catalog,
    *,
    verdict: Verdict | None = None,
    weights_path: Path | None = None,
    store: IndexStore | None = None,
    embedder: Embedder | None = None,
    shortlist: int = DEFAULT_SHORTLIST,
    progress: Progress | None = None,
) -> RerankRecaller:
    """Build ``native-rerank``: maitred's dense recaller and the verdict (default SmolLM2),
    with calibrated weights when there are some for this backbone (else judgment alone)."""
    verdict = verdict or Verdict(*backbone_module.load_causal_lm())
    dense, _ = extra_experts(catalog, store, None, embedder, progress)
    weights = resolve_weights(
        "native-rerank",
        DEFAULT_RERANK_WEIGHTS,
        verdict.model_id,
        path=weights_path,
        shortlist=shortlist,
    )
    return RerankRecaller(dense, verdict, weights, shortlist=shortlist)


# --------------------------------------------------------------------------- progressive


def first_sentence(text: str, chars: int) -> str:
    """The first sentence of ``text``, cut at ``chars`` on a word boundary (0: nothing)."""
    if chars <= 0:
        return ""
    head = _SENTENCE_END.split(text.strip(), maxsplit=1)[0]
    return truncate(head.strip(), chars)


def menu_text(catalog: Catalog, description_chars: int = DESCRIPTION_CHARS) -> str:
    """The system prompt of progressive disclosure: one ``- name: description`` line a skill."""
    lines = []
    for skill in catalog:
        description = first_sentence(skill.description, description_chars)
        lines.append(f"- {skill.name}: {description}" if description else f"- {skill.name}")
    return MENU_INTRO + "\n".join(lines)


def menu_token_count(
    catalog: Catalog,
    tokenizer: PreTrainedTokenizerBase,
    *,
    description_chars: int = DESCRIPTION_CHARS,
) -> int:
    """Tokens of the menu: the context progressive disclosure adds to every call."""
    return len(
        tokenizer(menu_text(catalog, description_chars), add_special_tokens=False)["input_ids"]
    )


def _template(tokenizer: PreTrainedTokenizerBase, system: str) -> tuple[list[int], list[int], int]:
    """(ids before the task, ids after it through the assistant header, the end-of-answer id)."""
    marker = "\u2063MAITRED\u2063"

    def ids(text: str) -> list[int]:
        return [int(i) for i in tokenizer(text, add_special_tokens=False)["input_ids"]]

    end = tokenizer.eos_token_id
    if not getattr(tokenizer, "chat_template", None):
        bos = tokenizer.bos_token_id
        plain = ([] if bos is None else [int(bos)]) + ids(system + "\n\nTask: ")
        if end is None:
            raise ConfigError("the tokenizer has neither a chat template nor an end token")
        return plain, ids("\nTool:"), int(end)
    rendered = tokenizer.apply_chat_template(
        [{"role": "system", "content": system}, {"role": "user", "content": marker}],
        tokenize=False,
        add_generation_prompt=True,
    )
    answered = tokenizer.apply_chat_template(
        [{"role": "user", "content": "x"}, {"role": "assistant", "content": marker}],
        tokenize=False,
    )
    assert isinstance(rendered, str) and isinstance(answered, str)
    head, tail = rendered.split(marker, 1)
    after = ids(answered.split(marker, 1)[1])
    if after:
        end = after[0]
    if end is None:
        raise ConfigError("cannot tell how the chat template ends an answer")
    return ids(head), ids(tail), int(end)


class ProgressiveRecaller:
    """Progressive disclosure on the frozen LM: the menu in context, each name's likelihood.

    Attributes:
        name: ``"native-progressive"``.
        catalog: the catalog it ranks.
        model_id: names the weights.
        description_chars: characters of each description shown (after any cut to fit).
        menu_tokens: tokens of the menu text.
        prompt_tokens: tokens before the task (template, menu, user header).
    """

    name = "native-progressive"

    def __init__(
        self,
        catalog: Catalog,
        model: Any,
        tokenizer: PreTrainedTokenizerBase,
        model_id: str,
        *,
        description_chars: int = DESCRIPTION_CHARS,
        context: int | None = None,
        device: str | None = None,
    ) -> None:
        """Lay out the menu (cutting descriptions until it fits ``context``).

        Args:
            catalog: the skills listed.
            model, tokenizer, model_id: the full causal LM (see ``load_causal_lm``).
            description_chars: characters of each description's first sentence.
            context: the model's context (default ``max_position_embeddings``).
            device: ``"cpu"`` / ``"cuda"``; default cuda when available.

        Raises:
            ConfigError: even the names alone do not fit the context.
        """
        self.catalog = catalog
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.model_id = model_id
        window = int(context or model.config.max_position_embeddings)
        self._names = [
            [int(i) for i in tokenizer(s.name, add_special_tokens=False)["input_ids"]]
            for s in catalog
        ]
        if not all(self._names):
            raise ConfigError("a skill name has no tokens for this tokenizer")
        chars = description_chars
        while True:
            head, tail, end = _template(tokenizer, menu_text(catalog, chars))
            need = len(head) + TASK_TOKENS + len(tail) + max(len(n) for n in self._names) + 1
            if need <= window or chars == 0:
                break
            chars = chars // 2 if chars >= 40 else 0
        if need > window:
            raise ConfigError(
                f"the progressive menu of {len(catalog)} skills needs {need} tokens even without "
                f"descriptions, over the model's context of {window}; use a retrieval method"
            )
        if chars < description_chars:
            logger.warning(
                "the progressive menu of %d skills did not fit the %d-token context with "
                "%d-character descriptions; cut them to %d characters%s",
                len(catalog),
                window,
                description_chars,
                chars,
                " (names only)" if chars == 0 else "",
            )
        self.description_chars = chars
        self.menu_tokens = menu_token_count(catalog, tokenizer, description_chars=chars)
        self.prompt_tokens = len(head)
        self._head, self._tail, self._end = head, tail, end
        self._menu_kv: list[tuple[torch.Tensor, torch.Tensor]] | None = None
        params = inspect.signature(model.forward).parameters
        # transformers 5 renamed the ``past_key_values`` argument to ``cache``
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self._keep_last: dict[str, int] = (
            {"logits_to_keep": 1} if "logits_to_keep" in params else {}
        )

    def scores(self, text: str) -> F32:
        """Log-likelihood of each skill's name (and the end of the answer) as the reply."""
        first, kv = self._prompt(text)
        out = np.zeros(len(self._names), dtype=np.float32)
        for i, value in self._score_rows(range(len(self._names)), first, kv):
            out[i] = value
        return out

    def rank(self, text: str, k: int) -> list[Candidate]:
        """The ``k`` names the model most likely answers (empty for a blank text).

        Exact, without scoring every name: a name's log-likelihood is at most that of its first
        token (the rest only subtracts), and the first tokens' come free with the prompt. Names
        are scored in order of that bound, :data:`BOUND_CHUNK` at a time, until the next bound
        falls below the k-th best full score.
        """
        if not text.strip() or k < 1:
            return []
        first, kv = self._prompt(text)
        bounds = np.array([float(first[n[0]]) for n in self._names], dtype=np.float64)
        order = [int(i) for i in np.argsort(-bounds, kind="stable")]
        scored: dict[int, float] = {}
        at = 0
        while at < len(order):
            if len(scored) >= k and bounds[order[at]] < sorted(scored.values())[-k]:
                break
            chunk = order[at : at + BOUND_CHUNK]
            at += len(chunk)
            scored.update(self._score_rows(chunk, first, kv))
        best = sorted(scored, key=lambda i: (-scored[i], i))[:k]
        names = self.catalog.names
        return [
            Candidate(names[i], r, scored[i], {"progressive": scored[i]})
            for r, i in enumerate(best, start=1)
        ]

    def _prompt(self, text: str) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
        """The task after the menu: the answer's first-token log-probs and the cache."""
        task = self.tokenizer(text.strip(), add_special_tokens=False)["input_ids"]
        return self._after_task([*(int(i) for i in task[:TASK_TOKENS]), *self._tail])

    def _score_rows(
        self,
        rows: Iterable[int],
        first: torch.Tensor,
        kv: list[tuple[torch.Tensor, torch.Tensor]],
    ) -> list[tuple[int, float]]:
        """Full scores of the names ``rows``, packed :data:`NAME_CHUNK` tokens a pass."""
        out: list[tuple[int, float]] = []
        chunk: list[tuple[int, list[int]]] = []
        size = 0
        for i in rows:
            name = self._names[i]
            if chunk and size + len(name) > NAME_CHUNK:
                out += self._score_names(chunk, first, kv)
                chunk, size = [], 0
            chunk.append((i, name))
            size += len(name)
        if chunk:
            out += self._score_names(chunk, first, kv)
        return out

    @torch.inference_mode()
    def _menu(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The prompt head's key/value cache (computed on first use, then shared)."""
        if self._menu_kv is None:
            out = self.model(
                input_ids=torch.tensor([self._head], device=self.device),
                use_cache=True,
                **self._keep_last,
            )
            self._menu_kv = layer_kv(getattr(out, "cache", None) or out.past_key_values)
        return self._menu_kv

    @torch.inference_mode()
    def _after_task(
        self, ids: list[int]
    ) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
        """Run the task after the menu: log-probs of the answer's first token, and the cache."""
        out = self.model(
            input_ids=torch.tensor([ids], device=self.device),
            use_cache=True,
            **self._keep_last,
            **{self._cache_arg: make_cache(self._menu())},
        )
        cache = getattr(out, "cache", None) or out.past_key_values
        return torch.log_softmax(out.logits[0, -1].float(), dim=-1), layer_kv(cache)

    @torch.inference_mode()
    def _score_names(
        self,
        chunk: Sequence[tuple[int, list[int]]],
        first: torch.Tensor,
        kv: list[tuple[torch.Tensor, torch.Tensor]],
    ) -> list[tuple[int, float]]:
        """Score names packed in one row: each sees the prompt and its own earlier tokens."""
        past = kv[0][0].shape[2]
        ids = [t for _, name in chunk for t in name]
        size = len(ids)
        allowed = torch.zeros((size, past + size), dtype=torch.bool)
        allowed[:, :past] = True
        positions = torch.zeros(size, dtype=torch.long)
        at = 0
        for _, name in chunk:
            n = len(name)
            allowed[at : at + n, past + at : past + at + n] = torch.ones(n, n).tril().bool()
            positions[at : at + n] = torch.arange(past, past + n)
            at += n
        dtype = next(self.model.parameters()).dtype
        mask = torch.zeros(allowed.shape, dtype=dtype)
        mask.masked_fill_(~allowed, torch.finfo(dtype).min)
        out = self.model(
            input_ids=torch.tensor([ids], device=self.device),
            attention_mask=mask[None, None].to(self.device),
            position_ids=positions[None].to(self.device),
            use_cache=True,
            **{self._cache_arg: make_cache(kv)},
        )
        logp = torch.log_softmax(out.logits[0].float(), dim=-1)
        scored, at = [], 0
        for i, name in chunk:
            n = len(name)
            targets = torch.tensor([*name[1:], self._end], device=logp.device)
            rest = logp[at : at + n].gather(1, targets[:, None]).sum()
            scored.append((i, float(first[name[0]] + rest)))
            at += n
        return scored


def build_progressive(
    catalog: Catalog, *, model_path: str | Path | None = None, device: str | None = None
) -> ProgressiveRecaller:
    """Build ``native-progressive`` on the full LM (default SmolLM2-135M-Instruct)."""
    model, tokenizer, model_id = backbone_module.load_causal_lm(model_path)
    return ProgressiveRecaller(catalog, model, tokenizer, model_id, device=device)


def calibrate_ruling(
    catalog: Catalog,
    queries: Sequence[Query],
    *,
    native: NativeRecaller | None = None,
    rerank: RerankRecaller | None = None,
    path: Path | None = None,
    store: IndexStore | None = None,
    progress: Progress | None = None,
) -> list[RulingWeights]:
    """Calibrate the ``native`` and ``native-rerank`` weights on labelled validation queries
    and merge them into the weights file (what ``maitred native calibrate`` runs).

    Args:
        catalog: the skills (every gold must be one of them; others are skipped).
        queries: validation queries -- never the ones you report on.
        native: an already built ``native`` recaller (default :func:`build_native`).
        rerank: an already built :class:`~maitred.native.baselines.RerankRecaller` (default
            one sharing ``native``'s verdict and dense recaller).
        path: the weights file (default :func:`ruling_weights_path`).
        store: caches indexes when building recallers.
        progress: ``progress(done, total)`` over the queries.

    Returns:
        The two saved entries (``native``, then ``native-rerank``).

    Raises:
        ConfigError: no query has its gold skills in the catalog.
    """
    index = {name: i for i, name in enumerate(catalog.names)}
    usable = [q for q in queries if q.gold and all(g in index for g in q.gold)]
    if not usable:
        raise ConfigError("no validation query names a gold skill of this catalog")
    native = native or build_native(catalog, store=store)
    if rerank is None:
        assert native.dense is not None
        rerank = RerankRecaller(
            native.dense,
            native.verdict,
            RulingWeights("native-rerank", {"judgment": 1.0}, native.shortlist, ""),
            shortlist=native.shortlist,
        )
    gold = [{index[g] for g in q.gold} for q in usable]
    vectors = []
    for done, query in enumerate(usable, start=1):
        vectors.append(native.experts(query.text)[1])
        if progress is not None:
            progress(done, len(usable))
    names = [k for k in EXPERTS if k in vectors[0]]
    weights, val_mrr = calibrate([{k: v[k] for k in names} for v in vectors], gold)
    where = path or ruling_weights_path()
    entry = RulingWeights(
        "native",
        weights,
        native.shortlist,
        native.verdict.model_id,
        val_mrr=round(val_mrr, 4),
        n_queries=len(usable),
        meta={"experts": names},
    )
    save_weights(where, entry)
    second = calibrate_rerank(rerank, usable, gold)
    save_weights(where, second)
    logger.info("calibrated %s and %s on %d queries -> %s", entry, second, len(usable), where)
    return [entry, second]
