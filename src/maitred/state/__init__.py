"""Authoritative state: providers and the per-turn snapshot (see :mod:`maitred.state.snapshot`)."""

from maitred.state.snapshot import Snapshot, StateProvider

__all__ = ["Snapshot", "StateProvider"]
