"""sitecare: the demo domain -- a website builder's customer-care assistant.

Eleven Agent Skills folders under ``skills/`` (connect a domain, transfer it out, upgrade,
cancel, refund, restore a version, set up a mailbox, publish, change the site address, reset
two-step verification, update the payment method), each with a ``maitred.yaml`` contract whose
exit predicates its own ``scripts/procedure.py`` checks, plus generators for a seeded SQLite
accounts database and a stream of customer messages labelled with the skill they ask for.
See :mod:`maitred.lab.domains.sitecare.generate`.
"""

from maitred.lab.domains.sitecare.generate import (
    AS_OF,
    COLUMNS,
    TABLES,
    account_id,
    generate_messages,
    skills_dir,
    write_accounts,
    write_messages,
)

__all__ = [
    "AS_OF",
    "COLUMNS",
    "TABLES",
    "account_id",
    "generate_messages",
    "skills_dir",
    "write_accounts",
    "write_messages",
]
