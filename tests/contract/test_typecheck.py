"""The load-time type check of CEL predicates against typed state, and of call policies'
``args.*`` against their tool's schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maitred import Maitred, PipelineOptions
from maitred.contract.typecheck import check_expression
from maitred.errors import ConfigError

DECLARED = {"a.flag": "bool", "a.n": "int", "a.x": "double", "a.s": "string", "a.j": "json"}


@pytest.mark.parametrize(
    "expression",
    [
        "a.flag == true",
        'a.s == "free" && a.n > 3',
        "a.x > 100",  # the evaluator compares int and double
        "a.n == 1.0",
        "a.s == null || a.n != null",  # a NULL column is null, whatever its type
        "a.j.beta == true && size(a.j.tags) > 0",  # json is dyn: checked at evaluation
        'a.s.lowerAscii() == "x"',  # a string function the checker lacks, run by the evaluator
        "a.n < now - 86400",  # timestamps and now are int unix seconds
    ],
)
def test_expressions_the_evaluator_runs_are_accepted(expression: str) -> None:
    errors, _ = check_expression(expression, list(DECLARED), DECLARED)  # type: ignore[arg-type]
    assert errors == []


@pytest.mark.parametrize(
    ("expression", "needle"),
    [
        ("a.n == true", "(int, bool)"),
        ("a.s == 3", "(string, int)"),
        ('a.flag == "yes"', "(bool, string)"),
        ("a.s > 2 || a.flag", "(string, int)"),  # one arm that can never fire is enough
        ("a.other == 1", "undeclared reference to 'a.other'"),  # a key it does not read
        ("size(a.n) > 0", "size"),
    ],
)
def test_ill_typed_expressions_are_refused(expression: str, needle: str) -> None:
    errors, _ = check_expression(expression, list(DECLARED), DECLARED)  # type: ignore[arg-type]
    assert errors and needle in errors[0].message


def test_a_type_error_quotes_the_expression_with_a_caret_under_the_fault() -> None:
    """Regression: the message showed the checker's caret line (``| ...^``) without the
    expression it points into."""
    (error,) = check_expression("a.flag && a.s == 3", list(DECLARED), DECLARED)[0]  # type: ignore[arg-type]
    assert str(error).startswith("CEL type error at column 15 of `a.flag && a.s == 3`: ")
    text, caret = error.pointed(indent="").splitlines()
    assert text == "a.flag && a.s == 3"
    assert text[caret.index("^") :].startswith("== 3")  # under the operator the checker named


def test_a_type_error_in_an_expression_of_several_lines_points_into_its_line() -> None:
    expression = "a.flag ||\n  a.s == 3"
    (error,) = check_expression(expression, list(DECLARED), DECLARED)[0]  # type: ignore[arg-type]
    assert (error.line, error.where) == (2, f"line 2, column {error.column}")
    assert "of `a.s == 3`" in str(error)
    text, caret = error.pointed().splitlines()
    assert text == "      a.s == 3"
    assert text[caret.index("^") :].startswith("== 3")


TOOLS = {
    "tools": [
        {
            "name": "refund",
            "description": "Refund an order.",
            "inputSchema": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        }
    ]
}


def test_a_policy_reading_an_argument_the_schema_lacks_is_a_load_error(tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    (tmp_path / "tools.maitred.yaml").write_text(
        "tools:\n"
        "  refund:\n"
        "    mutates: true\n"
        "    policies:\n"
        "      - name: too_large\n"
        "        expr: args.amount > 100\n"
        "        code: TOO_LARGE\n"
        "        reads: [args.amount, args.order_id]\n",
        encoding="utf-8",
    )
    (tmp_path / "state.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"too_large.*refund.*args\.amount.*\['order_id'\]"):
        Maitred.open([tmp_path / "tools.json"], str(tmp_path / "state.json"), PipelineOptions())


def test_call_policies_state_reads_must_exist_and_type_check(tmp_path: Path) -> None:
    import sqlite3

    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    sidecar = (
        "tools:\n"
        "  refund:\n"
        "    mutates: true\n"
        "    policies:\n"
        "      - name: refunds_frozen\n"
        "        expr: state.billing.frozen == true\n"
        "        code: FROZEN\n"
        "        reads: [state.billing.frozen]\n"
    )
    (tmp_path / "tools.maitred.yaml").write_text(sidecar, encoding="utf-8")
    db = tmp_path / "state.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE billing (account_id TEXT, frozen INTEGER)")
    conn.close()
    url, tables = f"sqlite:///{db}", {"billing": "billing"}
    where = r"tools\.maitred\.yaml:6.*refunds_frozen.*\(int, bool\)"
    with pytest.raises(ConfigError, match=where) as bad:
        Maitred.open([tmp_path / "tools.json"], url, PipelineOptions(method="bm25"), tables=tables)
    # the expression, quoted, with the caret under the comparison the checker refused
    assert "\n    state.billing.frozen == true\n                         ^" in str(bad.value)
    (tmp_path / "tools.maitred.yaml").write_text(sidecar.replace("frozen", "locked"), "utf-8")
    with pytest.raises(ConfigError, match=r"'billing\.locked'.*'billing'.*refund \(policy"):
        Maitred.open([tmp_path / "tools.json"], url, PipelineOptions(method="bm25"), tables=tables)
