from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from maitred.errors import ConfigError
from maitred.native.backbone import Backbone, _capture

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
