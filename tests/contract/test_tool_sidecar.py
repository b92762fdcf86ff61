"""Contracts for tools: one YAML beside the tools file, keyed by tool name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maitred.actions import ActionGate, Rulebook, Session, ToolCall
from maitred.contract.tool_sidecar import SurfaceNames, load_tool_contracts
from maitred.errors import ContractError, SidecarError
from maitred.skills import load_catalog
from maitred.skills.catalog import load_catalog_report

TOOLS = {
    "tools": [
        {
            "name": "refund",
            "description": "Refund part of an order.",
            "inputSchema": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
                "required": ["order_id", "amount"],
            },
        },
        {
            "name": "get_order",
            "description": "Read an order.",
            "inputSchema": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    ]
}

SIDECAR = """
settings:
  limit: 100
policies:
  - python: rules.py:must_read_order
  - python: rules.py:limit_rule
    tools: [refund]
tools:
  get_order:
    records: {reads: order_id}
  refund:
    mutates: true
    cost: 2
    family: orders
    exit_predicates:
      - name: refunds_disabled
        expr: account.refunds_disabled
        reads: [account.refunds_disabled]
        message: Refunds are switched off for this account.
    policies:
      - name: refund_too_large
        expr: args.amount > state.orders[args.order_id].paid
        code: SHOP_REFUND_TOO_LARGE
        reads: [args.amount, args.order_id, state.orders]
        fields: [amount]
        message: The refund is larger than what was paid.
"""

RULES = """
from maitred.actions import Violation, policy_rule
from maitred.actions.session import must_read_before_write

must_read_order = must_read_before_write(
    ("refund",), id_arg="order_id", read_tool="get_order", code="SHOP_MUST_READ"
)


def limit_rule(limit):
    @policy_rule(code="SHOP_OVER_LIMIT", reads=["args.amount"], fields=("amount",))
    def over_limit(view):
        if view["args.amount"] > limit:
            return Violation(f"refunds above {limit} need a human", ("amount",))
        return None

    return over_limit
"""


def _write(tmp_path: Path, sidecar: str = SIDECAR) -> Path:
    path = tmp_path / "shop.json"
    path.write_text(json.dumps(TOOLS), encoding="utf-8")
    (tmp_path / "shop.maitred.yaml").write_text(sidecar, encoding="utf-8")
    (tmp_path / "rules.py").write_text(RULES, encoding="utf-8")
    return path


DOC = {"orders": {"o1": {"paid": 80}}, "account": {"refunds_disabled": False}}


def test_a_tools_file_gets_contracts_from_its_sidecar(tmp_path: Path) -> None:
    catalog = load_catalog([_write(tmp_path)])
    refund = catalog["refund"]
    assert refund.contract.mutates and refund.contract.cost == 2.0 and refund.family == "orders"
    assert [p.name for p in refund.contract.exit_predicates] == ["refunds_disabled"]
    assert [p.code for p in refund.contract.policies] == [
        "SHOP_MUST_READ",
        "SHOP_OVER_LIMIT",
        "SHOP_REFUND_TOO_LARGE",
    ]
    assert catalog["get_order"].contract.records.reads == "order_id"
    assert not catalog["get_order"].contract.mutates


def test_the_gate_built_from_the_catalog_applies_every_rule(tmp_path: Path) -> None:
    gate = ActionGate(Rulebook.from_catalog(load_catalog([_write(tmp_path)]), "shop"))
    session = Session()
    call = ToolCall("refund", {"order_id": "o1", "amount": 50})
    assert gate.check(call, DOC, session).code == "SHOP_MUST_READ"
    session.record(ToolCall("get_order", {"order_id": "o1"}), {}, gate.rulebook.tracking)
    assert gate.check(call, DOC, session).allow
    big = ToolCall("refund", {"order_id": "o1", "amount": 90})
    assert gate.check(big, DOC, session).code == "SHOP_REFUND_TOO_LARGE"
    disabled = {**DOC, "account": {"refunds_disabled": True}}
    assert gate.check(call, disabled, session).code == "TOOL_NOT_EXECUTABLE"


def test_settings_fill_factories_and_change_their_version(tmp_path: Path) -> None:
    path = _write(tmp_path)
    default = load_catalog([path])["refund"].contract.policies[1]
    low = load_catalog([path], settings={"limit": 10})["refund"].contract.policies[1]
    assert default.version != low.version
    session = Session()
    session.mark_read("get_order", "o1")
    gate = ActionGate(Rulebook.from_catalog(load_catalog([path], settings={"limit": 10})))
    d = gate.check(ToolCall("refund", {"order_id": "o1", "amount": 50}), DOC, session)
    assert d.code == "SHOP_OVER_LIMIT" and "above 10" in d.message_for_model
    with pytest.raises(ContractError, match="declares the setting"):
        load_catalog([path], settings={"nope": 1})


@pytest.mark.parametrize(
    ("sidecar", "message"),
    [
        ("tools: {delete_all: {}}", r"\['delete_all'\] are not defined in the tools file"),
        ("tools: {refund: {mutate: true}}", r"tools.refund: unknown key\(s\) \['mutate'\]"),
        ("tools: [oops", "not valid YAML"),
        (
            "policies: [{name: x, expr: 'true', code: X, reads: [args.amount]}]",
            "must name its `tools`",
        ),
        (
            "tools: {refund: {policies: [{python: rules.py:nothing_here}]}}",
            "has no attribute 'nothing_here'",
        ),
        (
            "tools: {refund: {policies: [{name: x, expr: 'state.nope > 1', code: X, "
            "reads: [args.amount]}]}}",
            r"tools.refund.policies\[0\]",
        ),
    ],
)
def test_sidecar_errors_name_the_file_and_entry(tmp_path: Path, sidecar: str, message: str) -> None:
    path = _write(tmp_path, sidecar)
    with pytest.raises(ContractError, match=message) as err:
        load_catalog([path], strict=True)
    assert "shop.maitred.yaml" in str(err.value)


def test_a_broken_sidecar_loads_none_of_its_tools(tmp_path: Path) -> None:
    """Lenient loading still refuses to offer tools whose contract could not be read."""
    path = _write(tmp_path, "tools: {delete_all: {}}")
    catalog, report = load_catalog_report([path])
    assert catalog is None or "refund" not in catalog
    assert any("shop.maitred.yaml" in e.where for e in report.errors)


def test_a_tools_file_without_sidecar_loads_with_empty_contracts(tmp_path: Path) -> None:
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(TOOLS), encoding="utf-8")
    catalog = load_catalog([path])
    assert not catalog["refund"].contract.mutates and not catalog["refund"].contract.policies


BROKEN = """\
tools:
  refund:
    mutates: true
    exit_predicates:
      - name: counts
        expr: size(account.orders)
        reads: [account.orders]
    policies:
      - name: no_code
        expr: args.amount > 1
        reads: [args.amount]
  get_order:
    cost: -1
  delete_all: {}
bogus: 1
"""


def test_every_problem_of_a_tool_sidecar_is_reported_with_its_line(tmp_path: Path) -> None:
    """As for a skill's maitred.yaml: every entry is checked, each problem carries its line."""
    path = _write(tmp_path, BROKEN)
    with pytest.raises(SidecarError) as err:
        load_catalog([path], strict=True)
    found = {line: message for line, message in err.value.problems}
    assert sorted(found) == [6, 9, 13, 14, 15], found
    assert "gives int, never a bool" in found[6]
    assert "needs `code`" in found[9]
    assert "cost must be a positive number" in found[13]
    assert "['delete_all'] are not defined in the tools file" in found[14]
    assert "unknown key(s) ['bogus']" in found[15]
    _, report = load_catalog_report([path])  # what `skills validate` shows: one line each
    assert sorted(e.line or 0 for e in report.errors) == [6, 9, 13, 14, 15]


def test_a_tool_sidecar_yaml_error_names_the_file_and_its_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "tools:\n  refund: {mutates: [\n")
    with pytest.raises(ContractError) as err:
        load_catalog([path], strict=True)
    message = str(err.value)
    assert "<unicode string>" not in message
    assert f"{tmp_path / 'shop.maitred.yaml'}:3: not valid YAML" in message


def test_a_control_character_in_a_sidecar_is_a_contract_error_naming_the_file(
    tmp_path: Path,
) -> None:
    """PyYAML's reader refuses such text before parsing starts; that is still bad input."""
    path = _write(tmp_path, "tools:\n  refund: {mutates: true}\x00\n")
    with pytest.raises(
        ContractError, match=r"shop\.maitred\.yaml:2: not valid YAML: character #x0000"
    ):
        load_catalog([path], strict=True)
    skill = tmp_path / "skills" / "refund-help"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: refund-help\ndescription: d\n---\nb\n")
    (skill / "maitred.yaml").write_text("cost: 1\x00\n", encoding="utf-8")
    with pytest.raises(ContractError, match=r"maitred\.yaml:1: not valid YAML: character #x0000"):
        load_catalog([tmp_path / "skills"], strict=True)


RESOURCES = """
tools: {}
resources:
  docs://pricing:
    exit_predicates:
      - name: free_plan
        expr: account.plan == "free"
        reads: [account.plan]
  reports://{year}: {}
prompts:
  negotiate: ~
"""


def test_resources_and_prompts_get_contracts_like_tools(tmp_path: Path) -> None:
    _write(tmp_path, RESOURCES)
    listed = SurfaceNames(("docs://pricing",), ("reports://{year}",), ("negotiate",))
    found = load_tool_contracts(tmp_path / "shop.json", ["refund", "get_order"], surfaces=listed)
    assert set(found.resources) == {"docs://pricing", "reports://{year}"}
    assert [p.name for p in found.resources["docs://pricing"].exit_predicates] == ["free_plan"]
    assert found.resources["docs://pricing"].reads == {"account.plan"}
    assert found.resources["reports://{year}"].exit_predicates == ()  # {}: no rules
    assert found.prompts["negotiate"].exit_predicates == ()  # an empty entry: the same
    # without the server's names (a tools file read on its own) only the form is checked
    alone = load_tool_contracts(tmp_path / "shop.json", ["refund", "get_order"])
    assert set(alone.resources) == set(found.resources)


@pytest.mark.parametrize(
    ("sidecar", "message"),
    [
        ("resources: [docs://x]\n", "`resources` must map resource URIs or URI templates"),
        ("prompts: {p: {policies: []}}\n", "prompts.p: unknown key(s) ['policies']"),
        (
            "resources:\n  docs://x:\n    exit_predicates:\n      - {name: n, expr: 'a ==', "
            "reads: [a]}\n",
            "shop.maitred.yaml:4",
        ),
    ],
)
def test_resource_and_prompt_entry_errors_name_the_file_and_entry(
    tmp_path: Path, sidecar: str, message: str
) -> None:
    _write(tmp_path, sidecar)
    with pytest.raises(SidecarError) as raised:
        load_tool_contracts(tmp_path / "shop.json", ["refund", "get_order"])
    assert message in str(raised.value)
