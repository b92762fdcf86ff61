"""Multi-intent recall: a message that asks for two things should surface both skills early.

A sentence embedding (or a BM25 query) of "connect my domain, and while you're at it cancel the
old mailbox plan" is dominated by one of the two requests; the other request's skill then sits
deep in the ranking, where no depth rule can reach it without exposing everything above it (on
sitecare's two-request messages, the second skill is in the top 2 only 40% of the time, see
docs/depth.md). But ranking every piece of every message and interleaving the rankings also
costs: a one-request message written in two sentences gets its second sentence's neighbours
pushed in above its own second-best skills, and every piece costs the wrapped method one more
query (one more sentence embedding). :class:`IntentSplitRecaller` wraps any recaller and splits
only where the pieces point somewhere the whole text does not:

1. :func:`split_intents` cuts the text at sentence ends and at the connectives people join
   requests with ("and", "also", "then", "plus", "as well as", "while you're at it", "second");
   pieces shorter than :data:`MIN_WORDS` words are dropped. The whole text is ranked by the
   wrapped method in any case; fewer than two pieces: that ranking is returned unchanged (a
   regular expression is all such a message pays).
2. The cheap test, where the wrapped method has a lexical half (``bm25`` itself, or the
   ``bm25`` of ``fused`` and ``hybrid``): each piece is scored by BM25 alone. A piece is kept
   when it *points elsewhere* -- its best skill is not in the whole text's top
   :data:`AGREE_DEPTH` of the wrapped method's ranking -- and is a request of its own: its best
   BM25 score is at least :data:`MIN_SHARE` of the whole text's best BM25 score. (BM25 adds up
   over distinct query terms, so a piece never outscores the whole text on a skill; a piece
   whose best match is far weaker than the whole text's is a detail of the other request --
   "retrieve the name", "my password is ..." -- not a request.) A piece with no lexical match
   at all cannot be judged cheaply and is not kept. No piece kept: the whole text's ranking.
3. The pieces kept are ranked to depth ``k`` by the wrapped method (one batch where it has
   ``rank_batch``: one sentence embedding per piece for ``fused``), and two tests run on these
   rankings: the agreement test again (a piece whose best skill is in the whole text's top
   :data:`AGREE_DEPTH` adds nothing) and, where the rankings carry cosines (``fused``,
   ``hybrid``, ``dense``), :func:`as_close`: the piece's best cosine must be at least the whole
   text's best (a piece that is context, not a request, matches everything less closely than
   its message). A piece failing either is dropped. None left: the whole text's ranking.
4. The whole text's list and the pieces left are merged by *best rank*
   (:func:`merge_by_best_rank`): a skill's position is its best rank in any list, ties going to
   its rank for the whole text. So the whole text's top skill stays first, each piece's top
   skill comes right after it, and so on down -- an interleave.

A wrapped method without a lexical half (``dense``) skips step 2: every piece is ranked, and
step 3 alone decides. ``always=True`` skips the tests of steps 2 and 3: every piece of a message
that :func:`split_intents` cuts is ranked and merged (the first ``+intents``, which lost
nDCG@10 on one-tool queries and cost 3-4x the time; kept to measure against).

A merged candidate's ``score`` is its best score over the lists (so a cosine floor still means
"this close to some part of the message"); scores therefore need not fall monotonically down
the list. ``components`` are the wrapped candidate's from the list where it ranked best, plus
``intents`` (the number of pieces merged). Only ranks up to ``k`` matter: every skill of the
merged top ``k`` has a best rank of at most ``k``, since the whole text's own top ``k`` already
do. Nothing here is fitted: the two constants are set by the argument above, not from any
set's labels (the closeness test was added after a version without it split 36% of apibench-hf's
one-tool queries and lost 0.012 nDCG@10 there; BENCHMARKS.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from maitred.recall.base import Candidate, Recaller
from maitred.recall.bm25 import BM25Recaller
from maitred.recall.bm25_plain import PlainBM25Recaller
from maitred.skills.model import Catalog

MIN_WORDS: Final = 3
"""A piece shorter than this is a fragment ("cats and dogs"), not a request."""

AGREE_DEPTH: Final = 3
"""A piece whose best skill is in the whole text's top this many adds nothing to its ranking."""

MIN_SHARE: Final = 0.5
"""A piece is a request of its own only if its best BM25 score is at least this share of the
whole text's best (below it, the piece is a detail of the other request)."""

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


def points_elsewhere(
    whole: Sequence[Candidate], piece: Sequence[Candidate], *, depth: int = AGREE_DEPTH
) -> bool:
    """Whether a piece's best skill is outside the whole text's top ``depth``.

    A piece that ranks nothing (or only zero scores) points nowhere; a whole text that ranks
    nothing is pointed away from by any piece that ranks something.
    """
    if not piece or piece[0].score <= 0.0:
        return False
    return piece[0].name not in {c.name for c in whole[:depth]}


def as_close(whole: Sequence[Candidate], piece: Sequence[Candidate]) -> bool:
    """Whether a piece matches its skills at least as closely (by cosine, the ``dense``
    component) as the whole text matches its own; ``True`` when either ranking has no cosines.

    A request of its own matches its skill as closely as the whole message matches its best
    one (the message's embedding is a blend of all it says); a piece that only adds context
    ("I am a financial analyst", "a large window overlooking a forest") matches everything less
    closely than the message it came from.
    """
    near = [c.components["dense"] for c in piece if "dense" in c.components]
    far = [c.components["dense"] for c in whole if "dense" in c.components]
    return not near or not far or max(near) >= max(far)


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


def lexical_half(recaller: Recaller) -> Recaller | None:
    """The BM25 recaller behind ``recaller`` (itself, or its ``bm25`` half), if it has one."""
    for part in (recaller, getattr(recaller, "bm25", None)):
        if isinstance(part, (BM25Recaller, PlainBM25Recaller)):
            return part
    return None


def _rank_all(recaller: Recaller, texts: Sequence[str], k: int) -> list[list[Candidate]]:
    batch = getattr(recaller, "rank_batch", None)
    if batch is not None:
        ranked: list[list[Candidate]] = batch(texts, k)
        return ranked
    return [recaller.rank(t, k) for t in texts]


class IntentSplitRecaller:
    """Any recaller, made to rank each request of a multi-request message (module docstring).

    Attributes:
        name: the wrapped recaller's name plus ``"+intents"`` (``"+intents-all"`` with
            ``always``).
        inner: the wrapped recaller.
        always: split every message :func:`split_intents` cuts, without the agreement tests.
        probe: the lexical recaller of the cheap test (``None``: the wrapped one has none).
        catalog: the wrapped recaller's catalog, when it has one.
    """

    def __init__(self, inner: Recaller, *, always: bool = False) -> None:
        self.inner = inner
        self.always = always
        self.name = f"{inner.name}+intents" + ("-all" if always else "")
        self.probe = None if always else lexical_half(inner)
        self.catalog: Catalog | None = getattr(inner, "catalog", None)

    @property
    def settings(self) -> dict[str, str]:
        """The inner recaller's settings (empty for one without)."""
        return dict(getattr(self.inner, "settings", None) or {})

    def rank(self, text: str, k: int) -> list[Candidate]:
        """The best ``k`` skills for ``text``, interleaving its requests' rankings."""
        return self.rank_batch([text], k)[0]

    def rank_batch(self, texts: Sequence[str], k: int) -> list[list[Candidate]]:
        """:meth:`rank` for many texts, with batched calls to the wrapped recaller (one for
        the whole texts, one for the pieces that need it)."""
        wholes = _rank_all(self.inner, texts, k)
        pieces = [self._worth_ranking(t, w) for t, w in zip(texts, wholes, strict=True)]
        rankings = iter(_rank_all(self.inner, [p for parts in pieces for p in parts], k))
        out: list[list[Candidate]] = []
        for whole, parts in zip(wholes, pieces, strict=True):
            split = [next(rankings) for _ in parts]
            if not self.always:
                split = [p for p in split if points_elsewhere(whole, p) and as_close(whole, p)]
            out.append(merge_by_best_rank(whole, split)[:k] if split else whole)
        return out

    def _worth_ranking(self, text: str, whole: Sequence[Candidate]) -> list[str]:
        """The pieces of ``text`` worth ranking with the wrapped method (steps 1 and 2)."""
        parts = split_intents(text)
        if not parts or self.probe is None:
            return parts
        best, *lexical = _rank_all(self.probe, [text, *parts], 1)
        floor = MIN_SHARE * best[0].score if best else 0.0
        return [
            part
            for part, ranked in zip(parts, lexical, strict=True)
            if points_elsewhere(whole, ranked) and ranked[0].score >= floor
        ]
