"""Token counting with tiktoken's ``o200k_base`` encoding, fully offline.

tiktoken fetches its BPE rank files from the network on first use, which these machines (and
many production hosts) cannot do. The same ranks ship inside the ``quicktok-v1`` wheel; this
module rebuilds tiktoken's rank table from them, **checks it against the sha256 that tiktoken
itself pins for o200k_base**, and builds a real ``tiktoken.Encoding``. A mismatch refuses to
count rather than count wrong.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from functools import lru_cache
from typing import Any

from maitred.errors import ConfigError

ENCODING = "o200k_base"
#: the sha256 tiktoken pins for ``o200k_base.tiktoken`` (tiktoken_ext/openai_public.py)
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
_SPECIAL = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}
# o200k_base's pre-tokenisation pattern, as tiktoken defines it
_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_lock = threading.Lock()


def _ranks() -> dict[bytes, int]:
    try:
        import quicktok
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise ConfigError(
            "token counting needs the o200k_base ranks shipped in `quicktok-v1`: "
            "`pip install quicktok-v1`"
        ) from exc
    enc = quicktok.get_encoding(ENCODING)
    ranks: dict[bytes, int] = {}
    lines: list[bytes] = []
    for rank in range(enc.n_vocab):
        if enc.is_special_token(rank):
            continue
        try:
            token = enc.decode_single_token_bytes(rank)
        except Exception:  # gaps in the id space
            continue
        ranks[token] = rank
        lines.append(base64.b64encode(token) + b" " + str(rank).encode())
    digest = hashlib.sha256(b"\n".join(lines) + b"\n").hexdigest()
    if digest != O200K_SHA256:
        raise ConfigError(
            f"the o200k_base ranks from quicktok hash to {digest}, not tiktoken's pinned "
            f"{O200K_SHA256}; refusing to count tokens with a different vocabulary "
            "(reinstall quicktok-v1)"
        )
    return ranks


@lru_cache(maxsize=1)
def encoding() -> Any:
    """The verified ``tiktoken.Encoding`` for o200k_base (built once per process)."""
    import tiktoken

    with _lock:
        return tiktoken.Encoding(
            name=ENCODING, pat_str=_PATTERN, mergeable_ranks=_ranks(), special_tokens=_SPECIAL
        )


def count_tokens(text: str) -> int:
    """Tokens ``text`` costs under o200k_base (special tokens counted as plain text)."""
    return len(encoding().encode_ordinary(text))
