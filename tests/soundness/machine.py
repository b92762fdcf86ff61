"""The library-level soundness machine: random interleavings against a real engine and log.

One :class:`LibraryMachine` run is a catalog drawn from :func:`~tests.soundness.spec.catalogs`,
a world of three accounts in a memory store, one real SQLite decision log, and up to three
sessions. Hypothesis then interleaves: state changes (values set, removed, made stale; an
account deleted; the store going down and up), turns, calls, turns and calls whose commit
fails, restarts (the engine reopened on the same log; sessions looked up again by id) and hot
reloads (a changed catalog, the same log, the same sessions).

After every step the invariants of the promise are checked:

* every turn's menu holds only tools the reference model finds executable on that state;
* every allow is for a tool in that session's last *committed* offer whose predicates do not
  fire on the state read, with valid arguments that no policy rejects (:func:`spec.allowed`);
* stage 2 and stage 5 agree: a call to an offered tool is allowed exactly when a turn on the
  same state would show it;
* a rejection never names a tool the session was not offered (besides the one it called);
* every decision returned is in the log with its turn, and ``log verify`` passes.

A *domain* says which inputs a run may draw: ``CORE`` is the part of the promise today's code
keeps (typed values, accounts that exist, a store that answers, calls to catalog tools);
``FULL`` adds untyped values (SQLite 0/1, junk), unknown accounts, the store going down and
calls to tools that do not exist (made-up names, or a tool a reload removed after the session
was offered it) -- the inputs behind issue 16's defects.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from maitred import Maitred, PipelineOptions
from maitred.actions.session import Session
from maitred.errors import MaitredError, UnstorableError

from . import odd, spec
from .harness import (
    Ledger,
    Store,
    Told,
    drop_pg,
    names_in,
    payload_text,
    pg_location,
    refusing_commits,
)

ACCOUNTS = ("acc-a", "acc-b", "acc-c")
OPTIONS = PipelineOptions(method="bm25", top_k=20)


@dataclass(frozen=True)
class Domain:
    untyped: bool = False
    unknown_accounts: bool = False
    outages: bool = False
    unknown_tools: bool = False  # also: a reload drops a tool a session was offered
    odd_bytes: bool = False  # turns and calls with NULs, lone surrogates, 4-byte chars, long ids


CORE = Domain()
FULL = Domain(untyped=True, unknown_accounts=True, outages=True, unknown_tools=True)


class LibraryMachine(RuleBasedStateMachine):
    domain: Domain = CORE
    #: a PostgreSQL server URL: the log is a fresh schema of it (None: a SQLite file)
    postgres: str | None = None
    #: what the odd rules saw, over every run of the class (a test asserts it exercised both)
    seen: ClassVar[Counter[str]] = Counter()

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="maitred-soundness-"))
        self.log_path: Path | str = self.dir / "log.sqlite"
        if self.postgres is not None:
            self.log_path = pg_location(self.postgres)
        self.odd_sessions = 0
        self.world = spec.World()
        self.store = Store(self.world)
        self.engine: Maitred | None = None
        self.sessions: dict[str, Session] = {}
        self.offers: dict[str, frozenset[str] | None] = {}
        self.turn_ids: dict[str, str] = {}
        self.ledger = Ledger()
        self.generation = 0
        self.steps_since_open = 0

    # -- set-up -------------------------------------------------------------------------------

    @initialize(catalog=spec.catalogs(), data=st.data())
    def start(self, catalog: spec.CatalogSpec, data: st.DataObject) -> None:
        self.catalog = catalog
        for account in ACCOUNTS:
            self.world.roots[account] = {"account", "repo"}
            self.world.accounts[account] = {
                k: data.draw(spec.raw_values(k, untyped=self.domain.untyped)) for k in spec.FIELDS
            }
        self.store.refresh()
        self._open()
        for sid, account in (("s1", "acc-a"), ("s2", "acc-b")):
            self._turn(sid, account, refused=False)

    def _open(self) -> None:
        self.generation += 1
        self.steps_since_open = 0
        tools = spec.write_catalog(self.dir / f"catalog-{self.generation}", self.catalog)
        self.engine = Maitred.open(
            [str(tools)],
            self.store,
            OPTIONS,
            log=str(self.log_path),
            cache_dir=self.dir / "cache",
            clock=lambda: self.world.now,
        )

    def teardown(self) -> None:
        if self.engine is not None:
            self.engine.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        if isinstance(self.log_path, str):
            drop_pg(self.log_path)

    # -- the world changes ---------------------------------------------------------------------

    @rule(data=st.data())
    def world_change(self, data: st.DataObject) -> None:
        """One change of the world: a value set or removed, a row made old, time passing."""
        kind = data.draw(st.sampled_from(["set", "remove", "touch", "tick"]))
        account = data.draw(st.sampled_from(ACCOUNTS))
        key = data.draw(st.sampled_from(sorted(spec.FIELDS)))
        w = self.world
        if kind == "set":
            w.accounts[account][key] = data.draw(spec.raw_values(key, untyped=self.domain.untyped))
        elif kind == "remove":
            w.accounts[account].pop(key, None)
        elif kind == "touch":
            age = data.draw(st.sampled_from([0.0, 120.0, 7200.0]))
            w.stamps.setdefault(account, {})[key.partition(".")[0]] = w.now - age
        else:
            w.now += data.draw(st.sampled_from([30.0, 600.0]))
        self.store.refresh()

    @precondition(lambda self: self.domain.unknown_accounts)
    @rule(account=st.sampled_from(ACCOUNTS[:2]), keep=st.sampled_from(["", "account", "repo"]))
    def delete_rows(self, account: str, keep: str) -> None:
        """The account keeps one table's row, or none (then it does not exist)."""
        self.world.roots[account] = {keep} if keep else set()
        self.store.refresh()

    @precondition(lambda self: self.domain.outages)
    @rule()
    def outage(self) -> None:
        """The store goes down, or comes back."""
        self.world.down = not self.world.down

    # -- turns ---------------------------------------------------------------------------------

    @rule(sid=st.sampled_from(["s1", "s2", "s3"]), account=st.sampled_from(ACCOUNTS),
          refused=st.booleans(), data=st.data())  # fmt: skip
    def answer_turn(self, sid: str, account: str, refused: bool, data: st.DataObject) -> None:
        """A turn, then (most of the time) the model's call to one tool of any name."""
        self._turn(sid, account, refused)
        session = self.sessions[sid]
        if data.draw(st.booleans()):
            names = sorted(spec.NAMES if self.domain.unknown_tools else self.catalog.names)
            self._call(session, data.draw(st.sampled_from(names)), data.draw(st.integers(-1, 6)),
                       data.draw(st.booleans()))  # fmt: skip

    def _turn(self, sid: str, account: str, refused: bool) -> None:
        engine = self._engine()
        session = self.sessions.get(sid)
        if session is None:
            session = self.sessions[sid] = engine.session(account, id=f"{sid}-{self.generation}")
            self.offers[session.id] = None
        try:
            with refusing_commits(self.log_path) if refused else nullcontext():
                turn = engine.turn(spec.message_for(self.catalog), session=session)
        except MaitredError:
            assert refused, "a turn failed although its commit was not refused"
            return
        assert not refused, "a turn was answered although its commit failed"
        self._check_menu(turn.exposed, session.account)
        self.offers[session.id] = frozenset(turn.exposed)
        self.turn_ids[session.id] = turn.turn_id
        self.ledger.turns.add(turn.turn_id)

    def _check_menu(self, exposed: tuple[str, ...], account: str) -> None:
        tools = self.catalog.by_name()
        wrong = [t for t in exposed if not spec.executable(tools[t], account, self.world)]
        assert not wrong, f"stage 2 offered {wrong} to {account}, which cannot run now"

    # -- calls ---------------------------------------------------------------------------------

    @precondition(lambda self: bool(self.sessions))
    @rule(data=st.data(), n=st.integers(-1, 6), refused=st.booleans())
    def call(self, data: st.DataObject, n: int, refused: bool) -> None:
        """A call: mostly to a tool the session's last turn offered (where allows come from),
        else to any tool (one the catalog lacks too, in the full domain)."""
        session = self.sessions[data.draw(st.sampled_from(sorted(self.sessions)))]
        offer = sorted(self.offers.get(session.id) or ())
        if offer and data.draw(st.booleans()):
            name = data.draw(st.sampled_from(offer))
        else:
            names = sorted(spec.NAMES if self.domain.unknown_tools else self.catalog.names)
            name = data.draw(st.sampled_from(names))
        self._call(session, name, n, refused)

    @precondition(lambda self: any(self.offers.get(s.id) for s in self.sessions.values()))
    @rule(data=st.data())
    def call_every_offered(self, data: st.DataObject) -> None:
        """The model calls each tool it was shown, whatever changed since the turn."""
        sessions = sorted((s for s in self.sessions.values() if self.offers.get(s.id)),
                          key=lambda s: s.id)  # fmt: skip
        session = data.draw(st.sampled_from(sessions))
        for name in sorted(self.offers[session.id] or ()):
            self._call(session, name, 0, False)

    def _call(self, session: Session, name: str, n: int, refused: bool) -> None:
        engine = self._engine()
        args: dict[str, Any] = {"n": n} if n >= 0 else {"n": "many"}
        try:
            with refusing_commits(self.log_path) if refused else nullcontext():
                decision = engine.check({"name": name, "arguments": args}, session=session)
        except MaitredError:
            assert refused, "a call check failed although its commit was not refused"
            return
        assert not refused, "a call check was answered although its commit failed"
        offer = self.offers.get(session.id)
        tool = self.catalog.by_name().get(name)
        if decision.allow:
            assert spec.allowed(tool, args, session.account, self.world, offer), (
                f"allowed {name}({args}) for {session.account}: the model says it may not run "
                f"(last committed offer {sorted(offer or ())})"
            )
            assert decision.turn_id == self.turn_ids.get(session.id), "allow names another turn"
        else:
            leaked = names_in(payload_text(decision), self.catalog.names) - (offer or set())
            assert leaked <= {name}, f"a {decision.code} rejection names unoffered {leaked}"
        self.ledger.told.append(
            Told(decision.decision_id, session.id, decision.turn_id, name, decision.allow)
        )
        decided = decision.code != "TOOL_NOT_OFFERED"  # the engine's session knew the offer
        if tool is not None and offer is not None and name in offer and n >= 0 and decided:
            self._agree(tool, session.account, decision.allow or decision.code == "N_TOO_LARGE")

    def _agree(self, tool: spec.ToolSpec, account: str, runs: bool) -> None:
        """Stage 2 on the same state must say what stage 5 said about ``tool``."""
        probe = self._engine().turn(spec.message_for(self.catalog), account=account)
        self.ledger.turns.add(probe.turn_id)
        self._check_menu(probe.exposed, account)
        if tool.name in probe.exposed:
            assert runs, f"stage 2 shows {tool.name} to {account}, stage 5 refuses it"
        elif tool.name in {b.skill for b in probe.record.blocked}:
            assert not runs, f"stage 2 hides {tool.name} from {account}, stage 5 allows it"

    # -- adversarial bytes (issue 27) ----------------------------------------------------------

    @precondition(lambda self: self.domain.odd_bytes)
    @rule(data=st.data())
    def odd_turn(self, data: st.DataObject) -> None:
        """A turn in a new session whose text, session id, account or message id may hold what
        no log can store, or 4-byte characters and long runs that it must store exactly; then
        a call in that session whose tool name, arguments or call id may be as odd."""
        self.odd_sessions += 1
        fields = data.draw(st.sets(st.sampled_from(["text", "sid", "account", "id"]), max_size=2))
        text = spec.message_for(self.catalog)
        text = data.draw(odd.texts()) if "text" in fields else text
        sid = data.draw(odd.ids()) if "sid" in fields else f"odd-{self.odd_sessions}-\U0001f600"
        account = data.draw(odd.ids() if "account" in fields else st.sampled_from(ACCOUNTS))
        msg_id = data.draw(odd.ids()) if "id" in fields else None
        want = odd.combine(
            "\x00" in text,
            odd.id_verdict(sid),
            odd.id_verdict(account),
            None if msg_id is None else odd.id_verdict(msg_id),
        )
        engine = self._engine()
        log = engine.log
        assert log is not None
        before = self._logged_turns()
        session = engine.session(account, id=sid)
        try:
            turn = engine.turn(text, session=session, id=msg_id)
        except UnstorableError:
            assert want is not False, f"refused a storable turn {text[:40]!r} in {sid[:40]!r}"
            assert self._logged_turns() == before, "a refused turn's rows are in the log"
            self.seen["turn refused"] += 1
            return
        assert want is not True, f"logged an unstorable turn {text[:40]!r} in {sid[:40]!r}"
        self.ledger.turns.add(turn.turn_id)
        log.flush()
        row = next(t for t in log.iter_turns() if t["turn_id"] == turn.turn_id)
        assert (row["conversation_id"], row["account_id"]) == (sid, account)
        assert msg_id is None or row["message_id"] == msg_id
        assert odd.fold(row["message_text"]) == odd.fold(odd.stored_text(text))
        self.seen["turn stored"] += 1
        if odd.astral(text + sid + account):
            self.seen["4-byte characters stored"] += 1
        self._odd_call(session, turn.exposed, data)

    def _odd_call(self, session: Session, exposed: tuple[str, ...], data: st.DataObject) -> None:
        fields = data.draw(st.sets(st.sampled_from(["name", "n", "id"]), max_size=2))
        name = data.draw(
            odd.ids()
            if "name" in fields
            else st.sampled_from(sorted(exposed or self.catalog.names))
        )
        n: int | str = data.draw(odd.texts() if "n" in fields else st.integers(0, 6))
        call_id = data.draw(odd.ids()) if "id" in fields else "c1"
        args: dict[str, Any] = {"n": n}
        # the tool is a column (a NUL is refused); arguments and the call id are JSON, where a
        # NUL is an escape and only a lone surrogate cannot be written
        want = odd.combine(
            odd.id_verdict(name),
            isinstance(n, str) and odd.has_bad_char(n, nul=False),
            odd.has_bad_char(call_id, nul=False),
        )
        before = {r["decision_id"] for r in self._engine().log.iter_action_decisions()}  # type: ignore[union-attr]
        try:
            decision = self._engine().check(
                {"name": name, "arguments": args, "id": call_id}, session=session
            )
        except UnstorableError:
            assert want is not False, f"refused a storable call {name[:40]!r}({args})"
            after = {r["decision_id"] for r in self._engine().log.iter_action_decisions()}  # type: ignore[union-attr]
            assert after == before, "a refused call's decision is in the log"
            self.seen["call refused"] += 1
            return
        assert want is not True, f"logged an unstorable call {name[:40]!r}({args})"
        self.ledger.told.append(
            Told(decision.decision_id, session.id, decision.turn_id, name, decision.allow)
        )
        log = self._engine().log
        assert log is not None
        log.flush()
        row = next(
            r for r in log.iter_action_decisions() if r["decision_id"] == decision.decision_id
        )
        assert row["tool"] == name and row["session_id"] == session.id
        assert json.loads(row["decision_json"])["call"]["arguments"] == args
        self.seen["call stored"] += 1

    def _logged_turns(self) -> int:
        log = self._engine().log
        assert log is not None
        log.flush()
        return sum(1 for _ in log.iter_turns())

    # -- restarts and reloads ------------------------------------------------------------------

    @precondition(lambda self: self.steps_since_open >= 4)
    @rule()
    def restart(self) -> None:
        """A new process on the same log: sessions are looked up again by their ids."""
        self._engine().close()
        self._open()
        for sid, old in list(self.sessions.items()):
            self.sessions[sid] = self._engine().session(old.account, id=old.id)

    @precondition(lambda self: self.steps_since_open >= 4)
    @rule(data=st.data())
    def reload(self, data: st.DataObject) -> None:
        """A changed catalog on the same log; the sessions carry on."""
        tools = list(self.catalog.tools)
        i = data.draw(st.integers(0, len(tools) - 1))
        changes = ["drop", "redraw", "flip"] if self.domain.unknown_tools else ["redraw", "flip"]
        change = data.draw(st.sampled_from(changes))
        if change == "drop" and len(tools) > 1:
            del tools[i]
        elif change == "redraw":
            tools[i] = replace(tools[i], preds=(data.draw(spec.preds(f"{tools[i].name}_v2")),))
        else:
            tools[i] = replace(tools[i], mutates=not tools[i].mutates)
        self.catalog = spec.CatalogSpec(tuple(tools))
        self._engine().close()
        self._open()

    # -- the log -------------------------------------------------------------------------------

    @invariant()
    def on_record(self) -> None:
        self.steps_since_open += 1
        if self.engine is None or self.engine.log is None:
            return
        problems = self.ledger.problems(self.engine.log)
        assert not problems, "\n".join(problems)

    def _engine(self) -> Maitred:
        assert self.engine is not None
        return self.engine


class CoreMachine(LibraryMachine):
    domain = CORE


class FullMachine(LibraryMachine):
    domain = FULL


class OddMachine(LibraryMachine):
    domain = Domain(odd_bytes=True)
