"""The promise through ``maitred serve``: the same invariants, over HTTP, with two tenants.

A :class:`ServiceMachine` run is one deployment in process (the Starlette app over a
:class:`~maitred.serve.Service` over a real engine, a memory store and a SQLite log), two
tenants whose names are prefixes of each other (``acme`` and ``acme-eu``), and random
interleavings of turns and call checks (some with a commit the log refuses), world changes,
hot reloads (:meth:`Service.swap` to an engine over a changed catalog, same log) and restarts
(a new service on the same log, sessions gone).

Invariants, besides those of :mod:`tests.soundness.machine`: a session is the tenant's own (the
other tenant's requests for its id are 404), a tenant's funnel never opens another tenant's run,
and a request refused with 503 changes nothing a later request is decided on.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from starlette.testclient import TestClient

from maitred import Maitred
from maitred.log import open_log
from maitred.log.base import DecisionLog
from maitred.serve import Limits, Service, Tenant, create_app

from . import odd, spec
from .harness import Ledger, Store, Told, drop_pg, names_in, pg_location, refusing_commits
from .machine import OPTIONS

TOKENS = {"acme": "acme-token-0123456789", "acme-eu": "acme-eu-token-0123456789"}
OWNED = {"acme": ("acc-a", "acc-b"), "acme-eu": ("eu-1",)}
ACCOUNTS = tuple(a for owned in OWNED.values() for a in owned)
LIMITS = Limits(max_body_bytes=1 << 17, max_sessions=200, session_idle_s=3600)
#: the longest id, in characters, a request may carry (serve's own limit)
MAX_ID_CHARS = 128


def tenants() -> dict[str, Tenant]:
    return {
        name: Tenant(name, hashlib.sha256(TOKENS[name].encode()).hexdigest(), frozenset(owned))
        for name, owned in OWNED.items()
    }


def auth(tenant: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[tenant]}"}


@dataclass(frozen=True)
class Domain:
    refused_turns: bool = False
    unknown_tools: bool = False
    run_peeks: bool = False
    untyped: bool = False
    odd_bytes: bool = False


CORE = Domain()
FULL = Domain(refused_turns=True, unknown_tools=True, run_peeks=True, untyped=True)


class ServiceMachine(RuleBasedStateMachine):
    domain: Domain = CORE
    #: a PostgreSQL server URL: the log is a fresh schema of it (None: a SQLite file)
    postgres: str | None = None
    #: what the odd rule saw, over every run of the class (a test asserts both outcomes)
    seen: ClassVar[Counter[str]] = Counter()

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="maitred-soundness-serve-"))
        self.log_path: Path | str = self.dir / "log.sqlite"
        if self.postgres is not None:
            self.log_path = pg_location(self.postgres)
        self.odd_sessions = 0
        self.log: DecisionLog = open_log(self.log_path)
        self.world = spec.World()
        self.store = Store(self.world)
        self.offers: dict[tuple[str, str], frozenset[str]] = {}
        self.turn_ids: dict[tuple[str, str], str] = {}
        self.accounts: dict[tuple[str, str], str] = {}
        self.ledger = Ledger()
        self.generation = 0
        self.client: TestClient | None = None

    @initialize(catalog=spec.catalogs(), data=st.data())
    def start(self, catalog: spec.CatalogSpec, data: st.DataObject) -> None:
        self.catalog = catalog
        for account in ACCOUNTS:
            self.world.roots[account] = {"account", "repo"}
            self.world.accounts[account] = {
                k: data.draw(spec.raw_values(k, untyped=self.domain.untyped)) for k in spec.FIELDS
            }
        self.store.refresh()
        self.service = Service(self._engine(), tenants(), LIMITS)
        self._serve()
        for tenant, sid, account in (("acme", "s1", "acc-a"), ("acme-eu", "s1", "eu-1")):
            self._turn(tenant, sid, account, refused=False)

    def _engine(self) -> Maitred:
        self.generation += 1
        tools = spec.write_catalog(self.dir / f"catalog-{self.generation}", self.catalog)
        return Maitred.open(
            [str(tools)], self.store, OPTIONS, log=self.log, cache_dir=self.dir / "cache",
            clock=lambda: self.world.now,
        )  # fmt: skip

    def _serve(self) -> None:
        if self.client is not None:
            self.client.__exit__(None, None, None)
        self.client = TestClient(create_app(self.service, LIMITS), raise_server_exceptions=False)
        self.client.__enter__()

    def teardown(self) -> None:
        if self.client is not None:
            self.client.__exit__(None, None, None)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        if isinstance(self.log_path, str):
            drop_pg(self.log_path)

    def _http(self) -> TestClient:
        assert self.client is not None
        return self.client

    # -- the world -------------------------------------------------------------------------------

    @rule(account=st.sampled_from(ACCOUNTS), key=st.sampled_from(sorted(spec.FIELDS)),
          data=st.data())  # fmt: skip
    def world_change(self, account: str, key: str, data: st.DataObject) -> None:
        values = self.world.accounts[account]
        if data.draw(st.booleans()):
            values[key] = data.draw(spec.raw_values(key, untyped=self.domain.untyped))
        else:
            values.pop(key, None)
        self.store.refresh()

    # -- turns and calls -------------------------------------------------------------------------

    @rule(tenant=st.sampled_from(sorted(OWNED)), sid=st.sampled_from(["s1", "s2"]),
          data=st.data())  # fmt: skip
    def answer_turn(self, tenant: str, sid: str, data: st.DataObject) -> None:
        known = self.accounts.get((tenant, sid))
        account = known or data.draw(st.sampled_from(OWNED[tenant]))
        refused = self.domain.refused_turns and data.draw(st.booleans())
        self._turn(tenant, sid, account, refused)

    def _turn(self, tenant: str, sid: str, account: str, refused: bool) -> None:
        body = {"text": spec.message_for(self.catalog), "account": account, "session_id": sid}
        with refusing_commits(self.log_path) if refused else nullcontext():
            r = self._http().post("/v1/turns", json=body, headers=auth(tenant))
        if refused:
            assert r.status_code == 503, r.text
            if (tenant, sid) in self.accounts:  # a client that calls on after the 503
                for name in sorted(self.catalog.names):
                    self._check(tenant, sid, name, 0, refused=False)
            return
        assert r.status_code == 200, r.text
        turn = r.json()
        tools = self.catalog.by_name()
        wrong = [t for t in turn["exposed"] if not spec.executable(tools[t], account, self.world)]
        assert not wrong, f"stage 2 offered {wrong} to {account}, which cannot run now"
        self.offers[(tenant, sid)] = frozenset(turn["exposed"])
        self.turn_ids[(tenant, sid)] = turn["turn_id"]
        self.accounts[(tenant, sid)] = account
        self.ledger.turns.add(turn["turn_id"])

    @precondition(lambda self: bool(self.accounts))
    @rule(data=st.data(), n=st.integers(0, 6), refused=st.booleans())
    def call(self, data: st.DataObject, n: int, refused: bool) -> None:
        tenant, sid = data.draw(st.sampled_from(sorted(self.accounts)))
        offer = sorted(self.offers.get((tenant, sid), ()))
        pool = spec.NAMES if self.domain.unknown_tools else sorted(self.catalog.names)
        name = data.draw(st.sampled_from(offer if offer and data.draw(st.booleans()) else pool))
        self._check(tenant, sid, name, n, refused)

    def _check(self, tenant: str, sid: str, name: str, n: int, refused: bool) -> None:
        body = {"session_id": sid, "call": {"name": name, "arguments": {"n": n}, "id": "c1"}}
        with refusing_commits(self.log_path) if refused else nullcontext():
            r = self._http().post("/v1/calls/check", json=body, headers=auth(tenant))
        if refused:  # 404: the session is gone (a restart), so there was nothing to commit
            assert r.status_code in (503, 404), r.text
            return
        if r.status_code == 404:  # the session is gone (a restart): nothing was decided
            return
        assert r.status_code == 200, r.text
        self._decided(tenant, sid, name, n, r.json())

    def _decided(self, tenant: str, sid: str, name: str, n: int, out: dict[str, Any]) -> None:
        account = self.accounts[(tenant, sid)]
        offer = self.offers.get((tenant, sid))
        if out["allow"]:
            tool = self.catalog.by_name().get(name)
            assert spec.allowed(tool, {"n": n}, account, self.world, offer), (
                f"allowed {name} for {tenant}/{sid}: not in its last committed offer "
                f"{sorted(offer or ())} or cannot run now"
            )
        else:
            said = f"{out['message_for_model']}\n{out['tool_result']}"
            leaked = names_in(said, self.catalog.names) - (offer or set()) - {name}
            assert not leaked, f"a {out['code']} rejection names unoffered {leaked}"
        self.ledger.told.append(
            Told(out["decision_id"], sid, out["turn_id"] or "", name, out["allow"])
        )

    # -- adversarial bytes (issue 27) ----------------------------------------------------------

    @precondition(lambda self: self.domain.odd_bytes)
    @rule(tenant=st.sampled_from(sorted(OWNED)), data=st.data())
    def odd_turn(self, tenant: str, data: st.DataObject) -> None:
        """A turn, then a check, whose fields may hold NULs, lone surrogates, 4-byte characters
        or long runs, sent as JSON text with ``\\u`` escapes (as a client would): a 4xx for
        what no log can hold (or serve does not accept), else 200 and stored exactly."""
        self.odd_sessions += 1
        fields = data.draw(st.sets(st.sampled_from(["text", "sid", "account"]), max_size=2))
        text = data.draw(odd.texts()) if "text" in fields else spec.message_for(self.catalog)
        sid = data.draw(odd.ids()) if "sid" in fields else f"odd-{self.odd_sessions}-\U0001f600"
        account = data.draw(odd.ids()) if "account" in fields else OWNED[tenant][0]
        refused = (
            odd.has_bad_char(text) or odd.has_bad_char(sid) or len(sid) > MAX_ID_CHARS
            or "account" in fields  # not the tenant's, whatever it holds
        )  # fmt: skip
        body = {"text": text, "account": account, "session_id": sid}
        r = self._post("/v1/turns", body, tenant)
        if refused:
            assert 400 <= r.status_code < 500 and r.status_code != 413, r.text[:300]
            self.seen["turn refused"] += 1
            return
        assert r.status_code == 200, r.text[:300]
        turn = r.json()
        self.ledger.turns.add(turn["turn_id"])
        self._stored_turn(turn["turn_id"], sid, text)
        self.seen["turn stored"] += 1
        name = data.draw(odd.ids()) if data.draw(st.booleans()) else sorted(self.catalog.names)[0]
        n: int | str = data.draw(st.one_of(st.integers(0, 6), odd.texts()))
        refused = odd.has_bad_char(name) or len(name) > MAX_ID_CHARS
        refused = refused or (isinstance(n, str) and odd.has_bad_char(n))
        call = {"session_id": sid, "call": {"name": name, "arguments": {"n": n}, "id": "c1"}}
        r = self._post("/v1/calls/check", call, tenant)
        if refused:
            assert 400 <= r.status_code < 500 and r.status_code != 413, r.text[:300]
            self.seen["call refused"] += 1
            return
        assert r.status_code == 200, r.text[:300]
        out = r.json()
        self.ledger.told.append(Told(out["decision_id"], sid, out["turn_id"] or "", name,
                                     out["allow"]))  # fmt: skip
        self.log.flush()
        row = next(d for d in self.log.iter_action_decisions()
                   if d["decision_id"] == out["decision_id"])  # fmt: skip
        assert (row["tool"], row["session_id"]) == (name, sid)
        assert json.loads(row["decision_json"])["call"]["arguments"] == {"n": n}
        self.seen["call stored"] += 1

    def _post(self, path: str, body: dict[str, Any], tenant: str) -> Any:
        raw = json.dumps(body).encode()  # ASCII: \\u0000, \\ud800, surrogate pairs
        headers = {**auth(tenant), "Content-Type": "application/json"}
        return self._http().post(path, content=raw, headers=headers)

    def _stored_turn(self, turn_id: str, sid: str, text: str) -> None:
        self.log.flush()
        row = next(t for t in self.log.iter_turns() if t["turn_id"] == turn_id)
        assert (row["conversation_id"], row["message_text"]) == (sid, text)
        if odd.astral(sid + text):
            self.seen["4-byte characters stored"] += 1

    # -- tenants ---------------------------------------------------------------------------------

    @precondition(lambda self: bool(self.accounts))
    @rule(data=st.data())
    def other_tenant(self, data: st.DataObject) -> None:
        """The other tenant asks for this session: 404, exactly as for an id never used."""
        tenant, sid = data.draw(st.sampled_from(sorted(self.accounts)))
        other = next(t for t in OWNED if t != tenant)
        if (other, sid) in self.accounts:
            return  # both use this id: each has its own session of that name
        body = {"session_id": sid, "call": {"name": sorted(self.catalog.names)[0],
                                             "arguments": {"n": 0}}}  # fmt: skip
        r = self._http().post("/v1/calls/check", json=body, headers=auth(other))
        assert r.status_code == 404, f"{other} reached {tenant}'s session {sid}: {r.text}"

    @precondition(lambda self: self.domain.run_peeks)
    @rule(tenant=st.sampled_from(sorted(OWNED)))
    def peek_run(self, tenant: str) -> None:
        """A tenant's token never opens another tenant's funnel, however the names look."""
        for other, run in self.service.run_ids.items():
            if other == tenant:
                continue
            r = self._http().get("/v1/funnel", params={"run_id": run}, headers=auth(tenant))
            assert r.status_code == 404, f"{tenant} read {other}'s run {run}: {r.text}"

    # -- reloads and restarts --------------------------------------------------------------------

    @rule(data=st.data())
    def reload(self, data: st.DataObject) -> None:
        tools = list(self.catalog.tools)
        i = data.draw(st.integers(0, len(tools) - 1))
        tools[i] = replace(tools[i], preds=(data.draw(spec.preds(f"{tools[i].name}_v2")),))
        self.catalog = spec.CatalogSpec(tuple(tools))
        self.service.swap(self._engine())

    @rule()
    def restart(self) -> None:
        self.service = Service(self._engine(), tenants(), LIMITS)
        self._serve()  # the sessions' last committed offers stay what they were (the spec)

    @invariant()
    def on_record(self) -> None:
        if self.client is None:
            return
        self.log.flush()
        problems = self.ledger.problems(self.log)
        assert not problems, "\n".join(problems)


class CoreServiceMachine(ServiceMachine):
    domain = CORE


class FullServiceMachine(ServiceMachine):
    domain = FULL


class OddServiceMachine(ServiceMachine):
    domain = Domain(odd_bytes=True)
