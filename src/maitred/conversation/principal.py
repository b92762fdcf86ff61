"""Who asks: the one principal a conversation decides for.

A :class:`Principal` is fixed when a conversation opens -- from the launch (stdio, the library)
or from the authenticated credential (HTTP) -- and never taken from a request's body. Every
decision a :class:`~maitred.conversation.Conversation` makes names it: the account whose
state the gates read, the tenant whose run and session the log keeps it under, the OAuth
scopes the credential granted (the decision kernel's first rule), and the credential's
subject, so that two credentials of one account stay two principals in the log.

:func:`holder_id` is the id a sessionless (2026-07-28) principal is recorded under: the same
on every replica and after a restart, so what was listed or disclosed to it is read alike
everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from maitred._canonical import content_hash


@dataclass(frozen=True)
class Principal:
    """One caller, as the gates know it.

    Attributes:
        account: whose state the gates read.
        tenant: whose run and sessions its decisions are logged under (``""``: none).
        granted: the OAuth scopes the credential granted (``None``: not said, as over stdio
            or from a library caller that does not say; an empty set is a grant of nothing).
        subject: the credential's subject (a JWT's ``sub``, a static token's id; ``""``:
            none, as over stdio). Two credentials of one account are two principals.
    """

    account: str
    tenant: str = ""
    granted: frozenset[str] | None = None
    subject: str = ""

    def holder(self, *, finds: bool) -> str:
        """The log's session id for this principal on a sessionless connection
        (:func:`holder_id`)."""
        return holder_id(self.tenant, self.account, self.granted, finds=finds)


def holder_id(tenant: str, account: str, granted: frozenset[str] | None, *, finds: bool) -> str:
    """The log's session id for a 2026-07-28 principal: the same for one (tenant, account,
    granted scopes) on every replica and across restarts, and apart for the two disclosure
    modes (what a listing offered under ``all`` is no disclosure under ``find_tools``).

    ``None`` scopes (stdio: not said) and an empty grant are distinct principals, as they are
    to the decision kernel."""
    scopes = None if granted is None else sorted(granted)
    digest = content_hash([tenant, account, scopes, "find_tools" if finds else "all"])
    short = digest.split(":")[-1][:24]
    return f"{tenant}-p-{short}" if tenant else f"p-{short}"
