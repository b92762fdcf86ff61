"""Stage 2: the deterministic executability gate."""

from maitred.gate.executability import ExecutabilityGate, GateOutcome, GateResult

__all__ = ["ExecutabilityGate", "GateOutcome", "GateResult"]
