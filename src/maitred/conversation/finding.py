"""``find_tools``, discovery as a tool (the gateway's ``disclosure: find_tools`` mode): what it
takes and what it answers. The routing itself is :meth:`maitred.conversation.Conversation.find`.

**What it takes.** ``need`` (one sentence) and/or ``needs`` (one sentence per step of a task,
at most :data:`MAX_NEEDS` in all); each need holds text and at most :data:`MAX_NEED_CHARS`
characters. :data:`FIND_TOOLS_SCHEMA` says so to the model, and :func:`read_needs` enforces it
before anything is routed: a call that breaks it is refused (``ARGS_MISSING`` when no need is
given at all, ``ARGS_INVALID`` otherwise), the field at fault named, nothing routed; the refusal
is a logged decision on the ``find_tools`` call, like every refusal
(:meth:`~maitred.conversation.Conversation.refuse`).

**What it answers.** One need (``need`` alone) is answered as it always was (:func:`answer_for`):
the tools it disclosed -- each with what the model needs to call it: name, description, the
upstream's input schema as listed -- the matching tools the gate blocked, the turn's id.
The answer is the disclosure: the tool list does not change (a list is a function of who asks
and the state now), and the turn, logged under the caller's
holder, is what later calls to those tools are admitted against, on any replica. Several needs are
answered per need, in the order given (:func:`per_need`): each need's own answer, where a tool
already listed for an earlier need of the call is not listed again -- its name is in that
need's ``listed_above`` instead -- so the model reads each tool's description once and still
sees which needs it serves. The needs of one call are ranked together as one task
(:mod:`maitred.recall.steps`): the MCP servers the whole task points to weigh in, and each
need's top ``k`` are tools the earlier needs did not bring (a tool they did bring stays
below, and may still be listed above when the gate hides a fresher one). A blocked tool is
named under every need that matched it.
Every answer that disclosed a tool also says how to call it through ``call_tool``
(``call_with``).

**Calling what was found** (``call_tool``, its name :data:`CALL_TOOL` unless the gateway
config's ``find.call_tool`` names another). Agent frameworks let the model call only the tools
``tools/list`` shows, and in this mode the list is ``find_tools`` and ``call_tool`` and never
changes; so a disclosed tool is also called through ``call_tool(name, arguments)``.
:func:`unwrap` is the rule: a ``call_tool`` call *is* the call ``name(arguments)``, rewritten
before anything decides, so it takes the one path of a direct call -- the same principal,
limits, holds, check, approval, task and logged decision, and the upstream's result as it
is. The wrapper itself is refused only when it does not say which call it is
(:data:`CALL_TOOL_SCHEMA`): no ``name`` (``ARGS_MISSING``), a ``name`` that is no text
(``TOOL_UNKNOWN``, as a direct call naming no text gets), ``arguments`` that are not an
object, another key beside the two, or ``call_tool`` naming itself (``ARGS_INVALID``),
the field at fault named. A ``name`` no upstream lists is the gate's ``TOOL_UNKNOWN``; the
target's arguments meet the target's schema as a direct call's do (``ARGS_INVALID`` naming
the field under the target's own arguments).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from maitred.actions.model import ARGS_INVALID, ARGS_MISSING, TOOL_UNKNOWN, Hold
from maitred.actions.refusals import invalid_arguments
from maitred.gate.executability import SCOPES
from maitred.pipeline import Turn
from maitred.skills.model import Catalog

#: the tool the gateway adds in ``find_tools`` disclosure mode
FIND_TOOLS = "find_tools"
#: the tool the gateway adds beside it, to call a disclosed tool by name (its default name)
CALL_TOOL = "call_tool"
#: the most needs one call may carry (``need`` and ``needs`` together)
MAX_NEEDS = 8
#: the longest need, in characters
MAX_NEED_CHARS = 1000


def find_tools_description(call_tool: str = CALL_TOOL) -> str:
    """What ``find_tools`` tells the model, naming the ``call_tool`` beside it."""
    return (
        "Find the tools for a task. The catalog is too large to list: describe in a sentence "
        "what you need to do (`need`), or, for a task of several steps, one sentence per step "
        f"(`needs`, at most {MAX_NEEDS}). The answer lists, per need, the tools that fit and "
        "can run for this account now, each with its input schema: run one with "
        f"`{call_tool}` (its `name`, and its `arguments` as that schema says; the tool list "
        "itself does not change). Call it again for another need."
    )


FIND_TOOLS_DESCRIPTION = find_tools_description()


def call_tool_description(find_tools: str = FIND_TOOLS) -> str:
    """What ``call_tool`` tells the model."""
    return (
        f"Run a tool that `{find_tools}` found: give its `name` and its `arguments` (an "
        "object meeting the tool's input schema, as the answer listed it). The result is the "
        f"tool's own. A tool `{find_tools}` did not give you cannot be run: find it first."
    )


#: the input schema of ``call_tool``: the target's name, and its arguments as one object
#: (the target's own schema is checked when the call is decided, as a direct call's)
CALL_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {
            "type": "string",
            "description": f"The name of a tool that {FIND_TOOLS} found.",
        },
        "arguments": {
            "type": "object",
            "description": "The tool's arguments, as its input schema says ({} for none).",
        },
    },
    "required": ["name"],
    "additionalProperties": False,
}
_ONE_NEED: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": MAX_NEED_CHARS}
#: the input schema of ``find_tools``: ``need`` or ``needs`` (or both), none required by the
#: schema itself because JSON Schema's ``anyOf`` at the top is refused by some model APIs;
#: :func:`read_needs` refuses a call that gives neither
FIND_TOOLS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "need": {
            **_ONE_NEED,
            "description": "What you need to do, in one sentence. Give this or `needs`.",
        },
        "needs": {
            "type": "array",
            "items": _ONE_NEED,
            "minItems": 1,
            "maxItems": MAX_NEEDS,
            "description": "Several needs at once, one sentence each (the steps of a task); "
            "each is answered with its own tools, and a tool already listed for an earlier "
            "need is not listed again. Give this or `need`.",
        },
    },
    "additionalProperties": False,
}


def read_needs(arguments: Mapping[str, Any]) -> str | tuple[str, ...] | Hold:
    """The needs a ``find_tools`` call carries, or the refusal of a call that breaks
    :data:`FIND_TOOLS_SCHEMA`.

    Returns:
        ``need`` alone as a string (answered in the one-need shape); otherwise a tuple of the
        needs in order, ``need`` first when both are given (answered per need); a ``null``
        field counts as absent.
    """
    need, needs = arguments.get("need"), arguments.get("needs")
    if need is None and needs is None:
        return _refusal("no need was given", "need", "needs", code=ARGS_MISSING)
    if need is not None:
        fault = _need_fault(need)
        if fault:  # a blank need alone is no need at all, as it always was: ARGS_MISSING
            blank = needs is None and isinstance(need, str) and not need.strip()
            return _refusal(f"'need' {fault}", "need", code=ARGS_MISSING if blank else ARGS_INVALID)
        if needs is None:
            return str(need)
    if not isinstance(needs, list):
        return _refusal("'needs' must be a list of sentences", "needs")
    if not needs:
        return _refusal("'needs' is an empty list", "needs")
    given = ([need] if need is not None else []) + needs
    if len(given) > MAX_NEEDS:
        return _refusal(f"{len(given)} needs were given, at most {MAX_NEEDS} are taken", "needs")
    for at, item in enumerate(needs):
        fault = _need_fault(item)
        if fault:
            return _refusal(f"'needs[{at}]' {fault}", f"needs[{at}]")
    return tuple(str(n) for n in given)


def _need_fault(need: Any) -> str:
    """What is wrong with one need (``""``: nothing)."""
    if not isinstance(need, str):
        return f"must be a sentence (a string), not {type(need).__name__}"
    if not need.strip():
        return "is blank"
    if len(need) > MAX_NEED_CHARS:
        return f"holds {len(need)} characters, at most {MAX_NEED_CHARS} are taken"
    return ""


def _refusal(what: str, *fields: str, code: str = ARGS_INVALID) -> Hold:
    return invalid_arguments(
        f"{FIND_TOOLS}: {what}; give 'need' (a sentence saying what you need to do) or "
        f"'needs' (1 to {MAX_NEEDS} such sentences, one per step)",
        fields,
        code=code,
    )


def unwrap(
    name: str, arguments: Mapping[str, Any], call_tool: str
) -> tuple[str, dict[str, Any]] | Hold | None:
    """The call a ``call_tool`` call stands for (see the module docstring).

    Args:
        name: the tool the client called.
        arguments: what it sent that tool.
        call_tool: the name of ``call_tool`` here (``""``: there is none, not in
            ``find_tools`` mode).

    Returns:
        ``None`` when ``name`` is not ``call_tool`` (a direct call, decided as it is); else the
        target's ``(name, arguments)``, or the :class:`Hold` refusing a wrapper that does not
        say which call it is (logged as a decision on the ``call_tool`` call).
    """
    if not call_tool or name != call_tool:
        return None
    extra = sorted(k for k in arguments if k not in ("name", "arguments"))
    if extra:
        return _call_refusal(
            f"{extra[0]!r} is not an argument of {call_tool}; put the tool's own arguments "
            "under 'arguments'",
            *extra,
        )
    target, given = arguments.get("name"), arguments.get("arguments")
    if target is None:
        return _call_refusal("no tool was named", "name", code=ARGS_MISSING)
    if not isinstance(target, str):
        return _call_refusal(
            f"'name' must be a tool's name (a string), not {type(target).__name__}",
            "name",
            code=TOOL_UNKNOWN,
        )
    if target == call_tool:
        return _call_refusal(f"{call_tool} cannot run itself", "name")
    if given is None:
        return target, {}
    if not isinstance(given, Mapping):
        return _call_refusal(
            f"'arguments' must be an object (the tool's arguments by name), not "
            f"{type(given).__name__}",
            "arguments",
        )
    return target, dict(given)


def _call_refusal(what: str, *fields: str, code: str = ARGS_INVALID) -> Hold:
    return invalid_arguments(
        f"{what}; give 'name' (a tool {FIND_TOOLS} found) and 'arguments' (an object)",
        fields,
        code=code,
    )


def answer_for(
    need: str,
    turn: Turn,
    catalog: Catalog,
    upstream_of: Callable[[str], str],
    call_tool: str = CALL_TOOL,
) -> dict[str, Any]:
    """The answer to one need: the tools its turn disclosed (name, description, input schema
    and upstream), the matching tools the gate blocked with the predicates' messages, the
    turn id, and (when it disclosed any) how to run one through ``call_tool``.

    A tool the caller's scopes do not reach is not named at all.
    """
    answer: dict[str, Any] = {
        "need": need,
        "tools": [
            {
                "name": n,
                "description": catalog[n].description,
                "inputSchema": dict(catalog[n].parameters or {"type": "object"}),
                "upstream": upstream_of(n),
            }
            for n in turn.exposed
        ],
        "blocked": [
            {
                "name": b["skill"],
                "why": [p["message"] or p["predicate"] for p in b["predicates"]]
                or [b["cause"] or "not executable now"],
            }
            for b in turn.to_json()["blocked"]
            if not any(p["predicate"] == SCOPES for p in b["predicates"])
        ],
        "turn_id": turn.turn_id,
    }
    if not turn.exposed:
        answer["hint"] = "no tool that can run now fits this need; describe it differently"
    elif call_tool:
        answer["call_with"] = call_with(call_tool)
    return answer


def call_with(call_tool: str) -> str:
    """How an answer says to run what it found."""
    return (
        f'{call_tool} with {{"name": <a tool above>, "arguments": <an object meeting its '
        "inputSchema>}"
    )


def per_need(answers: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Several needs' answers (from :func:`answer_for`, in need order) as one: ``{"needs":
    [...]}``, each disclosed tool listed under the first need that found it; a later need that
    found it too names it in ``listed_above``. What the gate blocked stays with every need
    that matched it, so each need says why a tool it asked for is not there; how to run what
    was found (``call_with``) is said once, beside the needs."""
    shown: set[str] = set()
    out: list[dict[str, Any]] = []
    how = ""
    for answer in answers:
        found = [t["name"] for t in answer["tools"]]
        how = how or answer.get("call_with", "")
        out.append(
            {
                **{k: v for k, v in answer.items() if k != "call_with"},
                "tools": [t for t in answer["tools"] if t["name"] not in shown],
                "listed_above": [n for n in found if n in shown],
            }
        )
        shown.update(found)
    return {"needs": out, "call_with": how} if how else {"needs": out}
