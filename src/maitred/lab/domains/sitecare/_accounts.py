"""Seeded, correlated account state for the sitecare demo: one row per table per account.

Each ``_<root>(rng, ...)`` function draws one account's row for one table, or ``None`` when the
account has no row there (missing state: the gate then applies each predicate's ``on_missing``
fail mode). The draws are correlated the way a website builder's data is:

* the plan drives everything: free accounts mostly have no billing, subscription, domain or
  mailbox rows; paid accounts almost always have billing and a subscription;
* billing status and the subscription status agree (a past-due invoice means a past-due
  subscription); monthly payers paid within the last month, yearly payers within the year;
* a connected domain is an owned or external domain that is active; mailbox limits follow the
  plan and only accounts with a connected domain have mailboxes in use.

``updated_at`` is when the row was last synced from its system of record. Most rows are
recent; a few per cent lag behind (a stalled sync), beyond the freshness bounds that the
sidecars declare, so the gate's ``on_stale`` fail modes are exercised too.

Timestamps are int unix seconds; ``last_payment_amount`` is in cents (CEL does not mix int and
double, so no float ever reaches a predicate). Booleans are Python ``bool`` here and are
stored in ``BOOLEAN`` columns as 0/1.
"""

from __future__ import annotations

import random
from typing import Any

Row = dict[str, Any]

DAY = 86400
HOUR = 3600

PLANS = ("free", "basic", "premium", "business")
PLAN_WEIGHTS = (46, 24, 20, 10)
#: monthly price in cents; a yearly payment is ten months' worth
MONTHLY_CENTS = {"basic": 900, "premium": 1800, "business": 3500}
MAILBOX_LIMIT = {"free": 0, "basic": 1, "premium": 5, "business": 50}
COUNTRIES = ("US", "GB", "DE", "FR", "ES", "IT", "NL", "CA", "AU", "BR", "IN", "IL", "PL", "SE")
COUNTRY_WEIGHTS = (30, 10, 9, 7, 5, 5, 4, 6, 5, 6, 5, 3, 3, 2)
TLDS = ("com", "com", "com", "net", "org", "co", "io", "shop", "studio", "de", "co.uk")
_WORDS_A = (
    "blue",
    "little",
    "happy",
    "green",
    "golden",
    "urban",
    "wild",
    "north",
    "bright",
    "silver",
    "maple",
    "coastal",
    "red",
    "quiet",
    "lucky",
    "sunny",
    "iron",
    "velvet",
    "honey",
    "river",
)
_WORDS_B = (
    "bakery",
    "studio",
    "yoga",
    "paws",
    "garden",
    "designs",
    "coffee",
    "photo",
    "crafts",
    "bikes",
    "books",
    "dental",
    "florist",
    "fitness",
    "law",
    "tattoo",
    "pottery",
    "kitchen",
    "travel",
    "music",
)


def domain_name(rng: random.Random) -> str:
    """A plausible small-business domain name."""
    return f"{rng.choice(_WORDS_A)}{rng.choice(_WORDS_B)}.{rng.choice(TLDS)}"


def _synced(rng: random.Random, as_of: int, fresh_s: int, stale_share: float) -> int:
    """When a row was last synced: within ``fresh_s``, or (a stalled sync) much earlier."""
    if rng.random() < stale_share:
        return as_of - rng.randint(fresh_s * 6 + DAY, fresh_s * 6 + 5 * DAY)
    return as_of - rng.randint(0, fresh_s)


def draw_account(rng: random.Random, as_of: int) -> dict[str, Row | None]:
    """Every table's row (or ``None``) for one account, keyed by root name."""
    plan = rng.choices(PLANS, PLAN_WEIGHTS)[0]
    paid = plan != "free"
    account = _account(rng, as_of, plan)
    billing = _billing(rng, as_of, plan)
    subscription = _subscription(rng, as_of, plan, billing)
    domain = _domain(rng, as_of, paid)
    connected = bool(domain and domain["connected"])
    return {
        "account": account,
        "billing": billing,
        "subscription": subscription,
        "domain": domain,
        "site": _site(rng, as_of, paid),
        "mailbox": _mailbox(rng, as_of, plan, connected),
        "security": _security(rng, as_of),
    }


def _account(rng: random.Random, as_of: int, plan: str) -> Row | None:
    if rng.random() < 0.005:
        return None  # an account the CRM has not synced yet
    verified = rng.random() < (0.97 if plan != "free" else 0.80)
    return {
        "plan": plan,
        "created_at": as_of - rng.randint(1, 2400) * DAY,
        "email_verified": verified,
        "country": rng.choices(COUNTRIES, COUNTRY_WEIGHTS)[0],
        "updated_at": _synced(rng, as_of, 2 * DAY, 0.02),
    }


def _billing(rng: random.Random, as_of: int, plan: str) -> Row | None:
    if plan == "free":
        if rng.random() < 0.70:
            return None  # never paid
        status = rng.choice(("none", "cancelled", "cancelled"))
        paid_at = None if status == "none" else as_of - rng.randint(40, 900) * DAY
        amount = None if paid_at is None else MONTHLY_CENTS[rng.choice(("basic", "premium"))]
        auto_renew = False
    else:
        if rng.random() < 0.02:
            return None  # billing system row not mirrored yet
        status = rng.choices(("active", "past_due", "cancelled"), (84, 10, 6))[0]
        yearly = rng.random() < 0.35
        window = 365 if yearly else 31
        paid_at = as_of - rng.randint(0, window * DAY)
        if status == "past_due":  # the renewal failed: the last success is a period back
            paid_at -= window * DAY
        amount = MONTHLY_CENTS[plan] * (10 if yearly else 1)
        auto_renew = status == "active" and rng.random() < 0.9
    return {
        "status": status,
        "last_payment_at": paid_at,
        "last_payment_amount": amount,
        "refund_requested": paid_at is not None and rng.random() < 0.07,
        "auto_renew": auto_renew,
        "updated_at": _synced(rng, as_of, 4 * HOUR, 0.04),
    }


def _subscription(rng: random.Random, as_of: int, plan: str, billing: Row | None) -> Row | None:
    if plan == "free":
        if billing is None or billing["status"] == "none" or rng.random() < 0.3:
            return None
        status, renews_at, cancel_at_end = "cancelled", None, False
    else:
        if billing is None and rng.random() < 0.5:
            return None
        billing_status = billing["status"] if billing else "active"
        status = {"active": "active", "past_due": "past_due"}.get(billing_status, "cancelled")
        renews_at = as_of + rng.randint(1, 31) * DAY if status != "cancelled" else None
        cancel_at_end = status == "active" and rng.random() < 0.10
    return {
        "status": status,
        "renews_at": renews_at,
        "cancel_at_period_end": cancel_at_end,
        "updated_at": _synced(rng, as_of, 4 * HOUR, 0.04),
    }


def _domain(rng: random.Random, as_of: int, paid: bool) -> Row | None:
    if rng.random() >= (0.72 if paid else 0.18):
        return None
    owned = rng.random() < 0.7  # registered here, else at another registrar
    if owned:
        status = rng.choices(("active", "pending", "expired", "transfer_locked"), (76, 6, 10, 8))[0]
        registered_at: int | None = as_of - rng.randint(2, 1800) * DAY
        if rng.random() < 0.12:
            registered_at = as_of - rng.randint(0, 75) * DAY  # recently bought
        lock = rng.random() < 0.55
    else:
        status = rng.choices(("active", "pending", "none"), (80, 8, 12))[0]
        registered_at, lock = None, False
    connected = paid and status == "active" and rng.random() < 0.85
    return {
        "name": domain_name(rng) if status != "none" else None,
        "owned": owned,
        "status": status,
        "registrar_lock": lock,
        "registered_at": registered_at,
        "connected": connected,
        "updated_at": _synced(rng, as_of, 4 * HOUR, 0.03),
    }


def _site(rng: random.Random, as_of: int, paid: bool) -> Row | None:
    if rng.random() < 0.03:
        return None
    status = rng.choices(("draft", "published", "suspended", "deleted"), (24, 66, 5, 5))[0]
    versions = 1 if rng.random() < 0.18 else rng.randint(2, 120)
    changed = rng.random() < 0.22
    return {
        "status": status,
        "published": status == "published",
        "version_count": versions,
        "url_changed_at": as_of - rng.randint(0, 400) * DAY if changed else None,
        "premium_features": rng.random() < (0.45 if paid else 0.12),
        "updated_at": _synced(rng, as_of, 12 * HOUR, 0.03),
    }


def _mailbox(rng: random.Random, as_of: int, plan: str, connected: bool) -> Row | None:
    if plan == "free" and rng.random() < 0.7:
        return None
    if plan != "free" and rng.random() < 0.05:
        return None
    limit = MAILBOX_LIMIT[plan]
    count = 0
    if connected and limit:
        count = limit if rng.random() < 0.3 else rng.randint(0, limit - 1)
    return {
        "count": count,
        "limit": limit,
        "provider": rng.choice(("sitecare", "sitecare", "google", "microsoft")),
        "updated_at": _synced(rng, as_of, 12 * HOUR, 0.03),
    }


def _security(rng: random.Random, as_of: int) -> Row | None:
    if rng.random() < 0.06:
        return None
    two_factor = rng.random() < 0.55
    reset_at = None
    if two_factor and rng.random() < 0.2:
        reset_at = as_of - rng.randint(0, 120 * DAY)
        if rng.random() < 0.2:
            reset_at = as_of - rng.randint(0, DAY)  # reset earlier today
    return {
        "two_factor": two_factor,
        "identity_verified": rng.random() < 0.6,
        "last_reset_at": reset_at,
        "updated_at": _synced(rng, as_of, HOUR // 2, 0.05),
    }
