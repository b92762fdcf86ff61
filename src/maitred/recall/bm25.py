"""Lexical recall: BM25 per field, combined by field weights (BM25F-style).

Each field of :mod:`maitred.recall.fields` gets its own ``bm25s`` index, so each has its own
document-length normalisation and IDF (a word rare in names but common in bodies is strong
evidence in a name). A skill's score for a query is the weighted sum of its per-field BM25
scores::

    score(q, s) = sum over fields f of  w_f * BM25_f(q, s)

This is the "sum of per-field scores" form of BM25F rather than the tf-merging form: simpler,
exactly what ``bm25s`` computes, and as good on short tool catalogs (see
``benchmarks/metatool_routing.py``, which tuned :data:`DEFAULT_FIELD_WEIGHTS` on MetaTool dev
queries).

Analysis is the same for skills and queries: identifiers split (``getWeather`` -> ``get
weather``), lower case, ``bm25s``' English stopwords dropped, then an optional light English
stemmer (``"s"``: the Harman S-stemmer, plural forms only, no dependency). A query that keeps
no term, or no term the catalog knows, ranks nothing: the result is an empty list, not an
error. Only skills with a positive score are ranked.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal, get_args

import bm25s
import numpy as np
from bm25s.stopwords import STOPWORDS_EN
from numpy.typing import NDArray

from maitred.errors import ConfigError, IndexMismatchError
from maitred.recall._rank import top_k
from maitred.recall.base import Candidate
from maitred.recall.fields import BODY_CHARS, FIELDS, Field, skill_fields, split_identifier
from maitred.skills.model import Catalog

Stemmer = Literal["none", "s"]
"""``"none"``: keep words as they are; ``"s"``: strip English plural endings."""

DEFAULT_FIELD_WEIGHTS: Final[Mapping[str, float]] = {
    "name": 1.0,
    "description": 1.0,
    "body": 0.1,
    "params": 0.3,
}
"""Field weights tuned on MetaTool dev queries (``benchmarks/metatool_routing.py``): long bodies
add more noise than evidence for BM25 (body 0.1 beat 0 and 0.2-1.0). MetaTool tools have no
parameters, so ``params`` is a prior, not a tuned value."""

DEFAULT_K1: Final = 1.2
DEFAULT_B: Final = 0.75
DEFAULT_STEMMER: Final[Stemmer] = "s"

_META = "bm25.json"

# bm25s sets its own logger to DEBUG at import, which floods any application that logs at DEBUG
# or INFO; hand the level back to the application's logging configuration.
if logging.getLogger("bm25s").level == logging.DEBUG:
    logging.getLogger("bm25s").setLevel(logging.NOTSET)


_WORDS = re.compile(r"(?u)\b\w\w+\b").findall
_STOPWORDS = frozenset(STOPWORDS_EN)


def s_stem(word: str) -> str:
    """Harman's S-stemmer: ``policies`` -> ``policy``, ``forecasts`` -> ``forecast``.

    Leaves ``-ss``, ``-us`` and short words alone, so ``class`` and ``status`` survive.
    """
    if len(word) <= 3:
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def analyze(texts: list[str], stemmer: Stemmer = DEFAULT_STEMMER) -> list[list[str]]:
    """Turn texts into BM25 terms, the same way for skills and queries.

    Args:
        texts: the texts.
        stemmer: ``"none"`` or ``"s"``.

    Returns:
        One list of terms per text (possibly empty).
    """
    # bm25s.tokenize's own rules (lowercase, ``\w\w+`` words, its English stopword list),
    # applied directly: calling it per query built two progress bars each time
    tokens = [
        [w for w in _WORDS(split_identifier(t).lower()) if w not in _STOPWORDS] for t in texts
    ]
    if stemmer == "s":
        return [[s_stem(w) for w in doc] for doc in tokens]
    return tokens


def check_weights(weights: Mapping[str, float]) -> dict[str, float]:
    """Validate field weights: known field names, finite non-negative numbers, one positive.

    Raises:
        ConfigError: naming the bad field or value and the valid fields.
    """
    out: dict[str, float] = {}
    for key, value in weights.items():
        if key not in FIELDS:
            raise ConfigError(
                f"unknown recall field {key!r} in field weights; choose one of {', '.join(FIELDS)}"
            )
        w = float(value)
        if not np.isfinite(w) or w < 0:
            raise ConfigError(f"field weight {key!r}={value!r} must be a finite number >= 0")
        out[key] = w
    if not any(out.values()):
        raise ConfigError(
            f"field weights {dict(weights)!r} give every field weight 0; "
            "set at least one of " + ", ".join(FIELDS) + " above 0"
        )
    return out


class BM25Recaller:
    """Lexical recall over the catalog's fields with the real ``bm25s`` library.

    Build with :meth:`build` (or :func:`maitred.recall.make_recaller`); persist with
    :meth:`save` / :meth:`load`. Field weights apply at query time, so one index serves any
    weights.

    Attributes:
        name: ``"bm25"``.
        catalog: the catalog it ranks.
        weights: the field weights in use.
    """

    name = "bm25"

    def __init__(
        self,
        catalog: Catalog,
        indexes: Mapping[Field, bm25s.BM25 | None],
        *,
        weights: Mapping[str, float] | None = None,
        stemmer: Stemmer = DEFAULT_STEMMER,
    ) -> None:
        """Wrap already-built per-field indexes (use :meth:`build` to make them).

        Args:
            catalog: the catalog the indexes were built from, in the same order.
            indexes: one ``bm25s.BM25`` per field, ``None`` for a field no skill fills.
            weights: field weights (default :data:`DEFAULT_FIELD_WEIGHTS`); fields left out
                weigh 0.
            stemmer: the stemmer the indexes were built with.
        """
        self.catalog = catalog
        self._names = catalog.names  # Catalog.names builds a new tuple on every access
        self.weights = check_weights(DEFAULT_FIELD_WEIGHTS if weights is None else weights)
        self.stemmer: Stemmer = stemmer
        self._indexes = dict(indexes)

    @classmethod
    def build(
        cls,
        catalog: Catalog,
        *,
        weights: Mapping[str, float] | None = None,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        stemmer: Stemmer = DEFAULT_STEMMER,
        body_chars: int = BODY_CHARS,
    ) -> BM25Recaller:
        """Index every field of every skill.

        Args:
            catalog: the skills.
            weights: field weights (see :data:`DEFAULT_FIELD_WEIGHTS`).
            k1: BM25 term-frequency saturation.
            b: BM25 length normalisation.
            stemmer: ``"none"`` or ``"s"``.
            body_chars: characters of body indexed per skill.

        Returns:
            The recaller.
        """
        if stemmer not in get_args(Stemmer):
            raise ConfigError(f"unknown stemmer {stemmer!r}; choose one of {get_args(Stemmer)}")
        texts = [skill_fields(s, body_chars=body_chars) for s in catalog]
        indexes: dict[Field, bm25s.BM25 | None] = {}
        for field in FIELDS:
            tokens = analyze([t[field] for t in texts], stemmer)
            if not any(tokens):
                indexes[field] = None  # bm25s cannot index a corpus with no terms at all
                continue
            index = bm25s.BM25(k1=k1, b=b)
            index.index(tokens, show_progress=False)
            indexes[field] = index
        return cls(catalog, indexes, weights=weights, stemmer=stemmer)

    def with_weights(self, weights: Mapping[str, float]) -> BM25Recaller:
        """The same indexes under other field weights (no re-indexing)."""
        return BM25Recaller(self.catalog, self._indexes, weights=weights, stemmer=self.stemmer)

    def field_scores(self, text: str) -> dict[Field, NDArray[np.float32]]:
        """Per-field BM25 scores of every skill for ``text`` (zeros where nothing matches)."""
        terms = list(dict.fromkeys(analyze([text], self.stemmer)[0]))  # each term once
        n = len(self.catalog)
        out: dict[Field, NDArray[np.float32]] = {}
        for field in FIELDS:
            index = self._indexes.get(field)
            known = [t for t in terms if index is not None and t in index.vocab_dict]
            if index is None or not known:
                out[field] = np.zeros(n, dtype=np.float32)
            else:
                out[field] = np.asarray(index.get_scores(known), dtype=np.float32)
        return out

    def scores(self, text: str) -> NDArray[np.float32]:
        """The weighted BM25 score of every skill for ``text``, in catalog order."""
        total = np.zeros(len(self.catalog), dtype=np.float32)
        for field, values in self.field_scores(text).items():
            w = self.weights.get(field, 0.0)
            if w:
                total += np.float32(w) * values
        return total

    def rank(self, text: str, k: int) -> list[Candidate]:
        """The best ``k`` skills for ``text``; only skills sharing a term with it.

        Args:
            text: the message or query.
            k: how many at most.

        Returns:
            Candidates ranked 1..n (n <= k), ``components={"bm25": score}``.
        """
        scores = self.scores(text)
        names = self._names
        return [
            Candidate(names[i], r, float(scores[i]), {"bm25": float(scores[i])})
            for r, i in enumerate(top_k(scores, k, min_score=0.0), start=1)
        ]

    def rank_batch(self, texts: Sequence[str], k: int) -> list[list[Candidate]]:
        """:meth:`rank` for many texts."""
        return [self.rank(text, k) for text in texts]

    def save(self, folder: Path) -> None:
        """Write the per-field indexes and their parameters under ``folder``."""
        folder.mkdir(parents=True, exist_ok=True)
        present = {f: i for f, i in self._indexes.items() if i is not None}
        for field, index in present.items():
            index.save(str(folder / field), show_progress=False)
        meta = {
            "catalog_version": self.catalog.version,
            "n_skills": len(self.catalog),
            "stemmer": self.stemmer,
            "fields": sorted(present),
        }
        (folder / _META).write_text(json.dumps(meta, indent=1), encoding="utf-8")

    @classmethod
    def load(
        cls, folder: Path, catalog: Catalog, *, weights: Mapping[str, float] | None = None
    ) -> BM25Recaller:
        """Read indexes written by :meth:`save` for this ``catalog``.

        Raises:
            IndexMismatchError: the folder was built for another catalog version.
        """
        meta: dict[str, Any] = json.loads((folder / _META).read_text(encoding="utf-8"))
        if meta.get("catalog_version") != catalog.version or meta.get("n_skills") != len(catalog):
            raise IndexMismatchError(
                f"BM25 index in {folder} was built for catalog {meta.get('catalog_version')!r}, "
                f"not {catalog.version!r}; delete the folder or rebuild the index"
            )
        indexes: dict[Field, bm25s.BM25 | None] = dict.fromkeys(FIELDS)
        for field in meta["fields"]:
            indexes[field] = bm25s.BM25.load(str(folder / field), show_progress=False)
        return cls(catalog, indexes, weights=weights, stemmer=meta["stemmer"])
