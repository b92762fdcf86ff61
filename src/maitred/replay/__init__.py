"""Counterfactual replay: re-ask a model about logged turns with the gate switched off."""

from maitred.replay.cohort import COHORTS, Cohort, ReplayTurn, sample
from maitred.replay.models import (
    ChoiceModel,
    LocalGGUFModel,
    MenuItem,
    OpenAICompatibleModel,
    make_model,
)
from maitred.replay.run import ReplayOutcome, ReplayReport, ask, replay

__all__ = [
    "COHORTS",
    "ChoiceModel",
    "Cohort",
    "LocalGGUFModel",
    "MenuItem",
    "OpenAICompatibleModel",
    "ReplayOutcome",
    "ReplayReport",
    "ReplayTurn",
    "ask",
    "make_model",
    "replay",
    "sample",
]
