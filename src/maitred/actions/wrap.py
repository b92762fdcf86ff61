"""Put the action gate in front of tools: a function, a registry, an OpenAI/Anthropic loop.

Every wrapper does the same four things per call: build a :class:`ToolCall`, ask the gate
(with the *current* state, fetched per call, and the session), and then either return the
rejection as the tool result -- the tool never runs -- or run the tool and record the success
in the session. A call to a tool the registry does not have, or that was not offered this turn,
goes through the gate like any other and is rejected by it (``TOOL_UNKNOWN``,
``TOOL_NOT_OFFERED``, ``TOOL_NOT_EXECUTABLE``): hiding a tool from the menu is not what stops it.

The OpenAI and Anthropic helpers take the provider's tool-call objects (SDK objects or plain
dicts) and return the messages/blocks to append to the conversation; they import no SDK. A
call whose arguments are not a JSON object (a model's malformed output) is refused
``ARGS_INVALID`` and recorded like any refusal, its arguments withheld
(:meth:`GatedRegistry.refuse_arguments`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from maitred.actions.document import ActionState
from maitred.actions.gate import ActionGate
from maitred.actions.model import Decision, ToolCall
from maitred.actions.refusals import invalid_arguments
from maitred.actions.session import Session
from maitred.actions.sink import DecisionSink
from maitred.errors import ConfigError
from maitred.state.snapshot import Snapshot

StateSource = Callable[[], ActionState | Snapshot | Mapping[str, Any]]


@dataclass(frozen=True)
class Outcome:
    """What one gated call gave: the decision, and the tool's result when it ran."""

    decision: Decision
    result: Any = None
    error: str = ""

    @property
    def ran(self) -> bool:
        return self.decision.allow

    def content(self) -> Any:
        """What the model should see: the result, the tool error, or the rejection."""
        if self.decision.reject:
            return self.decision.tool_result()
        if self.error:
            return {"error": self.error}
        return self.result


class GatedRegistry:
    """Tools by name behind one gate.

    Args:
        tools: name -> callable taking the arguments as keywords.
        gate: the action gate.
        state: returns the current state (called once per call, before the check).
        session: the session to check against and record into.
        offered: the tool names offered this turn (``None``: no menu restriction).
        log: where this registry records its decisions (a decision log or another sink), for a
            gate shared without one; a gate that has its own ``log`` already records them.

    Raises:
        ConfigError: both the gate and the registry were given a log (each decision would be
            recorded twice).
    """

    def __init__(
        self,
        tools: Mapping[str, Callable[..., Any]],
        gate: ActionGate,
        state: StateSource,
        session: Session,
        offered: Collection[str] | None = None,
        *,
        log: DecisionSink | None = None,
    ) -> None:
        if log is not None and gate.log is not None:
            raise ConfigError(
                "GatedRegistry(log=...) was given a log, but its gate records to its own log "
                "already; pass the log to one of them only"
            )
        self.tools, self.gate, self.state, self.session = dict(tools), gate, state, session
        self.offered = offered
        self.log = log
        self.decisions: list[Decision] = []

    def call(self, name: str, arguments: Mapping[str, Any], call_id: str = "") -> Outcome:
        """Check and (if allowed) run one call. Tool exceptions become ``Outcome.error``."""
        tc = ToolCall(name, dict(arguments), call_id)
        decision = self.gate.check(tc, self.state(), self.session, offered=self.offered)
        self.decisions.append(decision)
        if self.log is not None:
            self.log.write_decisions((decision,))
        if decision.reject:
            return Outcome(decision)
        tool = self.tools.get(name)
        if tool is None:  # allowed by a policy that knows it, but nothing here implements it
            return Outcome(decision, error=f"tool {name!r} is not implemented here")
        try:
            result = tool(**tc.arguments)
        except Exception as exc:
            return Outcome(decision, error=f"{type(exc).__name__}: {exc}")
        self.session.record(tc, result, self.gate.rulebook.tracking)
        return Outcome(decision, result)

    def refuse_arguments(self, name: str, call_id: str = "") -> Outcome:
        """A call whose arguments are not a JSON object (a model's malformed output): refused
        (``ARGS_INVALID``) and recorded like any refusal, the arguments withheld (they are no
        JSON object the log could hold as one); the tool never runs."""
        why = "the arguments are not a JSON object; send them as one object of named values"
        hold = invalid_arguments(why, reason=f"{why}. The arguments as sent are withheld")
        decision = self.gate.refuse(ToolCall(name, {}, call_id), hold, self.session)
        self.decisions.append(decision)
        if self.log is not None:
            self.log.write_decisions((decision,))
        return Outcome(decision)

    def openai_tool_messages(self, tool_calls: Any) -> list[dict[str, Any]]:
        """Run an OpenAI chat message's ``tool_calls``; return the ``role: tool`` messages."""
        out = []
        for tc in tool_calls or ():
            fn = _get(tc, "function")
            raw = _get(fn, "arguments") or "{}"
            args = _decode(raw)
            cid = str(_get(tc, "id") or "")
            name = str(_get(fn, "name"))
            outcome = (
                self.call(name, args, cid)
                if isinstance(args, dict)
                else self.refuse_arguments(name, cid)
            )
            out.append({"role": "tool", "tool_call_id": cid, "content": _text(outcome.content())})
        return out

    def anthropic_tool_results(self, content_blocks: Any) -> list[dict[str, Any]]:
        """Run the ``tool_use`` blocks of an Anthropic response; return ``tool_result`` blocks
        (rejections and tool errors carry ``is_error: true``)."""
        out = []
        for block in content_blocks or ():
            if _get(block, "type") != "tool_use":
                continue
            cid = str(_get(block, "id") or "")
            name, given = str(_get(block, "name")), _get(block, "input")
            outcome = (
                self.call(name, dict(given or {}), cid)
                if given is None or isinstance(given, Mapping)
                else self.refuse_arguments(name, cid)
            )
            out.append(
                {
                    "type": "tool_result",
                    "tool_use_id": cid,
                    "content": _text(outcome.content()),
                    "is_error": outcome.decision.reject or bool(outcome.error),
                }
            )
        return out


def gate_tool(
    fn: Callable[..., Any],
    gate: ActionGate,
    state: StateSource,
    session: Session,
    name: str | None = None,
) -> Callable[..., Any]:
    """Wrap a plain tool function: a rejected call returns the rejection dict instead of
    running ``fn``; an allowed one runs it (exceptions propagate) and is recorded."""
    tool_name = name or fn.__name__

    @functools.wraps(fn)
    def gated(**arguments: Any) -> Any:
        tc = ToolCall(tool_name, arguments)
        decision = gate.check(tc, state(), session)
        if decision.reject:
            return decision.tool_result()
        result = fn(**arguments)
        session.record(tc, result, gate.rulebook.tracking)
        return result

    return gated


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def _decode(raw: Any) -> Any:
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        return json.loads(raw)
    except (TypeError, json.JSONDecodeError):
        return None


def _text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, default=str)
