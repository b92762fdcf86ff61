"""Deprecated: the records a turn produces live in :mod:`maitred.records`.

``maitred.decision`` held no ``Decision`` (that is :class:`maitred.actions.Decision`), so the
module was renamed (issue 34, one word per idea). This alias goes in the next release.
"""

from __future__ import annotations

import warnings

from maitred.records import (
    CAUSES,
    Cause,
    Message,
    PairRecord,
    RunInfo,
    TurnRecord,
    cause_of_text,
    cause_text,
)

warnings.warn(
    "maitred.decision is deprecated; import from maitred.records",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = [
    "CAUSES",
    "Cause",
    "Message",
    "PairRecord",
    "RunInfo",
    "TurnRecord",
    "cause_of_text",
    "cause_text",
]
