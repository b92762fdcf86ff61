"""Authoritative state: the per-turn snapshot, the provider interface and its implementations.

A provider answers one question per turn -- "these keys, for this account, now" -- in one batched
:meth:`StateProvider.fetch`, and returns a :class:`Snapshot` (see :mod:`maitred.state.snapshot`).
The implementations: :class:`MemoryStateProvider` and :class:`JsonStateProvider` (documents),
:class:`SqlStateProvider` (SQLite / PostgreSQL tables), :class:`CallableStateProvider` (your own
functions); :func:`open_provider` builds one from a configuration string.
"""

from maitred.state.callables import CallableStateProvider
from maitred.state.memory import JsonStateProvider, MemoryStateProvider
from maitred.state.registry import (
    ProviderScheme,
    open_provider,
    provider_schemes,
    register_provider,
)
from maitred.state.snapshot import Snapshot, StateProvider
from maitred.state.sql import SqlStateProvider, TableSpec

__all__ = [
    "CallableStateProvider",
    "JsonStateProvider",
    "MemoryStateProvider",
    "ProviderScheme",
    "Snapshot",
    "SqlStateProvider",
    "StateProvider",
    "TableSpec",
    "open_provider",
    "provider_schemes",
    "register_provider",
]
