"""Counterfactual replay: re-ask a model about logged turns with the gate switched off."""

from maitred.replay.cohort import COHORTS, Cohort, ReplayTurn, sample
from maitred.replay.fanout import ModelSpec, RayFanout, ThreadFanout
from maitred.replay.models import ChoiceModel, LocalGGUFModel, OpenAICompatibleModel, make_model
from maitred.replay.prompt import MenuItem
from maitred.replay.run import Fanout, ReplayOutcome, ReplayReport, ask, replay

__all__ = [
    "COHORTS",
    "ChoiceModel",
    "Cohort",
    "Fanout",
    "LocalGGUFModel",
    "MenuItem",
    "ModelSpec",
    "OpenAICompatibleModel",
    "RayFanout",
    "ReplayOutcome",
    "ReplayReport",
    "ReplayTurn",
    "ThreadFanout",
    "ask",
    "make_model",
    "replay",
    "sample",
]
