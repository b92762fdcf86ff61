"""A tiny randomly initialised Llama with an in-memory tokenizer and chat template (offline)."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="needs the native extra: pip install 'maitred[native]'")
transformers = pytest.importorskip(
    "transformers", reason="needs the native extra: pip install 'maitred[native]'"
)

from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402

from maitred.native.backbone import Backbone  # noqa: E402

WORDS = [
    "the",
    "a",
    "to",
    "of",
    "and",
    "for",
    "my",
    "please",
    "can",
    "you",
    "check",
    "weather",
    "rain",
    "sun",
    "tomorrow",
    "city",
    "paper",
    "research",
    "find",
    "latest",
    "invoice",
    "pay",
    "refund",
    "money",
    "domain",
    "dns",
    "site",
    "publish",
    "email",
    "mailbox",
    "password",
    "reset",
    "stock",
    "price",
    "market",
    "news",
    "flight",
    "hotel",
    "book",
    "travel",
    "recipe",
    "food",
    "cook",
    "song",
    "music",
    "play",
    "yes",
    "no",
    "is",
    "this",
    "skill",
    "task",
    "relevant",
    "answer",
    "assistant",
    ":",
    "?",
]
TEMPLATE = (
    "{% for m in messages %}<s>system be helpful</s><s>{{ m['role'] }} "
    "{{ m['content'] }}</s>{% endfor %}"
)


def tiny_tokenizer() -> Any:
    """A word-level tokenizer over a small vocabulary, with a chat template."""
    vocab = {
        w: i
        for i, w in enumerate(
            ["<unk>", "<pad>", "<s>", "</s>", "system", "be", "helpful", "user", *WORDS]
        )
    }
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
    )
    fast.chat_template = TEMPLATE
    return fast


def tiny_model(layers: int = 4) -> Any:
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=80,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
    )
    return transformers.LlamaForCausalLM(config).eval()


@pytest.fixture
def tiny_backbone() -> Backbone:
    """Layer 3 of 4, all blocks kept."""
    return Backbone(
        tiny_model(), tiny_tokenizer(), "tiny@test", layer=3, keep_layers=4, device="cpu"
    )
