"""Seeded retail databases, tasks with gold calls and expected final state, and violations.

Tasks (one per kind the database supports): cancel a pending order, return a delivered item,
exchange a delivered item for another variant. Each task's gold calls read the user and the
order (and the product, for an exchange) and then write. :func:`violations` gives trajectories
whose last write breaks one rule; the tools refuse every one of them themselves.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from maitred.lab.sim.airline.tasks import Call, Task, call
from maitred.lab.sim.airline.tools import state_hash
from maitred.lab.sim.retail.tools import RetailSim

STATUSES = ("pending", "processed", "delivered", "delivered", "cancelled")
PRODUCTS = ("t-shirt", "water bottle", "desk lamp", "backpack", "sneakers", "headphones")


def generate_db(seed: int = 0, n_users: int = 8) -> dict[str, Any]:
    """A database of ``n_users`` users with 2-4 orders each over six products."""
    rng = random.Random(seed)
    products: dict[str, Any] = {}
    for p, name in enumerate(PRODUCTS):
        pid = f"P{seed}{p:02d}"
        products[pid] = {
            "product_id": pid,
            "name": name,
            "variants": {
                f"{pid}-{v}": {
                    "options": {"color": color},
                    "price": 20 + 5 * v + 3 * p,
                    "available": rng.random() > 0.2,
                }
                for v, color in enumerate(("black", "white", "blue"))
            },
        }
    users: dict[str, Any] = {}
    orders: dict[str, Any] = {}
    for u in range(n_users):
        uid = f"user_{seed}_{u:02d}"
        pays = {f"card_{seed}{u:02d}": {"source": "credit_card"}}
        if rng.random() < 0.5:
            pays[f"gift_{seed}{u:02d}"] = {"source": "gift_card"}
        users[uid] = {"user_id": uid, "payment_methods": pays, "orders": []}
        for o in range(rng.randint(2, 4)):
            oid = f"#W{seed}{u:02d}{o}"
            picks = rng.sample(sorted(products), rng.randint(1, 3))
            items = []
            for pid in picks:
                item = rng.choice(sorted(products[pid]["variants"]))
                price = products[pid]["variants"][item]["price"]
                items.append({"item_id": item, "product_id": pid, "price": price})
            total = sum(i["price"] for i in items)
            orders[oid] = {
                "order_id": oid,
                "user_id": uid,
                "status": rng.choice(STATUSES),
                "items": items,
                "payment_history": [{"payment_id": sorted(pays)[0], "amount": total}],
            }
            users[uid]["orders"].append(oid)
    return {"users": users, "products": products, "orders": orders}


def _orders(db: dict[str, Any], status: str) -> list[dict[str, Any]]:
    return [o for _, o in sorted(db["orders"].items()) if o["status"] == status]


def _reads(order: dict[str, Any]) -> list[Call]:
    return [
        call("get_user_details", user_id=order["user_id"]),
        call("get_order_details", order_id=order["order_id"]),
    ]


def _card(db: dict[str, Any], order: dict[str, Any]) -> str:
    return str(sorted(db["users"][order["user_id"]]["payment_methods"])[0])


def _swap(db: dict[str, Any], order: dict[str, Any]) -> tuple[str, str, str] | None:
    """(old item, new item, product) for an available other variant of an item in the order."""
    for item in order["items"]:
        variants = db["products"][item["product_id"]]["variants"]
        for new, v in sorted(variants.items()):
            if new != item["item_id"] and v["available"]:
                return item["item_id"], new, item["product_id"]
    return None


def _gold(db: dict[str, Any], kind: str, pick: int) -> list[Call] | None:
    if kind == "cancel":
        pending = _orders(db, "pending")
        if len(pending) <= pick:
            return None
        o = pending[pick]
        return [
            *_reads(o),
            call("cancel_pending_order", order_id=o["order_id"], reason="no longer needed"),
        ]
    delivered = _orders(db, "delivered")
    if len(delivered) <= pick:
        return None
    o = delivered[pick]
    if kind == "return":
        item = o["items"][0]["item_id"]
        write = call(
            "return_delivered_order_items",
            order_id=o["order_id"],
            item_ids=[item],
            payment_method_id=_card(db, o),
        )
        return [*_reads(o), write]
    swap = _swap(db, o)
    if swap is None:
        return None
    old, new, pid = swap
    write = call(
        "exchange_delivered_order_items",
        order_id=o["order_id"],
        item_ids=[old],
        new_item_ids=[new],
        payment_method_id=_card(db, o),
    )
    return [*_reads(o), call("get_product_details", product_id=pid), write]


INSTRUCTIONS = {
    "cancel": "Cancel my pending order, I no longer need it.",
    "return": "I want to return an item from my delivered order.",
    "exchange": "I want to exchange an item of my delivered order for another color.",
}


def make_tasks(db: dict[str, Any], seed: int = 0) -> list[Task]:
    """Two tasks per kind (cancel, return, exchange) where the database supports them."""
    tasks = []
    for pick in range(2):
        for kind, text in INSTRUCTIONS.items():
            calls = _gold(db, kind, pick)
            if calls is None:
                continue
            sim = RetailSim(copy.deepcopy(db))
            for c in calls:
                sim.call(c["name"], c["arguments"])
            tid = f"{kind}{pick}-{seed}"
            tasks.append(Task(tid, kind, text, calls, {}, state_hash(sim.db)))
    return tasks


def violations(db: dict[str, Any], seed: int = 0) -> list[dict[str, Any]]:
    """Trajectories ``{"id", "context", "calls", "expect"}`` whose last write breaks a rule."""
    found: dict[str, list[Call]] = {}
    delivered, pending = _orders(db, "delivered"), _orders(db, "pending")
    if delivered:
        d = delivered[0]
        found["RETAIL_CANCEL_NOT_PENDING"] = [
            *_reads(d),
            call("cancel_pending_order", order_id=d["order_id"], reason="no longer needed"),
        ]
        found["RETAIL_ITEM_NOT_IN_ORDER"] = [
            *_reads(d),
            call(
                "return_delivered_order_items",
                order_id=d["order_id"],
                item_ids=["NOT-AN-ITEM"],
                payment_method_id=_card(db, d),
            ),
        ]
        found["RETAIL_PAYMENT_NOT_ON_FILE"] = [
            *_reads(d),
            call(
                "return_delivered_order_items",
                order_id=d["order_id"],
                item_ids=[d["items"][0]["item_id"]],
                payment_method_id="card_stolen",
            ),
        ]
        other = next(p for p in sorted(db["products"]) if p != d["items"][0]["product_id"])
        found["RETAIL_EXCHANGE_WRONG_PRODUCT"] = [
            *_reads(d),
            call(
                "exchange_delivered_order_items",
                order_id=d["order_id"],
                item_ids=[d["items"][0]["item_id"]],
                new_item_ids=[sorted(db["products"][other]["variants"])[0]],
                payment_method_id=_card(db, d),
            ),
        ]
    if pending:
        p = pending[0]
        found["RETAIL_NOT_DELIVERED"] = [
            *_reads(p),
            call(
                "return_delivered_order_items",
                order_id=p["order_id"],
                item_ids=[p["items"][0]["item_id"]],
                payment_method_id=_card(db, p),
            ),
        ]
        found["RETAIL_CANCEL_REASON"] = [
            *_reads(p),
            call("cancel_pending_order", order_id=p["order_id"], reason="found it cheaper"),
        ]
    return [
        {"id": f"violates-{code.lower()}", "context": {}, "calls": calls, "expect": code}
        for code, calls in sorted(found.items())
    ]
