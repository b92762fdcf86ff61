"""The plain lexical baseline: one Okapi BM25 over all of a skill's text, ``bm25-plain``.

Every field (:mod:`maitred.recall.fields`) is joined into one text and indexed by ``bm25s`` as
it is: one length normalisation, no field weights. It is what anyone would build first, so it is
the bar :class:`~maitred.recall.bm25.BM25Recaller` (BM25F) must clear on every evaluation set;
``maitred eval routing`` and ``benchmarks/routing_sets.py`` report both. Analysis (the analyzer
of :mod:`maitred.recall.analyzers`: by script, identifiers split, stopwords, stemming) is the
same as BM25F's, so the two differ only in scoring; with the default analyzer a Chinese text is
cut into characters and character bigrams, the textbook baseline for unspaced scripts.
"""

from __future__ import annotations

from collections.abc import Sequence

import bm25s
import numpy as np
from numpy.typing import NDArray

from maitred.errors import EmptyCatalogError
from maitred.recall._rank import top_k
from maitred.recall.analyzers import (
    DEFAULT_ANALYZER,
    DEFAULT_STEMMER,
    Analyzer,
    Stemmer,
    make_analyzer,
)
from maitred.recall.base import Candidate
from maitred.recall.bm25 import DEFAULT_B, DEFAULT_K1, LEXICAL_BODY_CHARS
from maitred.recall.fields import FIELDS, skill_fields
from maitred.skills.model import Catalog


class PlainBM25Recaller:
    """Single-document Okapi BM25 over all of a skill's text (a baseline, built in memory).

    Attributes:
        name: ``"bm25-plain"``.
        catalog: the catalog it ranks.
    """

    name = "bm25-plain"

    def __init__(self, catalog: Catalog, index: bm25s.BM25, *, analyzer: Analyzer) -> None:
        """Wrap a built index (use :meth:`build`)."""
        self.catalog = catalog
        self.analyzer = analyzer
        self._index = index
        self._names = catalog.names

    @classmethod
    def build(
        cls,
        catalog: Catalog,
        *,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        stemmer: Stemmer = DEFAULT_STEMMER,
        analyzer: str = DEFAULT_ANALYZER,
        body_chars: int = LEXICAL_BODY_CHARS,
    ) -> PlainBM25Recaller:
        """Index each skill's fields joined into one document.

        Raises:
            ConfigError: unknown stemmer or analyzer.
            EmptyCatalogError: no skill has one indexable word.
        """
        cut = make_analyzer(analyzer, stemmer)
        texts = [
            " ".join(t[f] for f in FIELDS)
            for t in (skill_fields(s, body_chars=body_chars) for s in catalog)
        ]
        tokens = cut(texts)
        if not any(tokens):
            raise EmptyCatalogError(
                "no skill has an indexable word in its name, description, body or parameters: "
                "every text is empty or only stopwords; give the skills descriptions"
            )
        index = bm25s.BM25(k1=k1, b=b)
        index.index(tokens, show_progress=False)
        return cls(catalog, index, analyzer=cut)

    def scores(self, text: str) -> NDArray[np.float32]:
        """The BM25 score of every skill for ``text``, in catalog order."""
        vocab = self._index.vocab_dict
        known = [t for t in dict.fromkeys(self.analyzer([text])[0]) if t in vocab]
        if not known:
            return np.zeros(len(self.catalog), dtype=np.float32)
        return np.asarray(self._index.get_scores(known), dtype=np.float32)

    @property
    def settings(self) -> dict[str, str]:
        """The analyzer this index was built with (what the decision log records)."""
        return {"analyzer": self.analyzer.name}

    def rank(self, text: str, k: int) -> list[Candidate]:
        """The best ``k`` skills sharing a term with ``text`` (``components={"bm25-plain"}``)."""
        scores = self.scores(text)
        names = self._names
        return [
            Candidate(names[i], r, float(scores[i]), {"bm25_plain": float(scores[i])})
            for r, i in enumerate(top_k(scores, k, min_score=0.0), start=1)
        ]

    def rank_batch(self, texts: Sequence[str], k: int) -> list[list[Candidate]]:
        """:meth:`rank` for many texts."""
        return [self.rank(text, k) for text in texts]
