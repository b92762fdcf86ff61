"""Training the two maps: contrastive, in-batch negatives, on cached backbone states.

The backbone is frozen and its states are cached (:mod:`maitred.native.states`), so training
touches only ``Wq`` and ``Wk`` (``2 * d * H`` numbers). A step draws a batch of training queries
with *distinct* gold skills; each query's positive is its gold skill's token bank and its
negatives are the other batch members' skills (in-batch negatives). The score is the span
average of token max-sims (the differentiable form of the glance vote, see
:mod:`maitred.native.glance`), scaled by a fixed logit scale (1/temperature), under cross-entropy.

**Recipe, and why it differs from the seed's.** The paper trains random-init maps at lr 1e-3 for
24k steps on SkillRet (thousands of skills). With MetaTool's ~140 training tools that recipe
memorises the training tools, which then become "hubs" that attract queries about unseen tools
(the issue's prototype fell to Hit@1 0.16). So: both maps start from the top principal
components (:meth:`GlanceMaps.pca`; step 0 is plain cosine, a strong zero-shot start), AdamW in
fp32 at lr 1e-4 with weight decay 0.01, a few hundred steps, logit scale 20, and the step count
is checked on validation tools (never the test tools).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch
from numpy.typing import NDArray

from maitred.errors import ConfigError
from maitred.native.glance import GlanceMaps

F32 = NDArray[np.float32]


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of :func:`train_maps` (defaults: the recipe above)."""

    steps: int = 300
    lr: float = 1e-4
    weight_decay: float = 0.01
    batch: int = 32
    logit_scale: float = 20.0
    seed: int = 0


def _pad(arrays: Sequence[F32], mean: F32, std: F32) -> tuple[torch.Tensor, torch.Tensor]:
    """Standardised, zero-padded ``[B, L, H]`` states and their ``[B, L]`` mask."""
    width = max(len(a) for a in arrays)
    out = np.zeros((len(arrays), width, len(mean)), np.float32)
    mask = np.zeros((len(arrays), width), np.float32)
    for i, a in enumerate(arrays):
        out[i, : len(a)] = (a - mean) / std
        mask[i, : len(a)] = 1.0
    return torch.from_numpy(out), torch.from_numpy(mask)


def pair_scores(
    q: torch.Tensor, q_mask: torch.Tensor, k: torch.Tensor, k_mask: torch.Tensor
) -> torch.Tensor:
    """``[Bq, Bk]`` span-averaged max-sim between unit queries and unit keys (masked)."""
    sims = torch.einsum("ild,jmd->ijlm", q, k)
    sims = sims.masked_fill(k_mask[None, :, None, :] == 0, -2.0)
    best = sims.max(dim=3).values  # [Bq, Bk, Lq]
    return (best * q_mask[:, None, :]).sum(dim=2) / q_mask.sum(dim=1, keepdim=True)


def _batch(gold: Sequence[int], size: int, rng: random.Random) -> list[int]:
    """Query indices with distinct gold skills (so every other member is a true negative)."""
    order = list(range(len(gold)))
    rng.shuffle(order)
    picked: list[int] = []
    seen: set[int] = set()
    for i in order:
        if gold[i] not in seen:
            seen.add(gold[i])
            picked.append(i)
            if len(picked) == size:
                break
    return picked


def train_maps(
    init: GlanceMaps,
    query_states: Sequence[F32],
    query_gold: Sequence[int],
    skill_states: Sequence[F32],
    config: TrainConfig = TrainConfig(),
    *,
    log: Callable[[int, float], None] | None = None,
) -> GlanceMaps:
    """Train both maps from ``init`` (standardisation kept), no gradient into the backbone.

    Args:
        init: starting maps (usually :meth:`GlanceMaps.pca`).
        query_states: per training query, its ``[T, H]`` token states.
        query_gold: per query, the index of its gold skill in ``skill_states``.
        skill_states: per training skill, its ``[T, H]`` token states.
        config: the recipe.
        log: ``log(step, loss)`` after every step.

    Returns:
        New maps with the trained weights and the config in ``meta``.

    Raises:
        ConfigError: fewer than two distinct gold skills (no negatives).
    """
    if len(set(query_gold)) < 2:
        raise ConfigError("training needs queries for at least two distinct skills")
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    wq = torch.nn.Parameter(torch.from_numpy(init.w_query.copy()))
    wk = torch.nn.Parameter(torch.from_numpy(init.w_key.copy()))
    opt = torch.optim.AdamW([wq, wk], lr=config.lr, weight_decay=config.weight_decay)
    for step in range(1, config.steps + 1):
        rows = _batch(query_gold, config.batch, rng)
        skills = [query_gold[i] for i in rows]
        q, q_mask = _pad([query_states[i] for i in rows], init.mean, init.std)
        k, k_mask = _pad([skill_states[j] for j in skills], init.mean, init.std)
        qv = torch.nn.functional.normalize(q @ wq.T, dim=-1)
        kv = torch.nn.functional.normalize(k @ wk.T, dim=-1)
        logits = config.logit_scale * pair_scores(qv, q_mask, kv, k_mask)
        loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(rows)))
        opt.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
        if log is not None:
            log(step, float(loss.detach()))
    meta = {
        **init.meta,
        "init": init.meta.get("init", "given"),
        "train": asdict(config),
        "n_queries": len(query_states),
        "n_skills": len(set(query_gold)),
    }
    return GlanceMaps(
        init.mean,
        init.std,
        wq.detach().numpy().copy(),
        wk.detach().numpy().copy(),
        init.backbone_id,
        init.layer,
        meta,
    )
