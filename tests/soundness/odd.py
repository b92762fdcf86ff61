"""Adversarial text for the soundness machines (issue 27): what a client may send that a log
may not be able to hold, and what the promise says becomes of it.

:func:`texts` and :func:`ids` draw strings that mix plain ASCII with NUL (U+0000), lone
surrogates (high and low), 4-byte characters (an emoji, astral CJK, Gothic) and runs of one
character hundreds to thousands long. The oracles below are written from the promise, not from
:mod:`maitred.log.storable`:

* a NUL in a text column, a lone surrogate in an id or in JSON, and an id longer than
  :data:`REFUSED_BYTES` bytes of UTF-8 are refused (``UnstorableError``; over HTTP a 4xx) for
  that input alone;
* an id of at most :data:`KEPT_BYTES` bytes without those is stored, byte for byte (between
  the two, either is sound: maitred puts its own prefix in front of some ids);
* 4-byte characters and long text are characters, and round-trip exactly; a lone surrogate in
  a message's text is kept as U+FFFD (:class:`maitred.Message`), one or more per run.
"""

from __future__ import annotations

import re

from hypothesis import strategies as st

#: ids up to this many UTF-8 bytes must be stored (a client id's documented limit)
KEPT_BYTES = 512
#: ids over this many UTF-8 bytes must be refused (three fit one PostgreSQL index entry)
REFUSED_BYTES = 768
ODD = ("\x00", "\ud800", "\udbff", "\udc80", "\udfff", "\U0001f600", "\U00020000", "\U00010348")
PLAIN = ("a", "z", "-", "7", "é")
_SURROGATE = re.compile("[\ud800-\udfff]+")


ASTRAL = ODD[-3:]


def _pieces(alphabet: tuple[str, ...]) -> st.SearchStrategy[str]:
    short = st.text(st.sampled_from(alphabet), min_size=1, max_size=6)
    run = st.tuples(st.sampled_from(PLAIN + ASTRAL), st.integers(100, 1200)).map(
        lambda cn: cn[0] * cn[1]
    )
    return st.one_of(short, short, run)


def _odd(prefix: str, max_pieces: int) -> st.SearchStrategy[str]:
    def joined(alphabet: tuple[str, ...]) -> st.SearchStrategy[str]:
        pieces = st.lists(_pieces(alphabet), min_size=1, max_size=max_pieces)
        return pieces.map(lambda ps: prefix + "".join(ps))

    # as often storable (4-byte characters, long runs) as not (NULs, lone surrogates too)
    return st.one_of(joined(PLAIN + ASTRAL), joined(PLAIN + ODD))


def texts() -> st.SearchStrategy[str]:
    """Message text: always a plain word first (a text must say something), then odd pieces."""
    return _odd("odd ", 3)


def ids() -> st.SearchStrategy[str]:
    """An id (a session, an account, a message, a tool call): non-empty, odd pieces."""
    return _odd("o", 2)


def has_bad_char(value: str, *, nul: bool = True) -> bool:
    """Whether ``value`` holds a lone surrogate (or, when ``nul``, a NUL)."""
    return bool(_SURROGATE.search(value)) or (nul and "\x00" in value)


def id_verdict(value: str) -> bool | None:
    """True: must be refused; False: must be stored; None: either is sound."""
    if has_bad_char(value):
        return True
    size = len(value.encode("utf-8"))
    if size > REFUSED_BYTES:
        return True
    return None if size > KEPT_BYTES else False


def combine(*verdicts: bool | None) -> bool | None:
    """One input of several fields: refused if one must be, stored if all must be."""
    if any(v is True for v in verdicts):
        return True
    return False if all(v is False for v in verdicts) else None


def stored_text(text: str) -> str:
    """A message text as it must read back: each run of lone surrogates one U+FFFD (runs of
    U+FFFD in what was stored are folded alike before comparing, see :func:`fold`)."""
    return _SURROGATE.sub("\ufffd", text)


def fold(text: str) -> str:
    return re.sub("\ufffd+", "\ufffd", text)


def astral(text: str) -> bool:
    """Whether ``text`` holds a 4-byte (non-BMP) character."""
    return any(ord(c) > 0xFFFF for c in text)
