"""Retake the docs' screenshots of the app: `python scripts/screenshots.py fit memory` (default: every page).

Starts `streamlit run serve.py` (tests/browser/harness.py), opens each page in headless Chromium at a desktop
(1400 px) and a phone (390 px) width, waits until the app says it has drawn (harness.wait_until_idle: no run
under way, the figures wrapped for the width reported) and saves docs/screenshots/<page>.png and <page>-phone.png.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser.harness import launch_browser, streamlit_server, wait_until_idle  # noqa: E402

PAGES = ("overview", "parameters", "memory", "fit", "compute", "verify")
SCREENS = {"": dict(viewport={"width": 1400, "height": 2000}),  # tall: Streamlit scrolls its main area, not the page
           "-phone": dict(viewport={"width": 390, "height": 2600}, is_mobile=True, has_touch=True)}


def main(pages: list[str]) -> None:
    from playwright.sync_api import sync_playwright

    out = ROOT / "docs" / "screenshots"
    with streamlit_server() as (base, _), sync_playwright() as p:
        browser = launch_browser(p)
        for page_name in pages:
            for suffix, screen in SCREENS.items():
                ctx = browser.new_context(**screen)
                page = ctx.new_page()
                page.goto(f"{base}/{page_name}")
                wait_until_idle(page, 60_000)
                path = out / f"{page_name}{suffix}.png"
                page.screenshot(path=str(path))
                print(path.relative_to(ROOT))
                ctx.close()
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1:] or list(PAGES))
