"""Stage 2: the deterministic executability gate."""

from maitred.gate.executability import (
    ExecutabilityGate,
    GateOutcome,
    GateResult,
    require_coverage,
)
from maitred.records import CAUSES, Cause

__all__ = ["CAUSES", "Cause", "ExecutabilityGate", "GateOutcome", "GateResult", "require_coverage"]
