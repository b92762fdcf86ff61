"""Fixtures: a fresh copy of the tiny database per test, one gate per session."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from maitred.actions import ActionGate
from maitred.actions.packs import tau2_airline

from .builders import NOW, make_db


@pytest.fixture
def db() -> dict[str, Any]:
    return copy.deepcopy(make_db())


@pytest.fixture(scope="session")
def gate() -> ActionGate:
    return tau2_airline.make_gate({"now": NOW})
