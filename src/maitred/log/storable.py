"""What either backend can store, checked before a row is buffered: a bad row fails alone.

Rows are committed in groups (:mod:`maitred.log._sql`): one transaction carries the decisions
of many callers, tenants included. A value the database refuses inside that transaction would
fail everyone's rows with it. So every text value of a row is checked here, at ``write``, and a
row that cannot be stored is refused alone with :class:`~maitred.errors.UnstorableError`,
naming the column -- before it reaches a batch:

* **NUL** (U+0000): PostgreSQL ``text`` cannot hold it (SQLite can, but one log file must be
  movable to the other backend, and a client's NUL is refused on both alike);
* **a lone surrogate** (``"\\ud800"``): not a character, no UTF-8 encoding; neither driver
  can send it;
* **a key longer than** :data:`MAX_KEY_BYTES` **bytes** of UTF-8 in a column that is part of
  an index (ids, session ids, account ids, tenants, tool names): a PostgreSQL B-tree entry holds
  at most about 2.7 KB, and the session index holds three such columns.

JSON columns hold canonical JSON, in which a NUL is the escape ``\\u0000`` (storable); a lone
surrogate would still be there raw, and is refused the same way. The adapters check what their
clients send against the same rules first (:mod:`maitred._ijson`), so this is the backstop.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from maitred.errors import UnstorableError

#: the longest id (UTF-8 bytes) an indexed column accepts: three fit one PostgreSQL index entry
MAX_KEY_BYTES = 768
#: the longest id a client may give (a session id, a message id): room left for what maitred
#: puts in front of it (a turn id is ``<run id>/<message id>``)
MAX_ID_BYTES = 512
_BAD = re.compile("[\x00\ud800-\udfff]").search


def text_fault(value: str) -> str:
    """Why ``value`` cannot be stored as text (``""`` when it can)."""
    found = _BAD(value)
    if found is None:
        return ""
    at = found.start()
    if found.group() == "\x00":
        return f"holds a NUL character (U+0000) at offset {at}, which PostgreSQL text cannot store"
    return f"holds a lone surrogate (U+{ord(found.group()):04X}) at offset {at}: not a character"


def key_fault(value: str, limit: int = MAX_KEY_BYTES) -> str:
    """Why ``value`` cannot be an indexed id of at most ``limit`` bytes (``""``: it can)."""
    if len(value) * 4 > limit and len(value.encode("utf-8", "surrogatepass")) > limit:
        return f"is longer than {limit} bytes of UTF-8, the most an id may be"
    return text_fault(value)


def identity_fault(value: str, limit: int = MAX_ID_BYTES) -> str:
    """Why ``value`` cannot be an identity a caller presents at an edge (``""``: it can).

    Every identity the service and the gateway accept -- a JWT's subject and tenant claims, a
    static token's account, a session id, a task id -- ends up as an indexed id of the log
    (a turn's ``account_id`` or ``conversation_id``, a decision's ``session_id``, a task's
    decision id), next to what maitred puts in front of it. The edges ask this when they
    authenticate or receive the identity, so one the log could not store is refused there as
    the caller's error (a 401 ``invalid_token``, a 4xx naming the field), never later as an
    unavailable gate: empty, NUL, a lone surrogate, or longer than ``limit`` bytes of UTF-8
    (:data:`MAX_ID_BYTES` by default, the room a client's id has).
    """
    if not value:
        return "is empty"
    return key_fault(value, limit)


def check_row(
    what: str, columns: Sequence[str], row: Sequence[Any], keys: Iterable[str] = ()
) -> None:
    """Refuse a row holding a value the log cannot store (one scan when all is well).

    Args:
        what: the row, for the message (``turn 'r:m1'``).
        columns: the row's column names, in order.
        row: its values.
        keys: the columns that are indexed ids (length-checked too).

    Raises:
        UnstorableError: naming the row, the column and the fault.
    """
    texts = [v for v in row if type(v) is str]
    if _BAD("".join(texts)) is not None:
        for name, value in zip(columns, row, strict=True):
            if type(value) is str and (fault := text_fault(value)):
                raise _error(what, name, fault)
    for name in keys:
        value = row[columns.index(name)]
        if type(value) is str and (fault := key_fault(value)):
            raise _error(what, name, fault)


def check_ids(what: str, ids: Mapping[str, str]) -> None:
    """Refuse ids (column -> value) before any work is done on them: an account id holding a
    lone surrogate cannot even be hashed into its snapshot, let alone be logged.

    Raises:
        UnstorableError: naming ``what``, the column and the fault.
    """
    for column, value in ids.items():
        if fault := key_fault(value):
            raise _error(what, column, fault)


def _error(what: str, column: str, fault: str) -> UnstorableError:
    return UnstorableError(
        f"{what} cannot be logged: its {column} {fault}; it is refused alone (nothing of it is "
        "logged, other rows are unaffected) -- remove the character or shorten the id",
        column,
    )
