"""Recall tuned to one catalog without labels: held-out pseudo-queries from the catalog's text.

The defaults of ``bm25`` (field weights) and ``fused`` (lexical weight) were fitted on MetaTool
dev queries. Another catalog may want other numbers: tools with long documentation reward the
body field, tools named ``do_it`` do not reward the name. Nobody has labelled queries for their
own catalog, but every catalog already holds text that says what a tool is for. So::

    1. pick, for a sample of tools, one sentence of its own text: a body sentence, a parameter
       description, or one sentence of a description that has several (:func:`pseudo_queries`);
    2. index a copy of the catalog with each picked sentence removed from its tool, from every
       field it occurs in (a tool cannot be found by the very words it was asked with);
    3. score settings on that copy, the pseudo-query's tool being the one right answer:
       BM25F field weights on :data:`FIELD_GRID` by ``bm25``'s nDCG@10, then the lexical
       weight on :data:`LEXICAL_GRID` by ``fused``'s nDCG@10 (ties: higher MRR, then the
       defaults, which are first in each grid);
    4. keep a setting only when it beats the default by :data:`MIN_GAIN` nDCG@10 *and* a paired
       bootstrap over the pseudo-queries puts its gain above zero with :data:`CONFIDENCE`: a
       few hundred pseudo-queries are noisy, they are not users' queries, and the defaults are
       a measured choice.

The result is a :class:`Tuning`, stored as ``tuning.json`` beside the catalog version's indexes
(:func:`save_tuning`); ``make_recaller("bm25" | "fused", ..., cache_dir=D)`` uses a stored
tuning for the *same* catalog version, and names the recaller ``bm25(tuned)`` /
``fused(tuned)``. A tuning recorded for another catalog version is never used.

The cut-off floor (``Cutoff(on="dense")``) is not fitted: pseudo-queries have exactly one
right tool and say nothing about how many wrong ones a floor should let through.
``floor`` is recorded as ``None``.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import math
import os
import random
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

import numpy as np
from numpy.typing import NDArray

from maitred import __version__
from maitred.errors import ConfigError
from maitred.recall.analyzers import analyze
from maitred.recall.bm25 import DEFAULT_FIELD_WEIGHTS, BM25Recaller, check_weights
from maitred.recall.dense import DenseRecaller, Embedder, MiniLMEmbedder
from maitred.recall.fields import skill_fields, strip_markdown
from maitred.recall.fusion import LEXICAL_WEIGHT, FusedRecaller
from maitred.recall.store import IndexStore
from maitred.skills.model import Catalog, Skill

logger = logging.getLogger(__name__)

T = TypeVar("T")

TUNING_FILE: Final = "tuning.json"
TUNING_FORMAT: Final = "maitred-tuning/1"
TUNING_METHOD: Final = "held-out-pseudo-queries/1"
"""What produced the numbers; bumped with any change to how pseudo-queries are made or scored."""

MAX_PSEUDO_QUERIES: Final = 300
"""Pseudo-queries scored at most (a seeded sample): enough to separate grid points, and bounded
work on a catalog of thousands of tools."""

MIN_GAIN: Final = 0.005
"""nDCG@10 a tuned setting must add over the default's before it replaces it."""

CONFIDENCE: Final = 0.95
"""Share of bootstrap resamples of the pseudo-queries in which a tuned setting must beat the
default before it replaces it (the sample is small and its queries are not users' queries)."""

BOOTSTRAP: Final = 1000
"""Paired bootstrap resamples behind :data:`CONFIDENCE`."""

LEXICAL_GRID: Final = (LEXICAL_WEIGHT, 0.1, 0.2, 0.4, 0.5, 0.6, 0.7)
"""Fused lexical weights tried, the default first (it wins ties)."""

FIELD_GRID: Final[tuple[dict[str, float], ...]] = (
    dict(DEFAULT_FIELD_WEIGHTS),
    *(
        {"name": n, "description": d, "body": b, "params": p}
        for n, d, b, p in itertools.product(
            (1.0, 2.0, 3.0, 4.0), (1.0, 2.0), (0.5, 1.0), (0.5, 1.0)
        )
        if {"name": n, "description": d, "body": b, "params": p} != dict(DEFAULT_FIELD_WEIGHTS)
    ),
)
"""BM25F field weights tried, the default first."""

Source = Literal["body", "params", "description"]
TuneProgress = Callable[[int, int], None]
"""``progress(done, total)``: embedding batches, then grid points."""

_SENTENCE = re.compile(r"(?<=[.!?])[\"')\]}]*\s+|\n+")
_SPACES = re.compile(r"\s+")
_CODE = re.compile(r'[{}\[\]"=<>|`]|\w\(')
_MIN_TERMS: Final = 3
_MAX_WORDS: Final = 40


@dataclass(frozen=True)
class PseudoQuery:
    """One held-out sentence of a tool's own text, asked as a query whose answer is that tool."""

    skill: str
    text: str
    source: Source


@dataclass(frozen=True)
class Tuning:
    """Settings fitted to one catalog version, and how well they did on its pseudo-queries.

    Attributes:
        catalog_version: the catalog the settings were fitted on (and the only one they serve).
        field_weights: BM25F field weights for ``bm25`` and ``fused``.
        lexical_weight: ``fused``'s lexical weight.
        floor: a fitted dense cut-off floor; always ``None`` (not fitted, see module docstring).
        n_queries: pseudo-queries scored.
        before: ``{"bm25": ndcg, "fused": ndcg, "fused_mrr": mrr}`` with the defaults.
        after: the same with the chosen settings.
        seed: the sampling seed.
        method, created, maitred_version: provenance.
    """

    catalog_version: str
    field_weights: dict[str, float]
    lexical_weight: float
    floor: float | None
    n_queries: int
    before: dict[str, float]
    after: dict[str, float]
    seed: int
    method: str = TUNING_METHOD
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    maitred_version: str = __version__

    def to_json(self) -> dict[str, Any]:
        """The ``tuning.json`` document."""
        return {"format": TUNING_FORMAT, **dataclasses.asdict(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str) -> Tuning:
        """Read a ``tuning.json`` document.

        Raises:
            ConfigError: naming ``where`` and the bad field.
        """
        if data.get("format") != TUNING_FORMAT:
            raise ConfigError(
                f"{where}: field 'format' is {data.get('format')!r}, expected {TUNING_FORMAT!r}; "
                "delete the file and run `maitred tune` again"
            )
        names = {f.name for f in dataclasses.fields(cls)}
        try:
            kwargs = {k: v for k, v in data.items() if k in names}
            tuning = cls(**kwargs)
            check_weights(tuning.field_weights)
            if not 0.0 <= float(tuning.lexical_weight) <= 1.0:
                raise ConfigError(f"field 'lexical_weight' {tuning.lexical_weight!r} not in [0, 1]")
        except (TypeError, ConfigError) as exc:
            raise ConfigError(
                f"{where}: {exc}; delete the file and run `maitred tune` again"
            ) from None
        return tuning


def _norm(text: str) -> str:
    return _SPACES.sub(" ", text).strip().lower()


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def _usable(text: str) -> bool:
    """Prose of 3+ content words and at most 40 words; no JSON, code or markup fragment."""
    return (
        len(text.split()) <= _MAX_WORDS
        and not _CODE.search(text)
        and len(set(analyze([text])[0])) >= _MIN_TERMS
    )


def _param_descriptions(node: Any, out: list[str], depth: int = 0) -> None:
    if depth > 8 or not isinstance(node, Mapping):
        return
    props = node.get("properties")
    if isinstance(props, Mapping):
        for sub in props.values():
            if isinstance(sub, Mapping) and isinstance(sub.get("description"), str):
                out.extend(_sentences(sub["description"]))
            _param_descriptions(sub, out, depth + 1)
    _param_descriptions(node.get("items"), out, depth + 1)


def candidates(skill: Skill) -> list[tuple[str, Source]]:
    """Sentences of ``skill`` usable as its pseudo-query, with where each comes from.

    Body sentences and parameter descriptions of 3+ content words (40 words at most, no
    JSON or code fragment: a user does not type ``"to": "Required.``), and
    description sentences when the description has more than one (the description is never
    held out whole: the tool would be left with its name only). Repeats are dropped.
    """
    found: list[tuple[str, Source]] = []
    if skill.body:
        for line in skill.body.splitlines():  # strip_markdown joins lines: split first
            found += [(s, "body") for s in _sentences(strip_markdown(line))]
    params: list[str] = []
    _param_descriptions(skill.parameters, params)
    found += [(s, "params") for s in params]
    desc = _sentences(skill.description)
    if len(desc) > 1:
        found += [(s, "description") for s in desc]
    seen: set[str] = set()
    out = []
    for text, source in found:
        key = _norm(text)
        if key not in seen and _usable(text):
            seen.add(key)
            out.append((text, source))
    return out


def _cut_text(value: str, text: str) -> str:
    escaped = json.dumps(text, ensure_ascii=False)[1:-1]
    return value.replace(text, " ").replace(escaped, " ")


def _cut_schema(node: Any, text: str) -> Any:
    if isinstance(node, str):
        return _cut_text(node, text)
    if isinstance(node, Mapping):
        return {k: _cut_schema(v, text) for k, v in node.items()}
    if isinstance(node, list):
        return [_cut_schema(v, text) for v in node]
    return node


def indexed_text(skill: Skill) -> str:
    """Everything of ``skill`` that any recaller indexes (whole body), normalised."""
    fields = skill_fields(skill, body_chars=len(skill.body) + 1)
    return _norm(" ".join([*fields.values(), skill.body, skill.description]))


def hold_out(skill: Skill, text: str) -> Skill | None:
    """``skill`` with every occurrence of ``text`` removed, or ``None`` when that fails.

    ``None`` means the text survives somewhere the indexes read (changed spacing or markup);
    such a pseudo-query is not used.
    """
    held = dataclasses.replace(
        skill,
        description=_cut_text(skill.description, text),
        body=_cut_text(skill.body, text),
        parameters=_cut_schema(skill.parameters, text),
    )
    return None if _norm(text) in indexed_text(held) else held


def pseudo_queries(
    catalog: Catalog, *, seed: int = 0, limit: int = MAX_PSEUDO_QUERIES
) -> tuple[list[PseudoQuery], Catalog]:
    """Sample pseudo-queries and the held-out catalog copy they are scored against.

    Each sampled tool gives one pseudo-query (a seeded choice among its :func:`candidates`);
    at most ``limit`` tools are sampled. The copy keeps every tool in catalog order, with each
    pseudo-query's text removed from its own tool (:func:`hold_out`).

    Returns:
        The pseudo-queries (sorted by tool name) and the held-out catalog.
    """
    rng = random.Random(seed)
    usable = sorted((s for s in catalog if candidates(s)), key=lambda s: s.name)
    picked = rng.sample(usable, min(limit, len(usable)))
    held: dict[str, Skill] = {}
    queries = []
    for skill in sorted(picked, key=lambda s: s.name):
        text, source = rng.choice(candidates(skill))
        cut = hold_out(skill, text)
        if cut is None:
            continue
        held[skill.name] = cut
        queries.append(PseudoQuery(skill.name, text, source))
    copy = Catalog(tuple(held.get(s.name, s) for s in catalog))
    return queries, copy


def per_query(
    recaller: BM25Recaller | FusedRecaller, queries: Sequence[PseudoQuery]
) -> NDArray[np.float64]:
    """``[n, 2]``: each pseudo-query's nDCG@10 and reciprocal rank (top 100) of its own tool."""
    out = np.zeros((len(queries), 2))
    ranked = recaller.rank_batch([q.text for q in queries], 100) if queries else []
    for row, (query, cands) in enumerate(zip(queries, ranked, strict=True)):
        rank = next((c.rank for c in cands if c.name == query.skill), None)
        if rank is not None:
            out[row] = (1.0 / math.log2(rank + 1) if rank <= 10 else 0.0, 1.0 / rank)
    return out


def score(
    recaller: BM25Recaller | FusedRecaller, queries: Sequence[PseudoQuery]
) -> tuple[float, float]:
    """Mean nDCG@10 and MRR (over the top 100) of the pseudo-queries' own tools."""
    if not queries:
        return 0.0, 0.0
    ndcg, mrr = per_query(recaller, queries).mean(axis=0)
    return float(ndcg), float(mrr)


def confidence(gain: NDArray[np.float64], seed: int) -> float:
    """Share of :data:`BOOTSTRAP` paired resamples of per-query gains whose mean is > 0."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, len(gain), size=(BOOTSTRAP, len(gain)))
    return float((gain[rows].mean(axis=1) > 0).mean())


def _best(points: Sequence[tuple[NDArray[np.float64], T]], seed: int) -> tuple[int, T]:
    """The index and setting of the best point; the first (the default) unless beaten.

    Best is the highest mean nDCG@10, then MRR (the first best wins ties). It replaces the
    default only when it adds :data:`MIN_GAIN` nDCG@10 and a paired bootstrap over the
    pseudo-queries puts its gain above 0 with :data:`CONFIDENCE`.
    """
    means = [tuple(p.mean(axis=0)) for p, _ in points]
    best = max(range(len(points)), key=lambda i: means[i])  # first best wins ties
    gain = points[best][0][:, 0] - points[0][0][:, 0]
    if means[best][0] < means[0][0] + MIN_GAIN or confidence(gain, seed) < CONFIDENCE:
        return 0, points[0][1]
    return best, points[best][1]


def tune_steps(catalog: Catalog) -> int:
    """The ``total`` that :func:`tune_catalog` reports progress against."""
    return len(catalog) + len(FIELD_GRID) + len(LEXICAL_GRID)


def tune_catalog(
    catalog: Catalog,
    *,
    seed: int = 0,
    limit: int = MAX_PSEUDO_QUERIES,
    embedder: Embedder | None = None,
    progress: TuneProgress | None = None,
) -> Tuning:
    """Fit ``bm25``'s field weights and ``fused``'s lexical weight to ``catalog``, without labels.

    Args:
        catalog: the catalog to tune for.
        seed: seeds the pseudo-query sample (same catalog and seed, same tuning).
        limit: pseudo-queries at most.
        embedder: the sentence encoder of the dense half (default MiniLM).
        progress: ``progress(done, total)``.

    Returns:
        The tuning (defaults, when no setting beats them or no tool has usable text).
    """
    queries, held = pseudo_queries(catalog, seed=seed, limit=limit)
    total = tune_steps(held)
    report = progress or (lambda done, total: None)
    if not queries:
        logger.warning("no tool has a sentence usable as a pseudo-query; keeping the defaults")
        report(total, total)
        nothing = {"bm25": 0.0, "fused": 0.0, "fused_mrr": 0.0}
        return Tuning(
            catalog.version, dict(DEFAULT_FIELD_WEIGHTS), LEXICAL_WEIGHT, None, 0,
            nothing, nothing, seed,
        )  # fmt: skip
    dense = DenseRecaller.build(
        held,
        embedder or MiniLMEmbedder(),
        progress=lambda d, t: report(len(held) * d // max(t, 1), total),
    )
    dense.query_vectors([q.text for q in queries])  # embedded once; the grid reuses them
    done = len(held)
    lexical: list[tuple[NDArray[np.float64], dict[str, float]]] = []
    for weights in FIELD_GRID:
        lexical.append((per_query(BM25Recaller.build(held, weights=weights), queries), weights))
        done += 1
        report(done, total)
    chosen, weights = _best(lexical, seed)
    bm25 = BM25Recaller.build(held, weights=weights)
    fused: list[tuple[NDArray[np.float64], float]] = []
    for a in LEXICAL_GRID:
        fused.append((per_query(FusedRecaller(bm25, dense, lexical_weight=a), queries), a))
        done += 1
        report(done, total)
    picked, a = _best(fused, seed)
    before, before_mrr = score(FusedRecaller(BM25Recaller.build(held), dense), queries)
    after, after_mrr = (float(x) for x in fused[picked][0].mean(axis=0))
    bm25_before, bm25_after = (float(lexical[i][0][:, 0].mean()) for i in (0, chosen))
    return Tuning(
        catalog_version=catalog.version,
        field_weights=check_weights(weights),
        lexical_weight=a,
        floor=None,
        n_queries=len(queries),
        before={"bm25": bm25_before, "fused": before, "fused_mrr": before_mrr},
        after={"bm25": bm25_after, "fused": after, "fused_mrr": after_mrr},
        seed=seed,
    )


def tuning_path(cache_dir: Path | str, catalog: Catalog) -> Path:
    """Where the tuning of ``catalog`` lives: beside its indexes, in its version's folder."""
    return IndexStore(cache_dir).folder(catalog, "tuning", {}).parent / TUNING_FILE


def save_tuning(cache_dir: Path | str, catalog: Catalog, tuning: Tuning) -> Path:
    """Write ``tuning.json`` atomically (temporary file, then rename) and return its path.

    Raises:
        ConfigError: the tuning was made for another catalog version.
    """
    if tuning.catalog_version != catalog.version:
        raise ConfigError(
            f"this tuning was made for catalog {tuning.catalog_version!r}, not "
            f"{catalog.version!r}; run `maitred tune` on this catalog"
        )
    path = tuning_path(cache_dir, catalog)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tuning-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(tuning.to_json(), out, indent=1, sort_keys=True)
    os.replace(tmp, path)
    return path


def load_tuning(cache_dir: Path | str, catalog: Catalog) -> Tuning | None:
    """The stored tuning of this catalog version, or ``None``.

    A file that cannot be read, or that records another catalog version (copied by hand), is
    never used: it is reported with a warning naming the file, and ``None`` is returned, so
    recall falls back to the defaults.
    """
    path = tuning_path(cache_dir, catalog)
    if not path.is_file():
        return None
    try:
        tuning = Tuning.from_json(json.loads(path.read_text(encoding="utf-8")), str(path))
    except (OSError, ValueError, ConfigError) as exc:
        logger.warning("ignoring the stored tuning: %s", exc)
        return None
    if tuning.catalog_version != catalog.version:
        logger.warning(
            "ignoring the stored tuning %s: it was made for catalog %s, this catalog is %s",
            path,
            tuning.catalog_version,
            catalog.version,
        )
        return None
    return tuning
