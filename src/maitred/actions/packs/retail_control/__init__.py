"""Policy pack ``retail-control``: gates over the self-enforcing retail tools (the control).

The rules are exactly the ones :mod:`maitred.lab.sim.retail.tools` already enforces, so a
call these gates reject is one the tool would have refused anyway, loudly and without a change.
Putting them in front of the tools must therefore not move task success: this pack exists to
show that the airline lift comes from silent wrong states, not from having gates at all.

Codes, per write: ``RETAIL_ORDER_NOT_FOUND``; cancel: ``RETAIL_CANCEL_NOT_PENDING``,
``RETAIL_CANCEL_REASON``; return / exchange: ``RETAIL_NOT_DELIVERED``,
``RETAIL_ITEM_NOT_IN_ORDER``, ``RETAIL_PAYMENT_NOT_ON_FILE``; exchange:
``RETAIL_EXCHANGE_WRONG_PRODUCT``. There is no must-read rule: the tools cannot enforce one.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from maitred.actions.gate import ActionGate
from maitred.actions.packs import Pack
from maitred.actions.rules import PolicyPredicate, Rulebook, Violation, policy_rule
from maitred.contract.predicate import StateView

NAME = "retail-control"
#: the tool definitions; their contracts are in ``tools.maitred.yaml`` beside them
TOOLS_FILE = Path(__file__).with_name("tools.json")
ORDER = "state.orders[args.order_id]"
ITEM_WRITES = ("return_delivered_order_items", "exchange_delivered_order_items")
WRITES = ("cancel_pending_order", *ITEM_WRITES)
#: the reasons the retail tools accept for a cancellation (the tools enforce the same list)
CANCEL_REASONS = ("no longer needed", "ordered by mistake")


@policy_rule(
    code="RETAIL_ORDER_NOT_FOUND", tools=WRITES, reads=["args.order_id", ORDER], optional=[ORDER]
)
def order_exists(view: StateView) -> Violation | None:
    """The order must exist."""
    if view[ORDER] is None:
        return Violation(f"order {view['args.order_id']!r} does not exist", ("order_id",))
    return None


@policy_rule(code="RETAIL_CANCEL_NOT_PENDING", tools=WRITES[:1], reads=[ORDER])
def cancel_pending(view: StateView) -> Violation | None:
    """Only a pending order can be cancelled."""
    status = view[ORDER]["status"]
    if status != "pending":
        return Violation(f"the order is {status}, not pending", ("order_id",))
    return None


@policy_rule(code="RETAIL_CANCEL_REASON", tools=WRITES[:1], reads=["args.reason"])
def cancel_reason(view: StateView) -> Violation | None:
    """The reason must be one the policy accepts."""
    if view["args.reason"] not in CANCEL_REASONS:
        return Violation(f"reason must be one of {list(CANCEL_REASONS)}", ("reason",))
    return None


@policy_rule(code="RETAIL_NOT_DELIVERED", tools=ITEM_WRITES, reads=[ORDER])
def delivered(view: StateView) -> Violation | None:
    """Only a delivered order's items can be returned or exchanged."""
    status = view[ORDER]["status"]
    if status != "delivered":
        return Violation(f"the order is {status}, not delivered", ("order_id",))
    return None


@policy_rule(code="RETAIL_ITEM_NOT_IN_ORDER", tools=ITEM_WRITES, reads=[ORDER, "args.item_ids"])
def items_in_order(view: StateView) -> Violation | None:
    """Every item id must be in the order (as often as it is named)."""
    owned = [i["item_id"] for i in view[ORDER]["items"]]
    wanted = list(view["args.item_ids"])
    for item in wanted:
        if wanted.count(item) > owned.count(item):
            return Violation(f"item {item!r} is not in the order", ("item_ids",))
    return None


@policy_rule(
    code="RETAIL_PAYMENT_NOT_ON_FILE",
    tools=ITEM_WRITES,
    reads=[ORDER, "args.payment_method_id", "state.users"],
)
def payment_on_file(view: StateView) -> Violation | None:
    """The payment method must be in the user's profile."""
    user = view["state.users"].get(view[ORDER]["user_id"]) or {}
    if view["args.payment_method_id"] not in user.get("payment_methods", {}):
        return Violation("the payment method is not on file", ("payment_method_id",))
    return None


@policy_rule(
    code="RETAIL_EXCHANGE_WRONG_PRODUCT",
    tools=ITEM_WRITES[1:],
    reads=[ORDER, "args.item_ids", "args.new_item_ids", "state.products"],
)
def same_product(view: StateView) -> Violation | None:
    """Each new item must be an available variant of the old item's product."""
    old, new = list(view["args.item_ids"]), list(view["args.new_item_ids"])
    if len(old) != len(new):
        return Violation("exchange as many new items as old ones", ("new_item_ids",))
    product_of = {i["item_id"]: i["product_id"] for i in view[ORDER]["items"]}
    for a, b in zip(old, new, strict=True):
        variants = view["state.products"].get(product_of.get(a), {}).get("variants", {})
        if b not in variants or not variants[b]["available"]:
            return Violation(f"{b!r} is not an available variant of {a!r}", ("new_item_ids",))
    return None


def predicates() -> list[PolicyPredicate]:
    """Every rule of the pack, in evaluation order."""
    return [
        order_exists,
        cancel_pending,
        cancel_reason,
        delivered,
        items_in_order,
        payment_on_file,
        same_product,
    ]


PACK = Pack(NAME, TOOLS_FILE)
"""The pack (entry point ``retail-control`` of ``maitred.policy_packs``); it has no settings."""


def build_rulebook(overrides: Mapping[str, Any] | None = None) -> Rulebook:
    """The pack as a :class:`Rulebook` (it has no settings)."""
    return PACK.rulebook(overrides)


def make_gate(overrides: Mapping[str, Any] | None = None) -> ActionGate:
    """An :class:`ActionGate` for the pack (wall clock; no rule reads the time)."""
    return PACK.make_gate(overrides)
