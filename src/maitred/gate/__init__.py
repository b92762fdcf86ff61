"""Stage 2: the deterministic executability gate."""

from maitred.records import CAUSES, Cause
from maitred.gate.executability import (
    ExecutabilityGate,
    GateOutcome,
    GateResult,
    require_coverage,
)

__all__ = ["CAUSES", "Cause", "ExecutabilityGate", "GateOutcome", "GateResult", "require_coverage"]
