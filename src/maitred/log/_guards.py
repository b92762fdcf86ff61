"""``verify``'s check of the guards: every trigger the applied migrations created is there,
as they made it, and enabled; every guard function still refuses.

SQLite stores a trigger's SQL as written, so it must equal the migration's statement.
PostgreSQL rewrites a trigger's definition (schema-qualified, events reordered), so its events,
table and function are compared, it must be enabled, and each guard function's source must be
the migration's: ``maitred_append_only`` (``0003``) still raises, and each insert guard of
``0012_chained_only`` (:mod:`maitred.log.chained_only`) still has the body that refuses an
unchained row.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from maitred.log.base import DecisionLog
from maitred.log.chained_only import CHAINED, function_body, guard_function
from maitred.log.migrations import MIGRATIONS

#: (kind, key, detail) -> None: how a fault is reported (``verify``'s collector)
Add = Callable[..., None]

_TRIGGER_NAME = re.compile(r"\s*CREATE TRIGGER (\w+)")


def expected_triggers(log: DecisionLog) -> dict[str, str]:
    """The guard triggers the log's applied migrations created: name -> creating statement."""
    applied = set(log.migrations())
    found: dict[str, str] = {}
    for migration in MIGRATIONS:
        if migration.name in applied:
            for statement in migration.statements(log.dialect):
                match = _TRIGGER_NAME.match(statement)
                if match:
                    found[match.group(1)] = statement
    return found


_TRIGGER_SHAPE = re.compile(
    r"BEFORE (?P<events>.+?) ON (?:\S+\.)?(?P<table>\w+) .*EXECUTE (?:FUNCTION|PROCEDURE) "
    r"(?:\S+\.)?(?P<function>\w+)\(",
    re.S,
)


def _shape(definition: str) -> tuple[frozenset[str], str, str] | None:
    """(events, table, function) of a PostgreSQL trigger definition, in any event order."""
    match = _TRIGGER_SHAPE.search(definition)
    if match is None:
        return None
    events = frozenset(e.strip() for e in match.group("events").split(" OR "))
    return events, match.group("table"), match.group("function")


def _trigger_faults(log: DecisionLog, expected: dict[str, str]) -> dict[str, str]:
    """What is wrong with each expected trigger that is there but not as the migration made it.

    SQLite stores a trigger's SQL as written, so it must equal the migration's statement.
    PostgreSQL rewrites it (schema-qualified, events reordered), so its events, table and
    function are compared, and it must be enabled.
    """
    if log.dialect == "sqlite":
        stored = dict(log.query("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"))
        return {
            name: "altered: its SQL is not the migration's"
            for name, sql in expected.items()
            if name in stored and str(stored[name]).strip() != sql.strip()
        }
    rows = log.query(
        "SELECT t.tgname, t.tgenabled, pg_get_triggerdef(t.oid) FROM pg_trigger t "
        "JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND NOT t.tgisinternal"
    )
    faults: dict[str, str] = {}
    for name, enabled, definition in rows:
        if name not in expected:
            continue
        if enabled == "D":
            faults[name] = "disabled, so the table accepts edits"
        elif _shape(str(definition)) != _shape(expected[name]):
            faults[name] = f"altered: it is now {definition}"
    return faults


def check_triggers(log: DecisionLog, add: Add) -> int:
    """Report every guard trigger that is missing, altered or disabled; return how many."""
    expected = expected_triggers(log)
    if log.dialect == "sqlite":
        present = {str(r[0]) for r in log.query("SELECT name FROM sqlite_master")}
    else:
        present = {
            str(r[0])
            for r in log.query(
                "SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = current_schema() AND NOT t.tgisinternal"
            )
        }
        _check_functions(log, expected, add)
    faults = _trigger_faults(log, expected)
    for name in expected:
        if name not in present:
            add("trigger", name, "missing: it was dropped, so the table accepts edits")
        elif name in faults:
            add("trigger", name, faults[name])
    return len(expected)


def _check_functions(log: DecisionLog, expected: dict[str, str], add: Add) -> None:
    """PostgreSQL: each guard function the expected triggers call still refuses (an editor
    who replaces a function's body disarms its triggers without touching them)."""
    sources = {
        str(name): " ".join(str(src).split())
        for name, src in log.query(
            "SELECT p.proname, p.prosrc FROM pg_proc p JOIN pg_namespace n "
            "ON n.oid = p.pronamespace WHERE n.nspname = current_schema() "
            "AND p.proname LIKE 'maitred_%'"
        )
    }
    if expected and "RAISE EXCEPTION" not in sources.get("maitred_append_only", ""):
        add("trigger", "maitred_append_only", "the guard function no longer raises")
    for table in CHAINED:
        name = guard_function(table)
        if f"{table}_chained_only" not in expected:
            continue
        if sources.get(name) != " ".join(function_body(table).split()):
            add(
                "trigger",
                name,
                "the insert guard's function is missing or not the migration's, so the table "
                "accepts unchained rows",
            )
