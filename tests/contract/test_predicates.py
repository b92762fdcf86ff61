"""Exit predicates: evaluation rules, policies, and the shared path with procedures."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maitred.contract import (
    CelPredicate,
    Contract,
    SkillExit,
    evaluate,
    exit_predicate,
    load_sidecar,
)
from maitred.contract.kernel import exits
from maitred.errors import (
    ContractError,
    PredicateCompileError,
    SidecarError,
    UndeclaredStateError,
)
from maitred.state import Snapshot

NOW = 1_000_000.0


def snap(values: dict[str, object], **kw: object) -> Snapshot:
    return Snapshot("acct-1", values, NOW, **kw)  # type: ignore[arg-type]


def test_cel_predicate_holds_and_passes() -> None:
    p = CelPredicate('account.plan == "free"', "on_free_plan", ("account.plan",))
    assert evaluate(p, snap({"account.plan": "free"}), NOW).holds
    out = evaluate(p, snap({"account.plan": "premium"}), NOW)
    assert not out.holds and out.status == "ok"
    assert out.values == {"account.plan": "premium"}


def test_cel_syntax_error_names_predicate() -> None:
    with pytest.raises(PredicateCompileError, match="broken"):
        CelPredicate("account.plan ==", "broken", ("account.plan",))


def test_cel_undeclared_root_is_refused() -> None:
    with pytest.raises(UndeclaredStateError, match="billing"):
        CelPredicate('billing.status == "x"', "p", ("account.plan",))


def test_cel_evaluation_error_holds() -> None:
    # comparing a string with an int is a CEL runtime error -> holds, never a pass
    p = CelPredicate("account.plan > 3", "p", ("account.plan",))
    out = evaluate(p, snap({"account.plan": "free"}), NOW)
    assert out.holds and out.status == "error"


def test_missing_key_follows_policy() -> None:
    closed = CelPredicate("a.b", "closed", ("a.b",))
    open_ = CelPredicate("a.b", "open", ("a.b",), on_missing="offer")
    assert evaluate(closed, snap({}), NOW).holds
    out = evaluate(open_, snap({}), NOW)
    assert not out.holds and out.status == "missing"


def test_stale_key_follows_policy() -> None:
    p = CelPredicate("a.b", "p", ("a.b",), max_age_s=60)
    fresh = snap({"a.b": False}, key_as_of={"a.b": NOW - 10})
    stale = snap({"a.b": False}, key_as_of={"a.b": NOW - 61})
    assert not evaluate(p, fresh, NOW).holds
    out = evaluate(p, stale, NOW)
    assert out.holds and out.status == "stale"


def test_python_predicate_undeclared_read_holds() -> None:
    @exit_predicate(reads=["a.b"])
    def sneaky(state):  # type: ignore[no-untyped-def]
        return state["c.d"] == 1

    out = evaluate(sneaky, snap({"a.b": 1, "c.d": 1}), NOW)
    assert out.holds and out.status == "error" and "c.d" in out.detail


def test_python_predicate_raising_holds() -> None:
    @exit_predicate(reads=["a.b"])
    def boom(state):  # type: ignore[no-untyped-def]
        raise RuntimeError("backend down")

    assert evaluate(boom, snap({"a.b": 1}), NOW).holds


def test_non_bool_result_holds() -> None:
    p = CelPredicate("a.b", "p", ("a.b",))
    assert evaluate(p, snap({"a.b": "yes"}), NOW).status == "error"


def test_version_is_hash_of_expression() -> None:
    a = CelPredicate("a.b == 1", "p", ("a.b",))
    b = CelPredicate("a.b == 2", "p", ("a.b",))
    assert a.version != b.version and a.version.startswith("c1:")


def test_bad_policy_is_refused() -> None:
    with pytest.raises(ContractError, match="choose one of"):
        CelPredicate("a.b", "p", ("a.b",), on_missing="maybe")  # type: ignore[arg-type]


@given(st.integers(-1000, 1000), st.integers(-1000, 1000))
def test_gate_and_procedure_agree(balance: int, limit: int) -> None:
    """The procedure stops exactly when the gate would block: same objects, same evaluator."""
    p = CelPredicate("billing.balance < billing.limit", "low", ("billing.balance", "billing.limit"))

    def procedure(ctx):  # type: ignore[no-untyped-def]
        ctx.exit_if("low")
        ctx.tools.call("charge", amount=1)
        return "done"

    contract = Contract(exit_predicates=(p,), procedure=procedure)
    s = snap({"billing.balance": balance, "billing.limit": limit})
    result = contract.run("pay", s, NOW)
    assert result.completed is (not exits(contract, s, NOW))
    assert (result.calls == (("charge", {"amount": 1}),)) is result.completed


def test_sidecar_roundtrip(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "procedure.py").write_text(
        "from maitred.contract import exit_predicate\n"
        "@exit_predicate(reads=['site.status'])\n"
        "def site_deleted(state):\n"
        "    return state['site.status'] == 'deleted'\n"
        "def run(ctx):\n"
        "    ctx.exit_if('on_free_plan')\n"
        "    ctx.exit_if('site_deleted')\n"
        "    return 'ok'\n"
    )
    (tmp_path / "maitred.yaml").write_text(
        "cost: 2\nmutates: true\nfamily: domains\nprocedure: scripts/procedure.py:run\n"
        "exit_predicates:\n"
        "  - name: on_free_plan\n    expr: account.plan == 'free'\n    reads: [account.plan]\n"
        "  - python: scripts/procedure.py:site_deleted\n"
    )
    contract, family = load_sidecar(tmp_path, "connect-domain")
    assert family == "domains" and contract.mutates and contract.cost == 2.0
    assert [p.name for p in contract.exit_predicates] == ["on_free_plan", "site_deleted"]
    ok = snap({"account.plan": "premium", "site.status": "live"})
    assert contract.run("connect-domain", ok, NOW).completed
    bad = snap({"account.plan": "premium", "site.status": "deleted"})
    res = contract.run("connect-domain", bad, NOW)
    assert not res.completed and res.exit is not None and res.exit.predicate == "site_deleted"


def test_sidecar_errors_name_file_and_entry(tmp_path: Path) -> None:
    (tmp_path / "maitred.yaml").write_text(
        "exit_predicates:\n  - name: p\n    expr: 'a.b =='\n    reads: [a.b]\n"
    )
    with pytest.raises(SidecarError, match=r"maitred\.yaml:3: .*exit_predicates\[0\]"):
        load_sidecar(tmp_path, "s")


def test_sidecar_reports_every_problem_of_the_file_with_its_line(tmp_path: Path) -> None:
    """Regression: only the first problem of a file was reported, and with no line."""
    (tmp_path / "maitred.yaml").write_text(
        "cost: -1\n"  # 1
        "mutates: maybe\n"  # 2
        "colour: red\n"  # 3
        "exit_predicates:\n"  # 4
        "  - name: fine\n"  # 5
        "    expr: account.plan == 'free'\n"  # 6
        "    reads: [account.plan]\n"  # 7
        "  - name: broken\n"  # 8
        "    expr: 'account.plan =='\n"  # 9
        "    reads: [account.plan]\n"  # 10
        "  - name: counts\n"  # 11
        "    expr: size(account.domains)\n"  # 12
        "    reads: [account.domains]\n"  # 13
        "  - name: fine\n"  # 14
        "    expr: account.plan == 'x'\n"  # 15
        "    reads: [account.plan]\n"  # 16
    )
    with pytest.raises(SidecarError) as info:
        load_sidecar(tmp_path, "s")
    error = info.value
    assert error.path == str(tmp_path / "maitred.yaml")
    lines = [line for line, _ in error.problems]
    assert lines == [1, 2, 3, 9, 12, 14]  # in file order
    messages = [m for _, m in error.problems]
    assert "`cost` must be a positive number" in messages[0]
    assert "`mutates` must be true or false" in messages[1]
    assert "unknown key 'colour'" in messages[2]
    assert "exit_predicates[1] (broken): CEL expression does not compile" in messages[3]
    assert "gives int, never a bool" in messages[4]
    assert "'fine' is declared twice" in messages[5]
    assert f"{error.path}:9: " in str(error)


def test_sidecar_yaml_error_names_the_file_and_line_not_unicode_string(tmp_path: Path) -> None:
    """Regression: a YAML error named `<unicode string>` instead of the file."""
    (tmp_path / "maitred.yaml").write_text("cost: 1\nexit_predicates:\n  - name: [unclosed\n")
    with pytest.raises(SidecarError) as info:
        load_sidecar(tmp_path, "s")
    assert "<unicode string>" not in str(info.value)
    ((line, message),) = info.value.problems
    assert line == 4 and message.startswith("not valid YAML")
    assert str(info.value).startswith(f"{tmp_path / 'maitred.yaml'}:4: not valid YAML")


def test_skill_exit_names_predicate() -> None:
    p = CelPredicate("true", "always", ("a.b",))

    def procedure(ctx):  # type: ignore[no-untyped-def]
        ctx.exit_if("always")

    with pytest.raises(SkillExit, match="always"):
        from maitred.contract import ProcedureContext

        procedure(ProcedureContext("s", snap({"a.b": 1}), {"always": p}, NOW))


def test_per_key_freshness_bounds() -> None:
    p = CelPredicate("a.b && c.d", "p", ("a.b", "c.d"), max_age_s={"a.b": 60})
    s = snap({"a.b": False, "c.d": False}, key_as_of={"a.b": NOW - 10, "c.d": NOW - 10_000})
    assert evaluate(p, s, NOW).status == "ok"  # c.d has no bound
    s2 = snap({"a.b": False, "c.d": False}, key_as_of={"a.b": NOW - 61})
    out = evaluate(p, s2, NOW)
    assert out.status == "stale" and out.holds and "a.b" in out.detail


def test_per_key_bound_on_unread_key_is_refused() -> None:
    with pytest.raises(ContractError, match="does not read"):
        CelPredicate("a.b", "p", ("a.b",), max_age_s={"x.y": 5})


def test_sidecar_per_key_freshness(tmp_path: Path) -> None:
    (tmp_path / "maitred.yaml").write_text(
        "exit_predicates:\n  - name: p\n    expr: a.b\n    reads: [a.b]\n    max_age_s: {a.b: 30}\n"
    )
    contract, _ = load_sidecar(tmp_path, "s")
    assert contract.exit_predicates[0].max_age_s == {"a.b": 30}


@pytest.mark.parametrize(
    ("expression", "gives"),
    [
        ("size(account.domains)", "int"),
        ('"free"', "string"),
        ("now", "int"),
        ('account.plan == "free" ? 1 : 0', "int"),
        ("account.balance + 1", "int"),
    ],
)
def test_an_expression_that_never_gives_a_bool_is_refused_at_load(
    expression: str, gives: str
) -> None:
    """Regression: these compiled, passed `skills validate`, and failed on every turn."""
    keys = ("account.domains", "account.plan", "account.balance")
    used = tuple(k for k in keys if k in expression)
    with pytest.raises(PredicateCompileError, match=f"gives {gives}, never a bool"):
        CelPredicate(expression, "p", used or ("account.plan",))


@pytest.mark.parametrize(
    "expression",
    [
        "account.flag",  # a bool-valued key: only its real type decides
        "account.balance > 3",
        "has(account.plan)",
        "size(account.domains) > 0",
        'account.plan == "free" && now > 0',
        "account.balance < 0 || account.limit.exceeded",
    ],
)
def test_expressions_that_can_give_a_bool_load(expression: str) -> None:
    keys = ("account.flag", "account.balance", "account.plan", "account.domains")
    used = tuple(k for k in keys if k in expression) or ("account.limit",)
    if "account.limit" in expression:
        used = (*used, "account.limit")
    CelPredicate(expression, "p", used)
