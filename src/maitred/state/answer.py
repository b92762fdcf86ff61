"""What a state provider's answer must be before a gate reads it, and the clock rule.

A gate decides on a :class:`~maitred.state.snapshot.Snapshot` it did not build: any provider,
the user's own included, made it. :func:`accept` is the one check between the two, run on
every state read of both gates (:func:`maitred.gate.executability.fetch_keys`). An answer that
is not a snapshot (``None``, a dict), one for another account, one whose fields have the wrong
types, or one that leaves a requested key unanswered (neither a value nor listed in
``missing``: an unknown account answered as an empty dict looks like that) is refused with a
:class:`~maitred.errors.ProviderError` naming what was wrong -- so the gate fails closed with
the cause ``state_unavailable``, exactly as when the provider raised. A provider that cannot
say what it knows has not answered.

**Clocks.** A key dated ahead of the gate's clock by more than ``skew_s`` seconds (a store's
``updated_at`` in the future: a clock that runs ahead, a local time stored as UTC, a typo) has
an age nobody knows, so it is never fresh: the key is marked in ``Snapshot.invalid`` with the
reason ("dated 3600 s ahead of the gate's clock"), and every predicate reading it is an
evaluation error, which holds (hides at stage 2, refuses at stage 5), whatever its
``on_stale``. Within the skew a key counts as current (age 0): two clocks a little apart are
normal. Only per-key dates (``key_as_of``, what a store's update column gives) are judged;
``as_of`` is the reader's own clock.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Any

from maitred.errors import ProviderError
from maitred.state.snapshot import Snapshot

#: how far (seconds) a key's date may run ahead of the gate's clock and still count as current
DEFAULT_CLOCK_SKEW_S = 300.0


def accept(answer: Any, account: str, keys: Collection[str], now: float, skew_s: float) -> Snapshot:
    """``answer`` as the snapshot a gate may read for ``account`` and ``keys`` at ``now``.

    Raises:
        ProviderError: the answer is not a usable snapshot (see the module docstring).
    """
    where = f"state provider answer for account {account!r}"
    if not isinstance(answer, Snapshot):
        raise ProviderError(
            f"{where}: got {type(answer).__name__}, not a Snapshot; a provider returns a "
            "Snapshot listing every requested key as a value or in missing (or raises)"
        )
    if answer.account != account:
        raise ProviderError(f"{where}: the snapshot is for account {answer.account!r}")
    values, missing = answer.values, answer.missing
    if not isinstance(values, Mapping) or not all(isinstance(k, str) for k in values):
        raise ProviderError(f"{where}: values is {type(values).__name__}, not a dict of keys")
    if isinstance(missing, (str, bytes)) or not isinstance(missing, Collection):
        raise ProviderError(f"{where}: missing is {type(missing).__name__}, not a set of keys")
    if not _finite(answer.as_of):
        raise ProviderError(f"{where}: as_of is {answer.as_of!r}, not unix seconds")
    dates = answer.key_as_of
    if not isinstance(dates, Mapping) or not all(_finite(v) for v in dates.values()):
        raise ProviderError(f"{where}: key_as_of must map keys to unix seconds, not {dates!r}")
    if answer.account_found not in (True, False, None) or not isinstance(answer.invalid, Mapping):
        raise ProviderError(f"{where}: account_found or invalid has the wrong type")
    unanswered = [k for k in keys if k not in values and k not in missing]
    if unanswered:
        raise ProviderError(
            f"{where}: no value and not listed as missing: {', '.join(sorted(unanswered)[:5])}; "
            "a provider answers every requested key (an unknown account: every key missing "
            "and account_found=False)"
        )
    ahead = {k: t - now for k, t in dates.items() if k in keys and t - now > skew_s}
    if not ahead and type(missing) is frozenset:
        return answer
    invalid = dict(answer.invalid)
    for key, by in ahead.items():
        invalid.setdefault(
            key,
            f"dated {by:.0f} s ahead of the gate's clock (more than the allowed clock skew of "
            f"{skew_s:g} s): its age is unknown, so it is never fresh",
        )
    return replace(answer, missing=frozenset(missing), invalid=invalid, hash="")


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
