"""Screenshots of every console page for the docs (docs/console/*.png), taken in headless
chromium over a log of real decisions made through the service (the browser tests' fixture).

    PYTHONPATH=src .venv/bin/python -m tests.console.screenshots docs/console

Each page at a desktop width, and the decisions page at a phone's width too.
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

from tests.console.cdp import browser
from tests.console.conftest import make_decisions
from tests.console.live import serving

from maitred.console import Access, WhatIf, create_console
from maitred.log import open_log
from maitred.serve import load_config, open_engine


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        made = make_decisions(root)
        engine = open_engine(replace(load_config(made.config), log=None))
        log = open_log(made.log, read_only=True)
        try:
            app = create_console(log, Access(open=True), what_if=WhatIf(engine))
            with serving(app) as site, browser(root / "profile") as page:
                shots = {
                    "overview": "/",
                    "decisions": "/decisions",
                    "decision": f"/decisions/{made.allowed}",
                    "turn": f"/decisions/{quote(made.turn_free, safe='')}",
                    "account": "/accounts/acc-free?message=connect+my+custom+domain",
                    "verify": "/verify",
                }
                page.width(1200, 800)
                for name, path in shots.items():
                    page.go(site + path)
                    page.screenshot(out / f"{name}.png")
                page.width(390, 800, mobile=True)
                page.go(site + "/decisions")
                page.screenshot(out / "decisions-phone.png")
                if page.errors:
                    raise SystemExit(f"the pages reported errors: {page.errors}")
        finally:
            log.close()
            engine.close()
    for png in sorted(out.glob("*.png")):
        print(f"wrote {png} ({png.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/console"))
