"""A forged "pre-chain" disclosure on a ``find_tools`` gateway's SQLite log (issue 35 item 1).

In ``find_tools`` mode a session is offered everything its committed turns disclosed. Three
plain INSERTs (:mod:`tests.log.forgery`) -- a run without a row hash, a turn of the session
without a chain position, one exposed pair naming ``get_plan`` -- made the restarted gateway
forward a call to ``get_plan`` that nothing had disclosed: the upstream executed it, and
``maitred log verify`` said OK. Now the guards refuse the run and the turn (the pair alone is a
leftover to ``verify``); behind guards switched off and on again, ``verify`` reports the rows
and the call is refused before the upstream.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.log.forgery import Forgery, each_refused, forge
from tests.mcp.conftest import Site
from tests.mcp.conftest import site as site  # the gateway fixture
from tests.mcp.test_find_tools import _find_mode, find
from tests.mcp.test_gateway import rejection, run_gateway

from maitred.log.base import open_log
from maitred.log.verify import verify


def _session(site: Site) -> tuple[str, str, str]:
    """(tenant, session id, account) of the session's find_tools turns, as logged."""
    with open_log(str(site.log), read_only=True) as log:
        (turn,) = [t for t in log.iter_turns() if t["message_text"] != "tools/list"]
    return str(turn["tenant"]), str(turn["conversation_id"]), str(turn["account_id"])


@pytest.mark.parametrize("guards", ["standing", "switched off and on"])
def test_a_forged_disclosure_is_refused_before_the_upstream_and_reported(
    site: Site, guards: str
) -> None:
    _find_mode(site)
    codes: list[str] = []

    async def before(client: Any, seen: list[Any]) -> None:
        report = await find(client, "export the yearly report")  # the free plan: nothing
        assert report["tools"] == []
        early = await client.call_tool("get_plan", {"account": "acc-1"}, raise_on_error=False)
        codes.append(rejection(early)["code"])

    async def after(client: Any, seen: list[Any]) -> None:
        late = await client.call_tool("get_plan", {"account": "acc-1"}, raise_on_error=False)
        codes.append(rejection(late)["code"] if late.is_error else "OK")

    run_gateway(site, before)
    forgery = Forgery(*_session(site), tool="get_plan")
    if guards == "standing":
        errors = each_refused(site.log, forgery)
        assert [e.split(":")[0] for e in errors] == ["runs", "turns"], errors
        assert all("chained rows only" in e for e in errors), errors
    else:
        forge(site.log, forgery, guards_off=True)
    run_gateway(site, after)  # a restart: the session's disclosures are read from the log
    assert codes == ["TOOL_NOT_OFFERED", "TOOL_NOT_OFFERED"]
    assert site.upstream_calls() == []  # never executed
    report = verify(str(site.log))
    if guards == "standing":  # the pair went in alone: no turn owns it
        assert [(m.kind, m.key) for m in report.mismatches] == [("leftover", "pairs")], report
        return
    found = {(m.kind, m.key) for m in report.mismatches}
    assert {("unchained", "forged-run"), ("unchained", "forged-run/m1")} <= found, found
