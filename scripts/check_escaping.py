"""One-off check in headless Chromium: config names with Markdown/HTML show as typed (docs/robustness.md).

Run: python scripts/check_escaping.py (needs playwright and /usr/bin/chromium).
"""

import sys
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from playwright.sync_api import sync_playwright

from tests.browser.harness import CHROMIUM, CHROMIUM_ARGS, streamlit_server

EVIL = "**bold** [link](javascript:alert(1)) <img src=x onerror=alert(1)> :red[red] $x^2$ _it_ <b>tag</b>"
EVIL2 = "<b>B2</b> %{y} &amp; `code`"
q = {"name": EVIL[:80], "compare": "c1", "c1.name": EVIL2, "c1.num_layers": "6"}
with streamlit_server() as (base, _), sync_playwright() as p:
    b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    pg = b.new_page()
    alerts, failures = [], []
    pg.on("dialog", lambda d: (alerts.append(d.message), d.dismiss()))
    for path in ("parameters", "memory", "fit", "compute", "verify", ""):
        pg.goto(f"{base}/{path}?{urlencode(q)}")
        pg.wait_for_selector("h1", timeout=60000)
        time.sleep(6)
        res = pg.evaluate("""() => {
          const main = document.body;
          const txt = main.innerText;
          return {
            strong_bold: [...main.querySelectorAll('strong')].filter(e => e.innerText.includes('bold')).length,
            js_links: main.querySelectorAll('a[href^="javascript"]').length,
            links_named_link: [...main.querySelectorAll('a')].filter(e => e.innerText.trim() === 'link').length,
            imgs_x: main.querySelectorAll('img[src="x"]').length,
            katex: main.querySelectorAll('.katex').length,
            em_it: [...main.querySelectorAll('em')].filter(e => e.innerText === 'it').length,
            b_tag: [...main.querySelectorAll('b')].filter(e => e.textContent === 'tag' || e.textContent === 'B2').length,
            svg_b: [...document.querySelectorAll('svg text tspan')].filter(e => (e.textContent === 'tag' || e.textContent==='B2') && e.style.fontWeight === 'bold').length,
            literal_in_text: txt.includes('**bold** [link](javascript:alert(1))'),
            literal_svg: [...document.querySelectorAll('svg text')].some(e => e.textContent.includes('<b>B2</b>')),
            legend_texts: [...document.querySelectorAll('.legendtext')].map(e => e.textContent).slice(0, 4),
          };
        }""")
        print(path or "overview", res)
        # the Parameters page bolds the sidebar config's name itself: one <strong> holding the whole name
        bad = {k: v for k, v in res.items() if isinstance(v, int) and not isinstance(v, bool) and v > (k == "strong_bold")}
        failures += [f"{path or 'overview'}: {bad}"] if bad else []
    print("alerts", alerts)
    b.close()
if failures or alerts:
    sys.exit("markup from user text: " + "; ".join(failures) + f" alerts={alerts}")
print("ok: every name shown as typed")
