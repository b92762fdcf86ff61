"""Multi-intent recall: a message that asks for two things should surface both skills early.

A sentence embedding (or a BM25 query) of "connect my domain, and while you're at it cancel the
old mailbox plan" is dominated by one of the two requests; the other request's skill then sits
deep in the ranking, where no depth rule can reach it without exposing everything above it (on
sitecare's two-request messages, the second skill is in the top 2 only 40% of the time, see
docs/depth.md). :class:`IntentSplitRecaller` wraps any recaller:

1. :func:`split_intents` cuts the text at sentence ends and at the connectives people join
   requests with ("and", "also", "then", "plus", "as well as", "while you're at it", "second");
   pieces shorter than :data:`MIN_WORDS` words are dropped. Fewer than two pieces: the wrapped
   ranking is returned unchanged.
2. The whole text and every piece are ranked to depth ``k`` by the wrapped recaller (one batch
   where it has ``rank_batch``).
3. The lists are merged by *best rank*: a skill's position is its best rank in any list, ties
   going to its rank for the whole text. So the whole text's top skill stays first, each piece's
   top skill comes right after it, and so on down -- an interleave.

A merged candidate's ``score`` is its best score over the lists (so a cosine floor still means
"this close to some part of the message"); scores therefore need not fall monotonically down
the list. ``components`` are the wrapped candidate's from the list where it ranked best, plus
``intents`` (the number of pieces). Only ranks up to ``k`` matter: every skill of the merged
top ``k`` has a best rank of at most ``k``, since the whole text's own top ``k`` already do.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from maitred.recall.base import Candidate, Recaller

MIN_WORDS: Final = 3
"""A piece shorter than this is a fragment ("cats and dogs"), not a request."""

_CONNECTIVE: Final = re.compile(
    r"(?:[.!?;]+\s+|:\s+|,?\s+(?:and\s+)?(?:also|then|plus|as well as|second(?:ly)?|oh and)\s+"
    r"|,?\s+and\s+(?:while you're at it,?\s+)?|,\s+while you're at it,?\s+)",
    re.IGNORECASE,
)


_LEADING: Final = re.compile(
    r"^(?:(?:and|also|then|plus|second(?:ly)?|oh|while you're at it)\b[,]?\s*)+", re.IGNORECASE
)


def split_intents(text: str) -> list[str]:
    """The request-like pieces of ``text`` (at least two), or ``[]`` when it is one request."""
    pieces = [_LEADING.sub("", p.strip(" ,.;:!?")) for p in _CONNECTIVE.split(text)]
    kept = [p for p in pieces if len(p.split()) >= MIN_WORDS]
    return kept if len(kept) >= 2 else []


def merge_by_best_rank(
    whole: Sequence[Candidate], parts: Sequence[Sequence[Candidate]]
) -> list[Candidate]:
    """Interleave rankings by each skill's best rank (ties: its rank for the whole text)."""
    best: dict[str, tuple[int, int, float, Candidate]] = {}
    whole_rank = {c.name: c.rank for c in whole}
    absent = len(whole) + 1
    for ranking in (whole, *parts):
        for c in ranking:
            seen = best.get(c.name)
            score = c.score if seen is None else max(seen[2], c.score)
            if seen is None or c.rank < seen[0]:
                best[c.name] = (c.rank, whole_rank.get(c.name, absent), score, c)
            else:
                best[c.name] = (*seen[:2], score, seen[3])
    order = sorted(best.items(), key=lambda item: (item[1][0], item[1][1], -item[1][2]))
    n_parts = float(len(parts))
    return [
        Candidate(name, rank, score, {**c.components, "intents": n_parts})
        for rank, (name, (_, _, score, c)) in enumerate(order, start=1)
    ]


class IntentSplitRecaller:
    """Any recaller, made to rank each request of a multi-request message (module docstring).

    Attributes:
        name: the wrapped recaller's name plus ``"+intents"``.
        inner: the wrapped recaller.
    """

    def __init__(self, inner: Recaller) -> None:
        self.inner = inner
        self.name = f"{inner.name}+intents"

    def rank(self, text: str, k: int) -> list[Candidate]:
        """The best ``k`` skills for ``text``, interleaving its requests' rankings."""
        return self.rank_batch([text], k)[0]

    def rank_batch(self, texts: Sequence[str], k: int) -> list[list[Candidate]]:
        """:meth:`rank` for many texts, with one batched call to the wrapped recaller."""
        pieces = [split_intents(t) for t in texts]
        flat = [t for text, parts in zip(texts, pieces, strict=True) for t in (text, *parts)]
        batch = getattr(self.inner, "rank_batch", None)
        rankings = batch(flat, k) if batch is not None else [self.inner.rank(t, k) for t in flat]
        out: list[list[Candidate]] = []
        at = 0
        for parts in pieces:
            whole, split = rankings[at], rankings[at + 1 : at + 1 + len(parts)]
            at += 1 + len(parts)
            out.append(merge_by_best_rank(whole, split)[:k] if parts else whole)
        return out
