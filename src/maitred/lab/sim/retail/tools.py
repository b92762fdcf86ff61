"""The retail tools, self-enforcing: an invalid write raises :class:`RetailToolError` and
changes nothing.

Schema: ``users[user_id] = {user_id, payment_methods{id: {source}}, orders[...]}``;
``products[product_id] = {name, variants{item_id: {options, price, available}}}``;
``orders[order_id] = {order_id, user_id, status: pending|processed|delivered|cancelled|
return requested|exchange requested, items[{item_id, product_id, price}], payment_history[...]}``.

Rules the tools enforce (and the ``retail-control`` pack restates as gates):

* cancel: the order is ``pending`` and the reason is ``no longer needed`` or
  ``ordered by mistake``;
* return / exchange: the order is ``delivered``; every item id is in the order; the payment
  method is in the user's profile;
* exchange: as many new items as old ones, each a variant of the same product, available.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

CANCEL_REASONS = ("no longer needed", "ordered by mistake")


class RetailToolError(Exception):
    """A loud refusal by a retail tool (the call did nothing), returned to the model as text."""


class RetailSim:
    """The retail tools over one database (a dict; valid writes mutate it in place)."""

    READS = ("get_user_details", "get_order_details", "get_product_details")
    WRITES = (
        "cancel_pending_order",
        "return_delivered_order_items",
        "exchange_delivered_order_items",
    )

    def __init__(self, db: dict[str, Any]) -> None:
        self.db = db
        self.tools: dict[str, Callable[..., Any]] = {
            name: getattr(self, name) for name in (*self.READS, *self.WRITES)
        }

    def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """Run tool ``name``; unknown tools and bad arguments raise :class:`RetailToolError`."""
        tool = self.tools.get(name)
        if tool is None:
            raise RetailToolError(f"unknown tool {name!r}")
        try:
            return tool(**arguments)
        except TypeError as exc:
            raise RetailToolError(f"{name}: bad arguments: {exc}") from None

    def _get(self, table: str, key: str) -> dict[str, Any]:
        found = self.db[table].get(key)
        if found is None:
            raise RetailToolError(f"{table[:-1]} {key} not found")
        return found  # type: ignore[no-any-return]

    def get_user_details(self, user_id: str) -> dict[str, Any]:
        return self._get("users", user_id)

    def get_order_details(self, order_id: str) -> dict[str, Any]:
        return self._get("orders", order_id)

    def get_product_details(self, product_id: str) -> dict[str, Any]:
        return self._get("products", product_id)

    def cancel_pending_order(self, order_id: str, reason: str) -> dict[str, Any]:
        order = self._get("orders", order_id)
        if order["status"] != "pending":
            raise RetailToolError(f"order {order_id} is {order['status']}, not pending")
        if reason not in CANCEL_REASONS:
            raise RetailToolError(f"reason must be one of {list(CANCEL_REASONS)}")
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        return order

    def _delivered(
        self, order_id: str, item_ids: list[str], payment_method_id: str
    ) -> dict[str, Any]:
        order: dict[str, Any] = self._get("orders", order_id)
        if order["status"] != "delivered":
            raise RetailToolError(f"order {order_id} is {order['status']}, not delivered")
        owned = [i["item_id"] for i in order["items"]]
        for item in item_ids:
            if item_ids.count(item) > owned.count(item):
                raise RetailToolError(f"item {item} is not in order {order_id}")
        user = self._get("users", order["user_id"])
        if payment_method_id not in user["payment_methods"]:
            raise RetailToolError(f"payment method {payment_method_id} is not on file")
        return order

    def return_delivered_order_items(
        self, order_id: str, item_ids: list[str], payment_method_id: str
    ) -> dict[str, Any]:
        order = self._delivered(order_id, item_ids, payment_method_id)
        refund = sum(i["price"] for i in order["items"] if i["item_id"] in item_ids)
        order["status"] = "return requested"
        order["return_items"] = sorted(item_ids)
        order["payment_history"].append({"payment_id": payment_method_id, "amount": -refund})
        return order

    def exchange_delivered_order_items(
        self,
        order_id: str,
        item_ids: list[str],
        new_item_ids: list[str],
        payment_method_id: str,
    ) -> dict[str, Any]:
        order = self._delivered(order_id, item_ids, payment_method_id)
        if len(item_ids) != len(new_item_ids):
            raise RetailToolError("exchange as many new items as old ones")
        by_id = {i["item_id"]: i for i in order["items"]}
        diff = 0
        for old, new in zip(item_ids, new_item_ids, strict=True):
            variants = self._get("products", by_id[old]["product_id"])["variants"]
            if new not in variants or not variants[new]["available"]:
                raise RetailToolError(f"item {new} is not an available variant of {old}'s product")
            diff += variants[new]["price"] - by_id[old]["price"]
        order["status"] = "exchange requested"
        order["exchange_items"] = sorted(item_ids)
        order["exchange_new_items"] = sorted(new_item_ids)
        order["payment_history"].append({"payment_id": payment_method_id, "amount": diff})
        return order
