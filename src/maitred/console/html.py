"""The console's HTML: one page frame, and the small pieces every page is built of.

Every value a page shows comes from the log or the request and is escaped here
(:func:`esc`, :func:`attr`), never written into markup raw. Pages are plain HTML5 with
landmarks (``header``, ``nav``, ``main``), a skip link, labelled form fields, tables with a
caption and header cells, and one stylesheet and one script from the package itself
(``static/``): the console needs no network and no build step.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlencode

#: the pages of the navigation bar: (path, label)
NAV: tuple[tuple[str, str], ...] = (
    ("/", "Overview"),
    ("/decisions", "Decisions"),
    ("/accounts", "Accounts"),
    ("/verify", "Verify"),
)


def esc(value: Any) -> str:
    """Text for an element's content."""
    return html.escape("" if value is None else str(value), quote=False)


def attr(value: Any) -> str:
    """Text for an attribute's value (quotes escaped)."""
    return html.escape("" if value is None else str(value), quote=True)


def when(seconds: float | None) -> str:
    """A unix time as ``2026-12-04 22:30:05Z`` (UTC, to the second), for people."""
    if seconds is None:
        return "-"
    try:
        return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return str(seconds)


class Links:
    """URLs inside the console, under the path it is mounted at (``root``: ``""`` or
    ``/console``)."""

    def __init__(self, root: str) -> None:
        self.root = root.rstrip("/")

    def to(self, path: str, query: Mapping[str, Any] | None = None) -> str:
        url = f"{self.root}{path}"
        if query:
            kept = {k: v for k, v in query.items() if v not in (None, "")}
            if kept:
                url += "?" + urlencode(kept)
        return url

    def decision(self, decision_id: str) -> str:
        return self.to(f"/decisions/{quote(decision_id, safe='')}")

    def account(self, account: str) -> str:
        return self.to(f"/accounts/{quote(account, safe='')}")

    def static(self, name: str) -> str:
        return self.to(f"/static/{name}")


def page(links: Links, title: str, body: str, *, current: str, note: str = "") -> str:
    """A whole page: the frame, the navigation (``current`` marked), then ``body``."""
    nav = "".join(
        f'<li><a href="{attr(links.to(path))}"'
        + (' aria-current="page"' if path == current else "")
        + f">{esc(label)}</a></li>"
        for path, label in NAV
    )
    banner = f'<p class="note" role="note">{esc(note)}</p>' if note else ""
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · maitred console</title>"
        '<link rel="icon" href="data:,">'  # no favicon request
        f'<link rel="stylesheet" href="{attr(links.static("console.css"))}">'
        f'<script src="{attr(links.static("console.js"))}" defer></script>'
        '</head><body><a class="skip" href="#main">Skip to content</a>'
        '<header><p class="brand">maitred console <span class="ro">read-only</span></p>'
        f'<nav aria-label="Console pages"><ul>{nav}</ul></nav></header>'
        f'<main id="main" tabindex="-1"><h1>{esc(title)}</h1>{banner}{body}</main>'
        "</body></html>\n"
    )


def table(
    caption: str,
    heads: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    cls: str = "",
    empty: str = "Nothing to show.",
) -> str:
    """A table of cells already in HTML (escape them with :func:`esc`)."""
    body = "".join(
        "<tr>"
        + "".join(f'<td data-label="{attr(h)}">{c}</td>' for h, c in zip(heads, row, strict=True))
        + "</tr>"
        for row in rows
    )
    if not body:
        return f'<p class="empty">{esc(empty)}</p>'
    head = "".join(f'<th scope="col">{esc(h)}</th>' for h in heads)
    klass = f' class="{attr(cls)}"' if cls else ""
    return (
        f'<div class="scroll" tabindex="0" role="region" aria-label="{attr(caption)}">'
        f"<table{klass}><caption>{esc(caption)}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
    )


def facts(pairs: Iterable[tuple[str, str]]) -> str:
    """A description list of (term, HTML value) pairs."""
    items = "".join(f"<div><dt>{esc(k)}</dt><dd>{v}</dd></div>" for k, v in pairs)
    return f'<dl class="facts">{items}</dl>'


def link(href: str, text: Any) -> str:
    return f'<a href="{attr(href)}">{esc(text)}</a>'


def code(value: Any) -> str:
    return f"<code>{esc(value)}</code>"


def badge(text: str, kind: str) -> str:
    """A short word with a class for its colour (``ok``, ``bad``, ``warn``, ``info``)."""
    return f'<span class="badge {attr(kind)}">{esc(text)}</span>'


def json_block(value: Any) -> str:
    import json

    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    return f'<pre class="json">{esc(text)}</pre>'
