"""o200k_base token counting: the verified rank table is cached, checked, and rebuilt if bad."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from maitred.errors import ConfigError
from maitred.menu import tokens

TEXT = "Connect a custom domain to the site: DNS records, SSL, and www redirects."


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty token cache and no encoder built yet in this process."""
    monkeypatch.setenv("MAITRED_CACHE_DIR", str(tmp_path))
    built = tokens.encoding  # a test may replace it; the cache to clear is this one's
    built.cache_clear()
    yield tmp_path / "tokens"
    built.cache_clear()


def _no_quicktok() -> bytes:
    raise AssertionError("the rank table was rebuilt instead of read from the cache")


def test_first_use_caches_the_pinned_rank_file_and_later_uses_skip_the_rebuild(
    fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: every one-shot command rebuilt the table from quicktok (about 1 s)."""
    first = tokens.count_tokens(TEXT)
    cached = fresh / "o200k_base.tiktoken"
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == tokens.O200K_SHA256
    assert [p.name for p in fresh.iterdir()] == [cached.name]  # no temporary file left
    tokens.encoding.cache_clear()  # as a new process would start
    monkeypatch.setattr(tokens, "_rank_file_from_quicktok", _no_quicktok)
    assert tokens.count_tokens(TEXT) == first
    assert tokens.count_tokens("hello world") == 2


def test_a_damaged_cache_file_is_rebuilt_not_used(fresh: Path) -> None:
    fresh.mkdir(parents=True)
    cached = fresh / "o200k_base.tiktoken"
    cached.write_bytes(b"aGVsbG8= 0\n")  # parses, but is not the pinned vocabulary
    assert tokens.count_tokens("hello world") == 2
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == tokens.O200K_SHA256


def test_a_rebuilt_table_with_another_hash_is_refused(
    fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Shifted:
        n_vocab = 3

        def is_special_token(self, rank: int) -> bool:
            return False

        def decode_single_token_bytes(self, rank: int) -> bytes:
            return bytes([rank + 1])

    import quicktok

    monkeypatch.setattr(quicktok, "get_encoding", lambda name: Shifted())
    with pytest.raises(ConfigError, match="refusing to count tokens"):
        tokens.count_tokens("hello")
    assert not (fresh / "o200k_base.tiktoken").exists()


@pytest.fixture
def no_memo(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """As ``fresh``, and no remembered counts loaded in this process."""
    monkeypatch.setattr(tokens, "_memo", None)
    return fresh


def _no_encoder() -> object:
    raise AssertionError("the encoder was built for a text counted before")


def test_remembered_counts_spare_a_new_process_the_encoder(
    no_memo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: every `maitred route` built the encoder to count the same menu entries."""
    first = tokens.count_tokens_memo(TEXT)
    assert first == tokens.count_tokens(TEXT)
    monkeypatch.setattr(tokens, "_memo", None)  # a new process
    monkeypatch.setattr(tokens, "encoding", _no_encoder)
    assert tokens.count_tokens_memo(TEXT) == first
    with pytest.raises(AssertionError, match="encoder was built"):
        tokens.count_tokens_memo(TEXT + " and more")  # a new text is counted for real


def test_a_line_cut_short_is_ignored(no_memo: Path) -> None:
    memo = no_memo / tokens._MEMO_FILE
    key = hashlib.sha256(TEXT.encode()).hexdigest()[:32]
    no_memo.mkdir(parents=True)
    memo.write_text(f"{key} 1", encoding="ascii")  # the crash cut "1" from "15" and the newline
    assert tokens.count_tokens_memo(TEXT) == tokens.count_tokens(TEXT) != 1
    assert memo.read_text(encoding="ascii").endswith(f"{key} {tokens.count_tokens(TEXT)}\n")


def test_menu_counts_are_the_same_from_the_memo(
    no_memo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from maitred.menu.render import MenuRenderer
    from maitred.skills.model import Catalog, Skill

    catalog = Catalog(
        tuple(Skill(name=f"skill-{i}", description=f"Does thing {i}. {TEXT}") for i in range(3))
    )
    counted = MenuRenderer(catalog, "openai").render(["skill-0", "skill-2"])
    monkeypatch.setattr(tokens, "_memo", None)
    monkeypatch.setattr(tokens, "encoding", _no_encoder)
    again = MenuRenderer(catalog, "openai").render(["skill-0", "skill-2"])
    assert again.per_skill == counted.per_skill and again.tokens == counted.tokens > 0
