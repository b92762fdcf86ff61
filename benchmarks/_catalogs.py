"""Synthetic but realistic workloads for the speed benchmarks: catalogs, accounts, messages.

Every skill text comes from the 199 MetaTool tools (see ``metatool_routing.load_tools``): the
first 199 skills of a catalog are those tools as they are (a smaller catalog is a seeded sample
of them), and every further skill is a seeded *variant* of one of them::

    name         weather-tool-eu-retail-01234
    description  <the tool's description> Built for retail teams in the EU. Adds scheduled
                 reports and CSV export. Related: <a few words of another tool's description>.
    body         the tool's manifest text (``description_for_model``), shared by its variants

Each skill carries a contract of 2-4 exit predicates, CEL expressions over ``account.*``,
``billing.*``, ``domain.*``, ``site.*`` and ``usage.*`` keys drawn from :data:`PREDICATES`
(one compiled object per template, shared by the skills that use it: compiling 300,000 copies
of 24 expressions would only slow the set-up, while evaluation costs the same either way).
Accounts (:func:`make_accounts`) hold a random value for every key those predicates read, and
messages are MetaTool queries (:func:`load_queries`), each sent by a random account.

Everything is a function of ``seed``: the same arguments build the same catalog, hence the
same ``Catalog.version``, so an index cached for it is found again on the next run.
"""

from __future__ import annotations

import csv
import itertools
import random
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from metatool_routing import load_tools
from numpy.typing import NDArray

from maitred.contract import Contract
from maitred.contract.predicate import CelPredicate, FailMode
from maitred.recall.dense import Embedder, Progress
from maitred.records import Message
from maitred.skills.model import Catalog, Skill
from maitred.state.memory import MemoryStateProvider

REPO = Path(__file__).resolve().parents[1]


def _shared_metatool() -> Path:
    """MetaTool's data: ``shared/data/metatool`` beside the checkout, or beside a folder
    above it (a git worktree of the checkout lives a level or two further down)."""
    for above in REPO.parents:
        found = above / "shared" / "data" / "metatool"
        if found.is_dir():
            return found
    return REPO.parent / "shared" / "data" / "metatool"  # named in the error when it is missing


DATA = _shared_metatool()
NOW = 1_760_000_000
DAY = 86_400

# fmt: off
#: (name, CEL expression, keys read, on_missing, max_age_s, message)
PREDICATES: tuple[tuple[str, str, tuple[str, ...], FailMode, float | None, str], ...] = (
    ("on_free_plan", 'account.plan == "free"', ("account.plan",), "block", None,
     "This needs a paid plan."),
    ("below_premium", 'account.plan in ["free", "basic"]', ("account.plan",), "block", None,
     "This needs the Premium plan or higher."),
    ("not_business", 'account.plan != "business"', ("account.plan",), "block", None,
     "This is a Business plan feature."),
    ("email_not_verified", "!(account.email_verified in [true, 1])",
     ("account.email_verified",), "block", 604_800.0, "Verify the email address first."),
    ("account_too_new", "account.created_at > now - 30 * 86400", ("account.created_at",),
     "block", None, "Accounts younger than 30 days cannot do this."),
    ("seats_full", "account.seats_used >= account.seats_limit",
     ("account.seats_used", "account.seats_limit"), "block", None, "Every seat is taken."),
    ("payment_past_due", 'billing.status == "past_due"', ("billing.status",), "offer",
     21_600.0, "An invoice is past due."),
    ("billing_inactive", 'billing.status in ["past_due", "cancelled", "none"]',
     ("billing.status",), "block", 21_600.0, "Billing is not active."),
    ("no_payment_method", '!(billing.payment_method in ["card", "paypal", "invoice"])',
     ("billing.payment_method",), "block", None, "No payment method on file."),
    ("refund_window_closed", "now - billing.last_payment_at > 14 * 86400",
     ("billing.last_payment_at",), "block", None, "The refund window has closed."),
    ("no_domain", 'domain.status in ["none", "pending"]', ("domain.status",), "block", None,
     "There is no active domain."),
    ("domain_expired", 'domain.status == "expired"', ("domain.status",), "block", None,
     "The domain has expired."),
    ("domain_locked", 'domain.registrar_lock in [true, 1] || domain.status == "transfer_locked"',
     ("domain.registrar_lock", "domain.status"), "block", 21_600.0, "The domain is locked."),
    ("domain_expiring", "domain.expires_at - now < 15 * 86400",
     ("domain.expires_at",), "offer", None, "The domain expires within 15 days."),
    ("site_suspended", 'site.status == "suspended"', ("site.status",), "block", None,
     "The site is suspended."),
    ("site_not_live", 'site.status in ["draft", "archived", "suspended"]', ("site.status",),
     "block", None, "The site is not published."),
    ("site_too_many_pages", "site.pages > 500", ("site.pages",), "offer", None,
     "The site is over the page limit."),
    ("storage_full", "site.storage_mb >= usage.storage_quota_mb",
     ("site.storage_mb", "usage.storage_quota_mb"), "block", None, "Storage is full."),
    ("api_quota_exhausted", "usage.api_calls >= usage.api_quota",
     ("usage.api_calls", "usage.api_quota"), "block", 3_600.0, "The API quota is used up."),
    ("builds_exhausted", "usage.builds > 300", ("usage.builds",), "block", None,
     "This month's builds are used up."),
    ("region_unsupported", 'account.country in ["IR", "KP", "SY", "CU"]', ("account.country",),
     "block", None, "Not available in this country."),
    ("trial_expired", 'account.plan == "trial" && account.trial_ends_at < now',
     ("account.plan", "account.trial_ends_at"), "block", None, "The trial has ended."),
    ("two_factor_off", "!(account.two_factor in [true, 1])", ("account.two_factor",), "offer",
     None, "Two-factor authentication is off."),
    ("risk_flagged", "account.risk_score >= 80", ("account.risk_score",), "block", None,
     "The account is under review."),
)

VERTICALS = (
    "retail", "healthcare", "education", "legal", "finance", "travel", "real-estate",
    "hospitality", "logistics", "media", "nonprofit", "gaming", "automotive", "insurance",
    "agency", "saas", "manufacturing", "public-sector", "fitness", "food",
)
REGIONS = (
    ("us", "in the US"), ("eu", "in the EU (GDPR data residency)"), ("uk", "in the UK"),
    ("apac", "across Asia-Pacific"), ("latam", "in Latin America"), ("ca", "in Canada"),
    ("de", "in Germany"), ("fr", "in France"), ("jp", "in Japan"), ("in", "in India"),
    ("au", "in Australia"), ("br", "in Brazil"), ("global", "worldwide"),
)
FEATURES = (
    "scheduled reports", "CSV export", "bulk actions", "webhooks", "team sharing",
    "an audit trail", "offline mode", "multi-currency support", "SSO sign-in",
    "a Slack integration", "email digests", "role-based access", "API access", "saved searches",
    "custom fields", "usage alerts", "dark mode", "PDF summaries", "calendar sync",
    "a mobile widget",
)
_WORD = re.compile(r"[A-Za-z][A-Za-z-]{3,}")
_STOP = frozenset({"tool", "that", "with", "from", "this", "users", "user", "provides", "which",
                   "their", "about", "information", "such", "other", "your", "into", "also"})
# fmt: on


def slug(name: str) -> str:
    """``"PDF&URLTool"`` -> ``"pdf-url-tool"``: lowercase words joined by single hyphens."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", name))
    return "-".join(w for w in re.split(r"[^a-z0-9]+", words.lower()) if w)


def _predicates() -> list[CelPredicate]:
    return [
        CelPredicate(expr, name, reads, on_missing=policy, max_age_s=age, message=message)
        for name, expr, reads, policy, age, message in PREDICATES
    ]


def _contract(rng: random.Random, pool: Sequence[CelPredicate]) -> Contract:
    return Contract(
        cost=float(rng.choice((1, 1, 1, 2, 3))),
        mutates=rng.random() < 0.4,
        exit_predicates=tuple(rng.sample(list(pool), rng.randint(2, 4))),
    )


def _variant(
    rng: random.Random, i: int, tool: dict[str, str], words: Sequence[Sequence[str]]
) -> tuple[str, str]:
    vertical = rng.choice(VERTICALS)
    region, where = rng.choice(REGIONS)
    features = rng.sample(FEATURES, 2)
    other = rng.choice(words)
    related = " ".join(rng.sample(list(other), min(4, len(other)))) if other else "general use"
    name = f"{slug(tool['name'])}-{region}-{vertical}-{i:06d}"
    description = (
        f"{tool['description'].rstrip('.')}. Built for {vertical.replace('-', ' ')} teams "
        f"{where}. Adds {features[0]} and {features[1]}. Related: {related}."
    )
    return name, description


def make_catalog(n: int, seed: int = 0, data: Path = DATA) -> Catalog:
    """A catalog of ``n`` distinct skills (see the module docstring)."""
    rng = random.Random(f"catalog:{seed}")
    tools = load_tools(data)
    pool = _predicates()
    words = [
        [w.lower() for w in _WORD.findall(t["description"]) if w.lower() not in _STOP]
        for t in tools
    ]
    skills: list[Skill] = []
    base = tools if n >= len(tools) else rng.sample(tools, n)
    for tool in base:
        skills.append(
            Skill(
                name=slug(tool["name"]),
                description=tool["description"],
                kind="tool",
                body=tool["body"],
                contract=_contract(rng, pool),
            )
        )
    for i in range(len(skills), n):
        tool = rng.choice(tools)
        name, description = _variant(rng, i, tool, words)
        skills.append(
            Skill(
                name=name,
                description=description,
                kind="tool",
                body=tool["body"],
                contract=_contract(rng, pool),
            )
        )
    return Catalog(skills=tuple(skills))


def state_keys() -> tuple[str, ...]:
    """Every state key the predicate templates read."""
    return tuple(sorted({k for p in PREDICATES for k in p[2]}))


#: key -> (values, weights): most accounts are in good standing, as in real traffic
_CHOICES: dict[str, tuple[tuple[Any, ...], tuple[int, ...]]] = {
    "account.plan": (("free", "basic", "premium", "business", "trial"), (30, 25, 25, 15, 5)),
    "account.country": (
        ("US", "GB", "DE", "FR", "BR", "IN", "JP", "IR"),
        (40, 10, 10, 8, 8, 12, 10, 2),
    ),
    "billing.status": (("active", "past_due", "cancelled", "none"), (85, 7, 4, 4)),
    "billing.payment_method": (("card", "paypal", "invoice", "none"), (60, 20, 12, 8)),
    "domain.status": (
        ("active", "pending", "expired", "none", "transfer_locked"),
        (80, 5, 5, 5, 5),
    ),
    "site.status": (("live", "draft", "archived", "suspended"), (85, 7, 4, 4)),
    "account.email_verified": ((True, False), (85, 15)),
    "account.two_factor": ((True, False), (60, 40)),
    "domain.registrar_lock": ((True, False), (15, 85)),
}
#: key -> (low, high) in days from NOW, for timestamps
_DATES = {
    "account.created_at": (-1500, 0),
    "account.trial_ends_at": (-20, 30),
    "billing.last_payment_at": (-20, 0),
    "domain.expires_at": (-10, 365),
}


def _value(rng: random.Random, key: str, row: dict[str, Any]) -> Any:
    if key in _CHOICES:
        values, weights = _CHOICES[key]
        return rng.choices(values, weights)[0]
    if key in _DATES:  # int unix seconds (CEL does not mix int and double)
        low, high = _DATES[key]
        return NOW + rng.randint(low, high) * DAY
    limits = {
        "account.seats_used": "account.seats_limit",
        "usage.api_calls": "usage.api_quota",
        "site.storage_mb": "usage.storage_quota_mb",
    }
    if key in limits:  # usage up to 10% over its limit (limits are drawn first)
        return rng.randint(0, int(row[limits[key]] * 1.1))
    ranges = {
        "account.seats_limit": (5, 25),
        "account.risk_score": (0, 100),
        "site.pages": (1, 600),
        "usage.storage_quota_mb": (1_000, 20_000),
        "usage.api_quota": (10_000, 100_000),
        "usage.builds": (0, 330),
    }
    low, high = ranges[key]
    if key == "account.risk_score":
        return int(high * rng.random() ** 3)
    return rng.randint(low, high)


def make_accounts(n: int = 300, seed: int = 0) -> dict[str, dict[str, Any]]:
    """``n`` accounts, each with a random value for every key in :func:`state_keys`."""
    rng = random.Random(f"accounts:{seed}")
    accounts: dict[str, dict[str, Any]] = {}
    for i in range(n):
        row: dict[str, Any] = {}
        for key in sorted(state_keys(), key=lambda k: ("_limit" not in k and "quota" not in k, k)):
            row[key] = _value(rng, key, row)
        accounts[f"acct-{i:04d}"] = dict(sorted(row.items()))
    return accounts


def make_clock() -> Callable[[], float]:
    """A clock that starts at :data:`NOW` and ticks one second per reading.

    Give the same one to the provider and the pipeline (whose gate judges staleness by it):
    predicates that compare dates with ``now`` then give the same verdicts on every run, and no
    two snapshots share a hash (as with a wall clock, so the log stores one snapshot per turn).
    """
    ticks = itertools.count(NOW)
    return lambda: float(next(ticks))


def make_provider(clock: Callable[[], float], n: int = 300, seed: int = 0) -> MemoryStateProvider:
    """A :class:`MemoryStateProvider` over :func:`make_accounts`, on ``clock``."""
    return MemoryStateProvider(make_accounts(n, seed), clock=clock)


def load_queries(n: int, seed: int = 0, data: Path = DATA) -> list[str]:
    """``n`` distinct MetaTool queries (all_clean_data.csv), a seeded sample in random order."""
    with (data / "all_clean_data.csv").open(encoding="utf-8") as f:
        texts = list(dict.fromkeys(row["Query"].strip() for row in csv.DictReader(f)))
    texts = [t for t in texts if t]
    if n > len(texts):
        raise SystemExit(f"asked for {n} distinct queries; {data} has {len(texts)}")
    return random.Random(f"queries:{seed}").sample(texts, n)


def make_messages(
    texts: Sequence[str], accounts: Sequence[str], prefix: str, seed: int = 0
) -> list[Message]:
    """One message per text, each from a random account, with ids ``<prefix>-<i>``."""
    rng = random.Random(f"messages:{prefix}:{seed}")
    return [
        Message(f"{prefix}-{i}", text, rng.choice(accounts), f"{prefix}-c{i // 4}", NOW + i)
        for i, text in enumerate(texts)
    ]


class DistinctTextEmbedder:
    """Wraps an embedder so that each distinct text is encoded once per call.

    Variants share their tool's body, so a 100,000-skill catalog holds only ~150 distinct
    bodies; ``embed_fields`` would encode every copy (bodies are the longest texts, ~13 a second
    on 2 cores). Used only to *build* the cached index: the benchmark then loads it with a plain
    :class:`~maitred.recall.MiniLMEmbedder`, as a deployment would.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim

    def encode(
        self, texts: Sequence[str], *, progress: Progress | None = None
    ) -> NDArray[np.float32]:
        distinct = list(dict.fromkeys(texts))
        vectors = self.inner.encode(distinct, progress=progress)
        row = {text: i for i, text in enumerate(distinct)}
        return vectors[[row[t] for t in texts]]
