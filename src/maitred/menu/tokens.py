"""Token counting with tiktoken's ``o200k_base`` encoding, fully offline.

tiktoken fetches its BPE rank files from the network on first use, which these machines (and
many production hosts) cannot do. The same ranks ship inside the ``quicktok-v1`` wheel; this
module rebuilds tiktoken's rank table from them, **checks it against the sha256 that tiktoken
itself pins for o200k_base**, and builds a real ``tiktoken.Encoding``. A mismatch refuses to
count rather than count wrong.

Rebuilding the table costs about a second, most of a one-shot command's run time, so the
verified table is kept as tiktoken's own rank file under :func:`tokens_cache_dir` and checked
against the same pinned sha256 each time it is read.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import threading
from functools import lru_cache
from pathlib import Path
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
_RANK_FILE = f"{ENCODING}.tiktoken"


def tokens_cache_dir() -> Path:
    """Where the verified rank file is kept: ``$MAITRED_CACHE_DIR/tokens`` or
    ``~/.cache/maitred/tokens`` (shared by every project on the machine, like the native cache).
    """
    root = os.environ.get("MAITRED_CACHE_DIR")
    return Path(root) / "tokens" if root else Path.home() / ".cache" / "maitred" / "tokens"


def _rank_file_from_quicktok() -> bytes:
    """tiktoken's ``o200k_base.tiktoken`` file, rebuilt from quicktok's ranks (about 1 s)."""
    try:
        import quicktok
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise ConfigError(
            "token counting needs the o200k_base ranks shipped in `quicktok-v1`: "
            "`pip install quicktok-v1`"
        ) from exc
    enc = quicktok.get_encoding(ENCODING)
    lines: list[bytes] = []
    for rank in range(enc.n_vocab):
        if enc.is_special_token(rank):
            continue
        try:
            token = enc.decode_single_token_bytes(rank)
        except Exception:  # gaps in the id space
            continue
        lines.append(base64.b64encode(token) + b" " + str(rank).encode())
    data = b"\n".join(lines) + b"\n"
    digest = hashlib.sha256(data).hexdigest()
    if digest != O200K_SHA256:
        raise ConfigError(
            f"the o200k_base ranks from quicktok hash to {digest}, not tiktoken's pinned "
            f"{O200K_SHA256}; refusing to count tokens with a different vocabulary "
            "(reinstall quicktok-v1)"
        )
    return data


def _verified_rank_file(cache_dir: Path) -> bytes:
    """The rank file, from the cache when its sha256 is the pinned one, else rebuilt and cached.

    The hash is checked on every read (a few milliseconds), so a truncated or edited cache file
    is never used: it is rebuilt. A cache folder that cannot be written only costs the rebuild.
    """
    path = cache_dir / _RANK_FILE
    try:
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() == O200K_SHA256:
            return data
    except OSError:
        pass
    data = _rank_file_from_quicktok()
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{_RANK_FILE}.tmp-{os.getpid()}-{threading.get_ident()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)  # atomic: readers see the old file or the whole new one
    except OSError:
        pass
    return data


def _parse_ranks(data: bytes) -> dict[bytes, int]:
    """``base64(token) rank`` lines -> {token bytes: rank} (the file format tiktoken loads)."""
    parts = data.split()
    return dict(zip(map(binascii.a2b_base64, parts[0::2]), map(int, parts[1::2]), strict=True))


@lru_cache(maxsize=1)
def encoding() -> Any:
    """The verified ``tiktoken.Encoding`` for o200k_base (built once per process).

    Built on first use only (a route that offers nothing never pays for it), from the rank file
    cached under :func:`tokens_cache_dir` (about 0.3 s instead of 1.5 s).
    """
    import tiktoken

    with _lock:
        ranks = _parse_ranks(_verified_rank_file(tokens_cache_dir()))
        return tiktoken.Encoding(
            name=ENCODING, pat_str=_PATTERN, mergeable_ranks=ranks, special_tokens=_SPECIAL
        )


def count_tokens(text: str) -> int:
    """Tokens ``text`` costs under o200k_base (special tokens counted as plain text)."""
    return len(encoding().encode_ordinary(text))


_MEMO_FILE = f"{ENCODING}-{O200K_SHA256[:12]}-counts.txt"
_memo: dict[str, int] | None = None
_memo_lock = threading.Lock()


def count_tokens_memo(text: str) -> int:
    """:func:`count_tokens`, remembered across processes for texts counted before.

    Menu entries are the same texts run after run, so their counts are kept in a small file
    under :func:`tokens_cache_dir` (one ``<sha256 of the text> <count>`` line each, named by
    the vocabulary's pinned hash), and a one-shot command whose menu entries were all counted
    before never builds the encoder. The key is the text's own hash, so an entry that changes
    is counted afresh; a line cut short by a crash has no newline and is ignored.
    """
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    with _memo_lock:
        memo = _load_memo()
        if key in memo:
            return memo[key]
    count = count_tokens(text)
    with _memo_lock:
        memo[key] = count
        try:
            tokens_cache_dir().mkdir(parents=True, exist_ok=True)
            # one short write in append mode: concurrent writers never interleave inside a line
            with open(tokens_cache_dir() / _MEMO_FILE, "a", encoding="ascii") as handle:
                handle.write(f"{key} {count}\n")
        except OSError:
            pass
    return count


def _load_memo() -> dict[str, int]:
    """The remembered counts, read once per process (call under ``_memo_lock``)."""
    global _memo
    if _memo is None:
        _memo = {}
        try:
            text = (tokens_cache_dir() / _MEMO_FILE).read_text(encoding="ascii", errors="replace")
        except OSError:
            text = ""
        for line in text.splitlines(keepends=True):
            parts = line.split()
            whole = line.endswith("\n") and len(parts) == 2 and len(parts[0]) == 32
            if whole and parts[1].isdigit():
                _memo[parts[0]] = int(parts[1])
    return _memo
