"""Stage 5, the action gate: deterministic policy checks before a mutating tool call runs.

* :mod:`.model` -- :class:`ToolCall` in, :class:`Decision` out (data, never exceptions);
* :mod:`.rules` -- a catalog's tools with their call policies (predicates over ``args.*``,
  ``state.*``, ``session.*``; :func:`policy_rule`, :func:`cel_rule`), as one :class:`Rulebook`;
* :mod:`.gate` -- :class:`ActionGate`, pure and read-only, fail-closed for mutating calls;
* :mod:`.session` -- what a session read (:class:`Session`, :func:`must_read_before_write`);
* :mod:`.wrap` -- the gate in front of a function, a registry, an OpenAI/Anthropic loop;
* :mod:`.packs` -- policy packs by name (``tau2-airline``);
* :mod:`.sim` -- a policy-permissive airline simulator, database generator and tasks;
* :mod:`.replay` -- shadow replay of recorded trajectories.

The gate never calls a model and never writes. Decisions are not yet written to the decision
log: :meth:`Decision.to_json` is the row it will take.
"""

from maitred.actions.document import ActionState, DocumentState, SnapshotState
from maitred.actions.gate import ActionGate
from maitred.actions.model import Approval, Decision, ToolCall
from maitred.actions.rules import (
    PolicyPredicate,
    Rulebook,
    ToolRules,
    Tracking,
    Violation,
    cel_rule,
    policy_rule,
)
from maitred.actions.session import Session, must_read_before_write
from maitred.actions.wrap import GatedRegistry, Outcome, gate_tool

__all__ = [
    "ActionGate",
    "ActionState",
    "Approval",
    "Decision",
    "DocumentState",
    "GatedRegistry",
    "Outcome",
    "PolicyPredicate",
    "Rulebook",
    "Session",
    "SnapshotState",
    "ToolCall",
    "ToolRules",
    "Tracking",
    "Violation",
    "cel_rule",
    "gate_tool",
    "must_read_before_write",
    "policy_rule",
]
