from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM

from maitred.errors import ConfigError
from maitred.native import backbone as backbone_module
from maitred.native.backbone import Backbone, _capture, file_sha256, load_causal_lm

from .conftest import tiny_model, tiny_tokenizer


def test_states_are_per_text_token_at_the_layer(tiny_backbone: Backbone) -> None:
    texts = ["check weather tomorrow", "", "pay my invoice please"]
    states = tiny_backbone.states(texts)
    assert [s.shape for s in states] == [(3, 32), (0, 32), (4, 32)]
    assert all(s.dtype == np.float32 for s in states)


def test_template_prefix_is_dropped_and_its_cache_reused(tiny_backbone: Backbone) -> None:
    prefix = tiny_backbone._wrap.prefix
    assert len(prefix) > 2  # "<s> system be helpful </s> <s> user"
    text = "find the latest research paper"
    batched = tiny_backbone.states([text, "rain", text])
    ids = list(prefix) + tiny_backbone.token_ids(text)
    cap: dict[int, torch.Tensor] = {}
    hook = tiny_backbone._body.layers[2].register_forward_hook(_capture(cap, 3))
    with torch.inference_mode():
        tiny_backbone._body(input_ids=torch.tensor([ids]))
    hook.remove()
    reference = cap[3][0, len(prefix) :].numpy()
    np.testing.assert_allclose(batched[0], reference, atol=1e-4)
    np.testing.assert_allclose(batched[2], reference, atol=1e-4)  # padding changes nothing


def test_several_layers_and_bounds(tiny_backbone: Backbone) -> None:
    got = tiny_backbone.states_at(["book a flight"], (1, 4))
    assert not np.allclose(got[1][0], got[4][0])
    with pytest.raises(ConfigError):
        Backbone(tiny_model(), tiny_tokenizer(), "x", layer=9)


def test_blocks_above_the_layer_are_dropped() -> None:
    backbone = Backbone(tiny_model(), tiny_tokenizer(), "x", layer=2)
    assert len(backbone._body.layers) == 2
    with pytest.raises(ConfigError, match="keep_layers"):
        backbone.states_at(["rain"], (3,))


def test_load_from_a_model_folder(tmp_path: Path) -> None:
    tiny_model().save_pretrained(tmp_path)
    tiny_tokenizer().save_pretrained(tmp_path)
    backbone = Backbone.load(tmp_path, layer=2)
    assert backbone.backbone_id == tmp_path.name
    assert backbone.states(["stock price"])[0].shape == (2, 32)


class _SlowGguf:
    """Stands in for transformers' auto classes: a ``gguf_file=`` load is slow, and every load
    returns a tiny object without touching transformers' loader, whose process-wide
    initialisation switches are not thread-safe (two loads at once in threads left them off
    for the rest of the test session)."""

    def __init__(self, make: Any, calls: list[str]) -> None:
        self.make, self.calls = make, calls

    def from_pretrained(self, *args: Any, **kwargs: Any) -> Any:
        if "gguf_file" not in kwargs:
            self.calls.append("cached")
            return self.make()
        self.calls.append("converted")
        time.sleep(0.2)  # both loaders are converting at the same time
        return self.make()


def test_concurrent_loads_of_one_gguf_convert_once_and_leave_no_temporaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: two pytest workers converting the same GGUF at once crashed in `rename`."""
    gguf = tmp_path / "Tiny.Q4.gguf"
    gguf.write_bytes(b"not really a gguf file")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / f"{gguf.stem}-deadbeef.tmp123").mkdir()  # a crashed writer of another entry
    calls: list[str] = []
    monkeypatch.setattr(backbone_module, "AutoTokenizer", _SlowGguf(tiny_tokenizer, calls))
    monkeypatch.setattr(backbone_module, "AutoModelForCausalLM", _SlowGguf(tiny_model, calls))
    start = threading.Barrier(2)

    def load() -> str:
        start.wait()
        return load_causal_lm(gguf, cache_dir=cache)[2]

    with ThreadPoolExecutor(2) as pool:
        ids = list(pool.map(lambda _: load(), range(2)))
    assert ids[0] == ids[1]
    # tokenizer + model converted by one loader only; both then read the cache
    assert sorted(calls) == ["cached"] * 4 + ["converted"] * 2
    digest = file_sha256(gguf)[:16]
    folder = cache / f"{gguf.stem}-{digest}-v2"
    assert (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()
    entries = sorted(p.name for p in cache.iterdir() if p.is_dir())
    assert entries == sorted([f"{gguf.stem}-{digest}-v2", f"{gguf.stem}-deadbeef.tmp123"])


def test_a_failed_conversion_leaves_no_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gguf = tmp_path / "Broken.gguf"
    gguf.write_bytes(b"broken")
    cache = tmp_path / "cache"
    stale = cache / f".{gguf.stem}-{file_sha256(gguf)[:16]}-v2.tmp-old"
    stale.mkdir(parents=True)  # what a killed writer of this very entry left

    def broken(*_a: Any, **_k: Any) -> None:
        raise OSError("truncated file")

    monkeypatch.setattr(backbone_module, "_convert_gguf", broken)
    with pytest.raises(OSError, match="truncated"):
        load_causal_lm(gguf, cache_dir=cache)
    assert [p.name for p in cache.iterdir() if p.is_dir()] == []


def test_concurrent_saves_of_one_states_file_all_succeed(tmp_path: Path) -> None:
    """Regression: writers of one states cache shared one temporary file name."""
    from maitred.native.states import load_states, save_states

    path = tmp_path / "bank" / "states.npz"
    arrays = [np.ones((3, 4), np.float32) * i for i in range(40)]
    keys = [f"skill-{i}" for i in range(40)]
    start = threading.Barrier(4)

    def save(_: int) -> None:
        start.wait()
        for _ in range(5):
            save_states(path, arrays, backbone_id="tiny@test", layer=2, keys=keys)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(save, range(4)))
    got_keys, got = load_states(path, backbone_id="tiny@test", layer=2)
    assert got_keys == keys and np.allclose(got[7], 7)
    assert [p.name for p in path.parent.iterdir()] == ["states.npz"]


def test_converted_weights_keep_the_tied_input_embedding(tmp_path: Path) -> None:
    """Regression: the cache kept only `lm_head.weight` of SmolLM2's tied pair; loading it
    reported `model.embed_tokens.weight` missing and initialised it, and a full test run
    once scored the verdict with random embeddings."""
    config = tiny_model().config
    config.tie_word_embeddings = True
    torch.manual_seed(1)
    tied = type(tiny_model())(config).eval()
    tied.tie_weights()
    backbone_module._save_plain(tied, tmp_path)
    from safetensors import safe_open

    with safe_open(str(tmp_path / "model.safetensors"), "pt") as stored:
        assert "model.embed_tokens.weight" in set(stored.keys())
    loaded, info = AutoModelForCausalLM.from_pretrained(str(tmp_path), output_loading_info=True)
    assert not info["missing_keys"]
    assert torch.equal(loaded.model.embed_tokens.weight, tied.model.embed_tokens.weight)
    assert torch.equal(loaded.lm_head.weight, tied.model.embed_tokens.weight)
