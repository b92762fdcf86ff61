"""Cached backbone states: ragged per-token arrays in one ``.npz`` file.

Training and evaluation never need gradients into the backbone, so each text's hidden states are
computed once and stored. A set of texts is stored as one ``[total_tokens, hidden]`` float16
matrix plus the offsets where each text starts (float16 halves the file; the maps are trained
in float32 on the upcast values). The file records the backbone id and layer; :func:`load_states`
refuses a file made by another backbone or at another layer.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from maitred.errors import IndexMismatchError


def save_states(
    path: Path,
    arrays: Sequence[NDArray[np.float32]],
    *,
    backbone_id: str,
    layer: int,
    keys: Sequence[str],
) -> None:
    """Write per-text states (``keys[i]`` names ``arrays[i]``) to ``path`` (``.npz``)."""
    hidden = arrays[0].shape[1] if arrays else 0
    flat = np.concatenate(list(arrays)) if arrays else np.zeros((0, hidden), np.float32)
    offsets = np.cumsum([0] + [len(a) for a in arrays]).astype(np.int64)
    meta = {"backbone_id": backbone_id, "layer": layer, "keys": list(keys)}
    path.parent.mkdir(parents=True, exist_ok=True)
    # a name of its own per writer: two processes caching the same states must not share one
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}.npz")
    try:
        np.savez(
            tmp, states=flat.astype(np.float16), offsets=offsets, meta=np.array(json.dumps(meta))
        )
        tmp.replace(path)  # atomic: a reader sees the old file or the whole new one
    finally:
        tmp.unlink(missing_ok=True)


def load_states(
    path: Path, *, backbone_id: str | None = None, layer: int | None = None
) -> tuple[list[str], list[NDArray[np.float32]]]:
    """Read what :func:`save_states` wrote: ``(keys, arrays)``.

    Raises:
        IndexMismatchError: the file was made by another backbone or at another layer.
    """
    with np.load(path) as data:
        meta = json.loads(str(data["meta"]))
        flat = data["states"].astype(np.float32)
        offsets = data["offsets"]
    for what, want in (("backbone_id", backbone_id), ("layer", layer)):
        if want is not None and meta[what] != want:
            raise IndexMismatchError(
                f"{path} holds states of {what} {meta[what]!r}, not {want!r}; recompute them"
            )
    arrays = [flat[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]
    return list(meta["keys"]), arrays
