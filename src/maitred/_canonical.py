"""Canonical JSON and the versioned content hash used for catalogs, snapshots and log rows.

Canonical form: keys sorted, no insignificant whitespace, UTF-8, floats in Python's shortest
round-trip repr, NaN and infinities refused. The hash is ``"<scheme>:<hex>"`` so that a later
scheme can be introduced without making old hashes ambiguous; `verify` recomputes with the
scheme named in the stored value.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

HASH_SCHEME = "c1"


def canonical_json(value: Any) -> str:
    """Serialise ``value`` to canonical JSON text."""
    return json.dumps(
        value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
        default=_default,
    )


def content_hash(value: Any, scheme: str = HASH_SCHEME) -> str:
    """The versioned hash of ``value``'s canonical JSON (``c1:`` + sha256 hex)."""
    if scheme != HASH_SCHEME:
        raise ValueError(f"unknown hash scheme {scheme!r}; this maitred knows {HASH_SCHEME!r}")
    digest = hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
    return f"{scheme}:{digest}"


def text_hash(text: str) -> str:
    """The versioned hash of a piece of source text (predicate source, expression)."""
    return f"{HASH_SCHEME}:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _default(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"value of type {type(value).__name__} is not JSON-serialisable: {value!r}")
