"""Stage 2 and stage 5 agree, by table: every kernel outcome x fail mode x ``mutates``.

For the same tool, the same state and the same time, "hidden at stage 2" must hold exactly when
"rejected as not executable at stage 5" does (``TOOL_NOT_EXECUTABLE``, or ``STATE_UNAVAILABLE``
for the cause ``state_unavailable``), and both must be what the kernel's rule table says
(:mod:`maitred.contract.kernel`). Each case runs on a real engine (:meth:`Maitred.open` over a
memory state provider, BM25 recall, a SQLite decision log):

1. a first session is routed on good state, so its committed turn offers the tool;
2. the state then becomes the case's state (a sync job, an outage, a deleted account);
3. stage 2: a second session is routed on that state -- is the tool hidden?
4. stage 5: the first session calls the tool -- the offer holds, so only the executability step
   can refuse it. Is it refused as not executable?
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Literal

import pytest

from maitred import Maitred, PipelineOptions, ToolCall
from maitred.context import CallContext
from maitred.contract import CelPredicate, Contract
from maitred.errors import ProviderError
from maitred.skills.model import Catalog, Skill
from maitred.state import MemoryStateProvider
from maitred.state.snapshot import Snapshot, StateProvider

NOW = 1_800_000_000.0
ACCOUNT = "acc-1"
TOOL = "assign_seats"
TEXT = "assign seats to the team members"
NOT_EXECUTABLE = {"TOOL_NOT_EXECUTABLE", "STATE_UNAVAILABLE"}

Outcome = Literal[
    "ok_not_holding",
    "ok_holding",
    "missing_key",
    "stale_key",
    "evaluation_error",
    "account_not_found",
    "state_unavailable",
]
OUTCOMES: tuple[Outcome, ...] = (
    "ok_not_holding",
    "ok_holding",
    "missing_key",
    "stale_key",
    "evaluation_error",
    "account_not_found",
    "state_unavailable",
)


def expected_hidden(outcome: Outcome, fail_mode: str) -> bool:
    """The kernel's rule table, written out independently of the engine."""
    if outcome in ("missing_key", "stale_key"):
        return fail_mode == "block"
    return outcome != "ok_not_holding"


class Switch:
    """A provider whose backing memory provider the test swaps (the world changing)."""

    def __init__(self, current: StateProvider) -> None:
        self.current = current

    def fetch(self, account: str, keys: Collection[str]) -> Snapshot:
        return self.current.fetch(account, keys)


class Down:
    """A state store that is down."""

    def fetch(self, account: str, keys: Collection[str]) -> Snapshot:
        raise ProviderError("connection refused (the state store is down)")


def _memory(
    accounts: Mapping[str, Any], key_as_of: Mapping[str, Mapping[str, float]] | None = None
) -> MemoryStateProvider:
    return MemoryStateProvider(dict(accounts), key_as_of=key_as_of, clock=lambda: NOW)


GOOD = {ACCOUNT: {"account": {"seats": 1, "plan": "team"}}}


def state_for(outcome: Outcome) -> StateProvider:
    """The state each outcome is produced by (the predicate is ``100 / seats < 10``)."""
    if outcome == "ok_not_holding":
        return _memory(GOOD)
    if outcome == "ok_holding":
        return _memory({ACCOUNT: {"account": {"seats": 50, "plan": "team"}}})
    if outcome == "missing_key":
        return _memory({ACCOUNT: {"account": {"plan": "team"}}})
    if outcome == "stale_key":
        return _memory(GOOD, {ACCOUNT: {"account.seats": NOW - 3600}})
    if outcome == "evaluation_error":
        return _memory({ACCOUNT: {"account": {"seats": 0, "plan": "team"}}})
    if outcome == "account_not_found":
        return _memory({"someone-else": GOOD[ACCOUNT]})
    return Down()


def _engine(
    tmp_path: Path, fail_mode: Literal["block", "offer"], mutates: bool
) -> tuple[Maitred, Switch]:
    predicate = CelPredicate(
        "100 / account.seats < 10",
        "too_many_seats",
        ("account.seats",),
        on_missing=fail_mode,
        on_stale=fail_mode,
        max_age_s=600,
        message="The team already has too many seats.",
    )
    tools = (
        Skill(
            TOOL,
            "Assign seats to the team members.",
            kind="tool",
            contract=Contract(mutates=mutates, exit_predicates=(predicate,)),
        ),
        Skill("read_invoice", "Read the latest invoice.", kind="tool", contract=Contract()),
    )
    switch = Switch(_memory(GOOD))
    engine = Maitred.open(
        Catalog(tools),
        switch,
        PipelineOptions(method="bm25", top_k=5),
        log=str(tmp_path / "log.sqlite"),
        clock=lambda: NOW,
    )
    return engine, switch


@pytest.mark.parametrize("mutates", [True, False], ids=["mutating", "read-only"])
@pytest.mark.parametrize("fail_mode", ["block", "offer"])
@pytest.mark.parametrize("outcome", OUTCOMES)
def test_hidden_at_stage_2_iff_not_executable_at_stage_5(
    tmp_path: Path, outcome: Outcome, fail_mode: Literal["block", "offer"], mutates: bool
) -> None:
    engine, switch = _engine(tmp_path, fail_mode, mutates)
    with engine:
        offered = engine.session(ACCOUNT)
        assert TOOL in engine.turn(TEXT, session=offered).exposed  # good state: offered

        switch.current = state_for(outcome)
        fresh = engine.session(ACCOUNT)
        turn = engine.turn(TEXT, session=fresh)
        assert turn.gate is not None
        assert TOOL in [o.skill for o in turn.gate.outcomes]  # it was a candidate
        hidden = TOOL not in turn.exposed

        decision = engine.check(ToolCall(TOOL, {}), session=offered)
        refused = decision.code in NOT_EXECUTABLE
        again = engine.check(ToolCall(TOOL, {}), session=fresh)

    assert hidden == expected_hidden(outcome, fail_mode)
    assert refused == hidden, (decision.code, decision.message)
    assert decision.allow == (not hidden)
    assert again.allow == (not hidden)  # the session that saw the hiding cannot call it
    gate_cause = next(o.cause for o in turn.gate.outcomes if o.skill == TOOL)
    assert getattr(decision, "cause", None) == gate_cause  # one cause, both stages
    if outcome == "state_unavailable":
        assert decision.code == "STATE_UNAVAILABLE"
    elif hidden:
        assert decision.code == "TOOL_NOT_EXECUTABLE"


# -- the scope rule: who is asking, decided by the same kernel ---------------------------------

REQUIRES = {
    "none": frozenset(),
    "write": frozenset({"seats:write"}),
    "both": frozenset({"seats:write", "seats:admin"}),
}
GRANTS: dict[str, frozenset[str] | None] = {
    "not said": None,
    "nothing": frozenset(),
    "write": frozenset({"seats:write"}),
    "write+admin": frozenset({"seats:write", "seats:admin", "billing:read"}),
    "other": frozenset({"billing:read"}),
}


def expected_scope_hidden(requires: frozenset[str], granted: frozenset[str] | None) -> bool:
    """The scope rule, written out independently of the kernel."""
    return granted is not None and not requires <= granted


def _scoped_engine(
    tmp_path: Path, requires: frozenset[str], mutates: bool
) -> tuple[Maitred, Switch]:
    predicate = CelPredicate(
        "100 / account.seats < 10", "too_many_seats", ("account.seats",), max_age_s=600
    )
    tools = (
        Skill(
            TOOL,
            "Assign seats to the team members.",
            kind="tool",
            contract=Contract(mutates=mutates, exit_predicates=(predicate,), scopes=requires),
        ),
        Skill("read_invoice", "Read the latest invoice.", kind="tool", contract=Contract()),
    )
    switch = Switch(_memory(GOOD))
    engine = Maitred.open(
        Catalog(tools),
        switch,
        PipelineOptions(method="bm25", top_k=5),
        log=str(tmp_path / "log.sqlite"),
        clock=lambda: NOW,
    )
    return engine, switch


@pytest.mark.parametrize("mutates", [True, False], ids=["mutating", "read-only"])
@pytest.mark.parametrize("outcome", ["ok_not_holding", "ok_holding", "state_unavailable"])
@pytest.mark.parametrize("granted", list(GRANTS))
@pytest.mark.parametrize("requires", list(REQUIRES))
def test_scopes_hide_at_stage_2_iff_refused_at_stage_5(
    tmp_path: Path, requires: str, granted: str, outcome: Outcome, mutates: bool
) -> None:
    needs, holds = REQUIRES[requires], GRANTS[granted]
    context = CallContext(granted=holds)
    engine, switch = _scoped_engine(tmp_path, needs, mutates)
    with engine:
        offered = engine.session(ACCOUNT)  # offered the tool by a caller that did not say
        assert TOOL in engine.turn(TEXT, session=offered).exposed

        switch.current = state_for(outcome)
        fresh = engine.session(ACCOUNT)
        turn = engine.turn(TEXT, session=fresh, context=context)
        assert turn.gate is not None
        gate = next(o for o in turn.gate.outcomes if o.skill == TOOL)
        hidden = TOOL not in turn.exposed

        decision = engine.check(ToolCall(TOOL, {}), session=offered, context=context)
        again = engine.check(ToolCall(TOOL, {}), session=fresh, context=context)
        verdict = engine.executable(TOOL, engine.read_state(ACCOUNT, [TOOL]), context=context)
        assert engine.log is not None
        logged = [d for d in engine.log.iter_action_decisions() if d["tool"] == TOOL]

    by_scope = expected_scope_hidden(needs, holds)
    assert hidden == (by_scope or expected_hidden(outcome, "block"))
    assert verdict == (not hidden)  # the watch's probe is the same kernel
    assert (gate.missing_scopes != frozenset()) == by_scope
    if by_scope:  # who is asking is decided before the state: nothing else is said
        assert holds is not None
        assert gate.missing_scopes == needs - holds
        assert [o.predicate for o in gate.fired] == ["scopes"] and gate.cause is None
        assert decision.code == again.code == "INSUFFICIENT_SCOPE"  # offered or not
        assert decision.fired[0].predicate == "scopes"
        assert all(s in decision.message_for_model for s in needs - holds)
        assert TOOL not in decision.message_for_model
        assert {d["code"] for d in logged} == {"INSUFFICIENT_SCOPE"}
    else:  # the scope rule passed: the state decides, exactly as without scopes
        assert decision.allow == (not hidden)
        assert decision.code in ({"OK"} if not hidden else NOT_EXECUTABLE)
        assert again.allow == (not hidden)
        assert all(o.predicate != "scopes" for o in decision.outcomes)


def test_a_call_out_of_scope_reads_no_state(tmp_path: Path) -> None:
    """An INSUFFICIENT_SCOPE call is refused before the state is read, and a turn reads no
    state for tools its caller may not see: a store that is down changes neither answer."""
    engine, switch = _scoped_engine(tmp_path, REQUIRES["write"], True)
    with engine:
        switch.current = Down()
        session = engine.session(ACCOUNT)
        context = CallContext(granted=frozenset({"billing:read"}))
        turn = engine.turn(TEXT, session=session, context=context)
        decision = engine.check(ToolCall(TOOL, {}), session=session, context=context)
    assert turn.record.provider_error == ""  # nothing that reads state was a candidate it read
    assert decision.code == "INSUFFICIENT_SCOPE"
    assert "STATE_UNAVAILABLE" not in decision.message
