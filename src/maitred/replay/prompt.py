"""What a replay shows a model: the menu items and the routing prompt, shared by every
:class:`~maitred.replay.models.ChoiceModel` (the endpoint, llama.cpp and the native extra's)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class MenuItem:
    """One skill as a replay shows it to a model."""

    name: str
    description: str


SYSTEM = (
    "You are the skill router of a website builder's customer-care assistant. Given the "
    "customer's latest message, pick the one skill that should handle it, or none if no "
    "skill fits. Skills:\n"
)


def menu_text(menu: Sequence[MenuItem]) -> str:
    """The menu as lines of ``- name: description``."""
    return "\n".join(f"- {m.name}: {m.description}" for m in menu)
