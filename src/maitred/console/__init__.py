"""``maitred console``: a read-only web console over a decision log (SQLite or PostgreSQL).

Server-rendered pages -- the overview (the funnel over time, refusals by code, per tenant),
the decisions (filtered, paginated on the log's indexes), one decision (what ``maitred log
show`` shows, and whether the row stands in its chains), one account (its recent decisions and
a what-if turn that is never logged) and ``verify`` -- each also JSON at the same URL
(:mod:`maitred.console.app`). Starlette, like the service (the ``serve`` extra); assets live in
the package (``static/``), so it needs no network and no build step.

The console is an adapter: it reads the log through :mod:`maitred.log.browse`,
:mod:`maitred.log.lookup`, :mod:`maitred.log.rowcheck` and :mod:`maitred.analytics.overview`,
and asks an engine without a log for what-if turns (:mod:`maitred.console.whatif`); it decides
nothing itself and writes nothing.
"""

from maitred.console.app import MOUNT, OPERATOR_SCOPE, Access, Mounted, create_console, wants_json
from maitred.console.whatif import WhatIf, unlogged

__all__ = [
    "MOUNT",
    "OPERATOR_SCOPE",
    "Access",
    "Mounted",
    "WhatIf",
    "create_console",
    "unlogged",
    "wants_json",
]
