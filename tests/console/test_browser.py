"""The console in a real browser (Debian's headless chromium, driven over DevTools): every page
loads with no error the page reports, the filters narrow the list, a decision made in the test
is found and opened by keyboard, and the what-if turn shows a hidden tool's predicate."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

import pytest

from maitred.console import Access, WhatIf, create_console
from maitred.log import open_log
from maitred.serve import load_config, open_engine

from .cdp import CHROMIUM, Page, browser
from .conftest import Made
from .live import serving

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        CHROMIUM is None, reason="needs Debian's chromium (make browser-deps installs it)"
    ),
]


@pytest.fixture
def site(made: Made) -> Iterator[str]:
    engine = open_engine(replace(load_config(made.config), log=None))
    log = open_log(made.log, read_only=True)
    try:
        with serving(create_console(log, Access(open=True), what_if=WhatIf(engine))) as url:
            yield url
    finally:
        log.close()
        engine.close()


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Page]:
    with browser(tmp_path / "profile") as opened:
        yield opened


def _rows(page: Page) -> list[str]:
    """The ids in the decisions table, top to bottom."""
    return list(
        page.js(
            "Array.from(document.querySelectorAll('table.decisions tbody tr td:nth-child(3)'))"
            ".map(td => td.textContent)"
        )
    )


def test_every_page_loads_with_no_error(site: str, page: Page, made: Made) -> None:
    paths = [
        "/",
        "/decisions",
        "/decisions?kind=turn",
        f"/decisions/{quote(made.turn_free, safe='')}",
        f"/decisions/{made.refused}",
        f"/decisions/{made.allowed}",
        "/accounts",
        "/accounts/acc-free",
        "/accounts/acc-free?message=connect+my+custom+domain",
        "/verify",
    ]
    for width in (1200, 390):  # a desktop and a phone
        page.width(width, mobile=width < 500)
        for path in paths:
            page.go(site + path)
            assert page.js("document.querySelector('main h1').textContent"), path
            # nothing wider than the screen but the tables' own scrolling regions
            wide = page.js("document.documentElement.scrollWidth <= window.innerWidth + 1")
            assert wide, f"{path} scrolls sideways at {width}px"
    assert page.errors == []


def test_filters_narrow_the_list(site: str, page: Page, made: Made) -> None:
    page.go(site + "/decisions")
    everything = _rows(page)
    assert {made.turn_free, made.turn_pro, made.refused, made.allowed} <= set(everything)
    # by keyboard: "/" moves to the first filter; Tab to the account field; Enter filters
    page.key("/", "Slash", "/", 191)
    assert page.js("document.activeElement.id") == "f-tenant"
    page.key("Tab", "Tab", "", 9)
    assert page.js("document.activeElement.id") == "f-account"
    page.type("acc-free")
    page.enter_and_wait()
    narrowed = _rows(page)
    assert set(narrowed) == {made.turn_free, made.refused}
    assert page.js("document.getElementById('f-account').value") == "acc-free"
    page.go(site + "/decisions?code=TOOL_NOT_OFFERED")
    assert _rows(page) == [made.refused]
    page.go(site + "/decisions?kind=turn")
    assert set(_rows(page)) == {made.turn_free, made.turn_pro}
    assert page.errors == []


def test_a_decision_made_in_the_test_is_found_and_opened(site: str, page: Page, made: Made) -> None:
    page.go(site + "/decisions?session=s-free&kind=call")
    assert _rows(page) == [made.refused]
    # follow the row's link from the keyboard: focus it, press Enter
    page.js("document.querySelector('table.decisions tbody a[href*=\"/decisions/\"]').focus()")
    page.enter_and_wait()
    title = page.js("document.querySelector('main h1').textContent")
    assert made.refused in title
    text = page.js("document.querySelector('main').innerText")
    assert "TOOL_NOT_OFFERED" in text and "connect_custom_domain" in text
    assert made.turn_free in text  # the offering turn
    checks = page.js(
        "Array.from(document.querySelectorAll('section[aria-labelledby=h-chain] tbody tr'))"
        ".map(tr => tr.innerText)"
    )
    assert any("hash" in c and "ok" in c for c in checks) and not any("broken" in c for c in checks)
    assert page.errors == []


def test_the_what_if_shows_a_hidden_tools_predicate(site: str, page: Page) -> None:
    page.go(site + "/accounts/acc-free")
    page.js("document.getElementById('f-msg').focus()")
    page.type("connect my custom domain name")
    page.enter_and_wait()
    result = page.js("document.querySelector('.whatif-result').innerText")
    assert "not logged" in result
    hidden = page.js("document.querySelector('table.hidden tbody').innerText")
    assert "connect_custom_domain" in hidden and "on_free_plan" in hidden
    assert '"free"' in hidden  # the value the predicate read
    assert page.errors == []
