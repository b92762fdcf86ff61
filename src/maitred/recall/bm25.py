"""Lexical recall: BM25F over every field of a skill, scored as one document.

A skill is one document made of four fields (:mod:`maitred.recall.fields`): its split name,
description, parameter text (names, descriptions, enum values) and long body (documentation,
examples). BM25F (Robertson, Zaragoza & Taylor, 2004) weights each field's term frequency
*before* BM25's saturation, so a word in the name counts more than the same word in the body,
yet fifty mentions in a long body cannot outweigh the saturation that keeps one term from
dominating::

    tf~(t, s)  = sum over fields f of  w_f * tf_f(t, s) / ((1 - b) + b * len_f(s) / avglen_f)
                 (avglen_f: mean length over the skills whose field f holds a term)
    score(q, s) = sum over distinct query terms t of  idf(t) * tf~ * (k1 + 1) / (tf~ + k1)
    idf(t)     = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))        df over the whole skill

A skill without a body, in a catalog where others have one, is given its description as body
(:func:`fill_bodies`), so that documented skills are not favoured for being documented. Each
field keeps its own length normalisation (a long body does not dilute a name match), and a
term's IDF is taken over whole skills. This differs from summing one BM25 per field, which
saturates every field separately and so rewards a term for being spread over many fields and
under-uses a long documentation field. The weights :data:`DEFAULT_FIELD_WEIGHTS` were chosen on
MetaTool dev queries only (``benchmarks/routing_tune.py``).

Every (skill, term) score depends only on the skill, so the index is precomputed as one sparse
matrix (scipy) and handed to the real ``bm25s`` library, which scores a query by summing the
query terms' columns, saves and loads it. Field weights are therefore part of the index.

Analysis is the same for skills and queries, by an analyzer chosen by name
(:mod:`maitred.recall.analyzers`; ``analyzer=`` and ``stemmer=``): by default each run of one
script is cut its own way -- words for Latin and other spaced scripts (identifiers split,
lower case, English stopwords dropped, an optional light English stemmer: ``"s"``, plural
forms only), characters and character bigrams for Chinese, Japanese and Korean. The analyzer's
name is part of the index's parameters. A query that keeps no term, or no term the catalog
knows, ranks nothing: the result is an empty list, not an error. Only skills with a positive
score are ranked.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import bm25s
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from maitred.errors import ConfigError, EmptyCatalogError, IndexMismatchError
from maitred.recall._rank import top_k
from maitred.recall.analyzers import (
    DEFAULT_ANALYZER,
    DEFAULT_STEMMER,
    Analyzer,
    Stemmer,
    check_stemmer,
    make_analyzer,
)
from maitred.recall.base import Candidate
from maitred.recall.fields import FIELDS, Field, skill_fields
from maitred.recall.languages import catalog_languages
from maitred.skills.model import Catalog

DEFAULT_FIELD_WEIGHTS: Final[Mapping[str, float]] = {
    "name": 3.0,
    "description": 1.0,
    "body": 0.5,
    "params": 1.0,
}
"""BM25F field weights chosen on MetaTool dev queries only (``benchmarks/routing_tune.py``,
grid name/description 1-4, body 0.5 or 1, params 1): the body keeps at least half a
description's weight, so long documentation is used, not muted."""

DEFAULT_K1: Final = 1.2
DEFAULT_B: Final = 0.75

LEXICAL_BODY_CHARS: Final = 8000
"""Characters of stripped body indexed for lexical recall: more than dense recall embeds
(a sentence encoder truncates anyway; BM25 can use the whole documentation)."""

_META = "bm25.json"
_INDEX = "bm25f"

# bm25s sets its own logger to DEBUG at import, which floods any application that logs at DEBUG
# or INFO; hand the level back to the application's logging configuration.
if logging.getLogger("bm25s").level == logging.DEBUG:
    logging.getLogger("bm25s").setLevel(logging.NOTSET)


def check_weights(weights: Mapping[str, float]) -> dict[str, float]:
    """Validate field weights: known field names, finite non-negative numbers, one positive.

    Returns:
        Every field's weight (fields left out weigh 0).

    Raises:
        ConfigError: naming the bad field or value and the valid fields.
    """
    out: dict[str, float] = dict.fromkeys(FIELDS, 0.0)
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


def fill_bodies(texts: list[dict[Field, str]]) -> list[dict[Field, str]]:
    """Give a skill without a body its description as body, when other skills have bodies.

    A field only some skills fill biases BM25F towards them: their body adds matches the
    others cannot have (on MetaTool, where a quarter of the tools lack a manifest, this cost
    0.03 nDCG@10 on dev queries). A catalog where no skill has a body is left as it is.
    """
    if all(t["body"] for t in texts) or not any(t["body"] for t in texts):
        return texts
    return [t if t["body"] else {**t, "body": t["description"]} for t in texts]


def term_matrix(docs: Sequence[Sequence[str]], vocab: Mapping[str, int]) -> sp.csr_matrix:
    """Term counts as a ``[len(docs), len(vocab)]`` sparse matrix (terms outside vocab dropped)."""
    rows: list[int] = []
    cols: list[int] = []
    for row, doc in enumerate(docs):
        for term in doc:
            col = vocab.get(term)
            if col is not None:
                rows.append(row)
                cols.append(col)
    data = np.ones(len(rows), dtype=np.float32)
    out = sp.csr_matrix((data, (rows, cols)), shape=(len(docs), len(vocab)), dtype=np.float32)
    out.sum_duplicates()
    return out


def bm25f_matrix(
    fields: Mapping[str, Sequence[Sequence[str]]],
    weights: Mapping[str, float],
    *,
    k1: float = DEFAULT_K1,
    b: float = DEFAULT_B,
) -> tuple[sp.csc_matrix, dict[str, int]]:
    """The BM25F score of every (document, term) pair, precomputed (see the module docstring).

    Args:
        fields: field name -> one term list per document (every field the same length).
        weights: field name -> weight; a field weighing 0 is not indexed.
        k1: term-frequency saturation (> 0).
        b: length normalisation in [0, 1].

    Returns:
        ``(scores, vocab)``: a ``[docs, terms]`` CSC matrix and term -> column.

    Raises:
        ConfigError: ``k1`` or ``b`` out of range.
        EmptyCatalogError: no weighted field of any skill holds a term.
    """
    if not (k1 > 0 and 0.0 <= b <= 1.0):
        raise ConfigError(f"BM25 needs k1 > 0 and 0 <= b <= 1, got k1={k1}, b={b}")
    used = [f for f, docs in fields.items() if weights.get(f, 0.0) > 0 and any(docs)]
    vocab: dict[str, int] = {}
    for f in used:
        for doc in fields[f]:
            for term in doc:
                vocab.setdefault(term, len(vocab))
    if not vocab:
        raise EmptyCatalogError(
            "no skill has an indexable word in any weighted field (name, description, body, "
            "params): every text is empty or only stopwords; give the skills descriptions"
        )
    n_docs = len(next(iter(fields.values())))
    tf = sp.csr_matrix((n_docs, len(vocab)), dtype=np.float32)
    for f in used:
        counts = term_matrix(fields[f], vocab)
        lengths = np.asarray(counts.sum(axis=1), dtype=np.float32).ravel()
        present = lengths[lengths > 0]  # a field few skills fill is averaged over those
        norm = (1.0 - b) + b * lengths / float(present.mean() if present.size else 1.0)
        tf = tf + sp.diags(np.float32(weights[f]) / norm) @ counts
    tf = tf.tocsc()
    df = np.diff(tf.indptr).astype(np.float64)
    idf = np.log1p((n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)
    data = tf.data
    # saturate per entry, then scale each column by its term's idf
    tf.data = (data * (k1 + 1.0) / (data + k1)).astype(np.float32)
    scores = (tf @ sp.diags(idf)).tocsc()
    scores.sort_indices()
    return scores, vocab


def as_bm25s(scores: sp.csc_matrix, vocab: Mapping[str, int], k1: float, b: float) -> bm25s.BM25:
    """Wrap a precomputed ``[docs, terms]`` score matrix in a ``bm25s.BM25`` (its eager index)."""
    index = bm25s.BM25(k1=k1, b=b)
    index.scores = {
        "data": scores.data.astype(np.float32),
        "indices": scores.indices.astype(np.int32),
        "indptr": scores.indptr.astype(np.int32),
        "num_docs": int(scores.shape[0]),
    }
    index.vocab_dict = dict(vocab)
    index.nonoccurrence_array = None  # plain BM25 variants score only matching terms
    index.unique_token_ids_set = set(index.vocab_dict.values())
    return index


class BM25Recaller:
    """BM25F recall over all of a skill's fields, scored by the real ``bm25s`` library.

    Build with :meth:`build` (or :func:`maitred.recall.make_recaller`); persist with
    :meth:`save` / :meth:`load`.

    Attributes:
        name: ``"bm25"``.
        catalog: the catalog it ranks.
        weights: the field weights the index was built with.
        params: ``k1``, ``b``, ``stemmer``, ``analyzer`` and ``body_chars`` of the index.
        analyzer: the :class:`~maitred.recall.analyzers.Analyzer` of skills and queries.
    """

    name = "bm25"

    def __init__(
        self,
        catalog: Catalog,
        index: bm25s.BM25,
        *,
        weights: Mapping[str, float],
        params: Mapping[str, Any],
        languages: Mapping[str, float] | None = None,
    ) -> None:
        """Wrap an already-built index (use :meth:`build` to make one); ``languages`` as
        recorded in it (detected from the catalog when not given)."""
        self.catalog = catalog
        self._names = catalog.names  # Catalog.names builds a new tuple on every access
        self.weights = check_weights(weights)
        self.params = dict(params)
        self.params.setdefault("analyzer", "words")  # an index saved before analyzers
        self.stemmer: Stemmer = check_stemmer(str(self.params["stemmer"]))
        self.analyzer: Analyzer = make_analyzer(str(self.params["analyzer"]), self.stemmer)
        self._index = index
        self.languages = dict(catalog_languages(catalog) if languages is None else languages)

    @classmethod
    def build(
        cls,
        catalog: Catalog,
        *,
        weights: Mapping[str, float] | None = None,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        stemmer: Stemmer = DEFAULT_STEMMER,
        analyzer: str = DEFAULT_ANALYZER,
        body_chars: int = LEXICAL_BODY_CHARS,
    ) -> BM25Recaller:
        """Index every field of every skill.

        Args:
            catalog: the skills.
            weights: field weights (default :data:`DEFAULT_FIELD_WEIGHTS`); fields left out
                weigh 0.
            k1: BM25 term-frequency saturation.
            b: BM25 length normalisation (per field).
            stemmer: ``"none"`` or ``"s"``.
            analyzer: an analyzer name (:func:`~maitred.recall.analyzers.analyzer_names`).
            body_chars: characters of body indexed per skill.

        Raises:
            ConfigError: bad weights, stemmer, analyzer, k1 or b.
            EmptyCatalogError: no skill has one indexable word.
        """
        cut = make_analyzer(analyzer, stemmer)
        chosen = check_weights(DEFAULT_FIELD_WEIGHTS if weights is None else weights)
        texts = fill_bodies([skill_fields(s, body_chars=body_chars) for s in catalog])
        fields: dict[str, list[list[str]]] = {f: cut([t[f] for t in texts]) for f in FIELDS}
        scores, vocab = bm25f_matrix(fields, chosen, k1=k1, b=b)
        params = {
            "k1": k1,
            "b": b,
            "stemmer": stemmer,
            "analyzer": analyzer,
            "body_chars": body_chars,
        }
        return cls(catalog, as_bm25s(scores, vocab, k1, b), weights=chosen, params=params)

    def with_weights(self, weights: Mapping[str, float]) -> BM25Recaller:
        """The same catalog indexed under other field weights (BM25F bakes them in)."""
        return BM25Recaller.build(self.catalog, weights=weights, **self.params)

    def terms(self, text: str) -> list[str]:
        """The distinct terms of ``text`` that the index knows, in order of appearance."""
        vocab = self._index.vocab_dict
        return [t for t in dict.fromkeys(self.analyzer([text])[0]) if t in vocab]

    def scores(self, text: str) -> NDArray[np.float32]:
        """The BM25F score of every skill for ``text``, in catalog order (zeros: no match)."""
        known = self.terms(text)
        if not known:
            return np.zeros(len(self.catalog), dtype=np.float32)
        return np.asarray(self._index.get_scores(known), dtype=np.float32)

    @property
    def settings(self) -> dict[str, str]:
        """The analyzer this index was built with (what the decision log records)."""
        return {"analyzer": self.analyzer.name}

    def rank(self, text: str, k: int) -> list[Candidate]:
        """The best ``k`` skills for ``text``; only skills sharing a term with it.

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
        """Write the index and its parameters under ``folder``."""
        folder.mkdir(parents=True, exist_ok=True)
        self._index.save(str(folder / _INDEX), show_progress=False)
        meta = {
            "catalog_version": self.catalog.version,
            "languages": self.languages,
            "n_skills": len(self.catalog),
            "weights": self.weights,
            **self.params,
        }
        (folder / _META).write_text(json.dumps(meta, indent=1), encoding="utf-8")

    @classmethod
    def load(
        cls, folder: Path, catalog: Catalog, *, weights: Mapping[str, float] | None = None
    ) -> BM25Recaller:
        """Read an index written by :meth:`save` for this ``catalog`` (and these weights).

        Raises:
            IndexMismatchError: the folder was built for another catalog version or weights.
        """
        meta: dict[str, Any] = json.loads((folder / _META).read_text(encoding="utf-8"))
        if meta.get("catalog_version") != catalog.version or meta.get("n_skills") != len(catalog):
            raise IndexMismatchError(
                f"BM25 index in {folder} was built for catalog {meta.get('catalog_version')!r}, "
                f"not {catalog.version!r}; delete the folder or rebuild the index"
            )
        wanted = check_weights(DEFAULT_FIELD_WEIGHTS if weights is None else weights)
        if meta.get("weights") != wanted:
            raise IndexMismatchError(
                f"BM25 index in {folder} was built with field weights {meta.get('weights')!r}, "
                f"not {wanted!r}; rebuild it with the weights you want"
            )
        index = bm25s.BM25.load(str(folder / _INDEX), show_progress=False)
        params = {k: meta[k] for k in ("k1", "b", "stemmer", "body_chars")}
        params["analyzer"] = meta.get("analyzer", "words")
        languages = meta.get("languages")
        return cls(catalog, index, weights=wanted, params=params, languages=languages)
