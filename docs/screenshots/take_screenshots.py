"""Screenshot every page of the running app with headless Chromium (Playwright), for docs/app.md.

    streamlit run serve.py --server.headless true --server.port 8599 --browser.gatherUsageStats false &
    python docs/screenshots/take_screenshots.py http://localhost:8599 [--theme dark] [--phone]

Writes docs/screenshots/<page>[-dark][-phone].png (palette reduction keeps each under 300 KB): desktop at
1400 px, --phone at 390 px (an iPhone 12-15's CSS width, device scale 2, touch).
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

from playwright.sync_api import sync_playwright

PAGES = {
    "overview": "?c1.preset=albert-base&c1.max_position=4096&c1.name=albert-base-4k&compare=bert-base,c1",
    "parameters": "parameters?sweep=hidden_dim&compare=bert-base,c1&c1.preset=albert-base&c1.max_position=4096"
                  "&c1.name=albert-base-4k",
    "memory": "memory?compare=bert-base,c1&c1.preset=albert-base&c1.max_position=4096&c1.name=albert-base-4k",
    "fit": "fit?compare=bert-base,c1&c1.preset=albert-base&c1.max_position=4096&c1.name=albert-base-4k",
    "compute": "compute?compare=bert-base,c1&c1.preset=albert-base&c1.max_position=4096&c1.name=albert-base-4k"
               "&flops_seq_len=4096",
    "verify": "verify",
    # issue 17's stress views of the fixed figures: log axes with a long realistic name against XLM-R and BERT,
    # and six compared configs of six families
    "memory-training-log": "memory?memory_tab=training&scale=log&preset=xlm-roberta-large"
                           "&name=xlmr-large-proposal-2026q3-shared-ffn-e256-rel-pos-v2-final"
                           "&compare=xlm-roberta-large,bert-base",
    "parameters-six": "parameters?compare=bert-base,roberta-base,deberta-v3-base,ModernBERT-base,"
                      "electra-base-discriminator",
    # the second round: the long name in full in the legend, titles on one line
    "fit-long": "fit?preset=xlm-roberta-large&name=xlmr-large-proposal-2026q3-shared-ffn-e256-rel-pos-v2-final"
                "&compare=xlm-roberta-large,bert-base",
    # issue 18: the Fine-tuning expander (LoRA on ALBERT asks for its targets), the serving tab, the planner's modes
    "memory-finetune": "memory?memory_tab=training&train_mode=lora&head=classification&num_labels=3"
                       "&compare=bert-base,xlm-roberta-base&seq_len=512&batch_size=16",
    "memory-serving": "memory?memory_tab=serving&preset=xlm-roberta-base&serve_format=int4&group_size=64",
    "fit-finetune": "fit?train_mode=frozen-embeddings&preset=xlm-roberta-base&compare=bert-base,deberta-v3-base"
                    "&gpu=L4+24+GB&batch_size=16",
}
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
OUT = Path(__file__).resolve().parent


def shrink(png: bytes, limit: int = 300_000) -> bytes:
    """Quantize to a palette (and scale down if needed) so the file stays small."""
    try:
        from PIL import Image
    except ImportError:
        return png
    img = Image.open(io.BytesIO(png)).convert("RGB")
    for scale in (1.0, 0.85, 0.7, 0.55):
        im = img if scale == 1.0 else img.resize((int(img.width * scale), int(img.height * scale)))
        buf = io.BytesIO()
        im.quantize(colors=128).save(buf, format="PNG", optimize=True)
        if buf.tell() < limit:
            return buf.getvalue()
    return buf.getvalue()


IDLE_JS = """() => !document.querySelector('[data-testid="stStatusWidget"]')
    && document.querySelectorAll('[data-testid="stSkeleton"]').length === 0
    && document.querySelectorAll('.js-plotly-plot').length === document.querySelectorAll('[data-testid="stPlotlyChart"]').length"""


# the figures' titles are wrapped for the width the browser reports (ui/plots.py): wait for that rerun's figures
WRAPPED_JS = """() => !!window.__aeView && Array.from(document.querySelectorAll('.js-plotly-plot')).every(d => {
    const m = d._fullLayout && d._fullLayout.meta;
    return !m || m.pad === undefined || m.main_px === window.__aeView.main; })"""


def idle(page) -> None:
    """Wait until the script run has finished, the titles are wrapped for this width and every chart is drawn."""
    page.wait_for_timeout(500)
    page.wait_for_function(IDLE_JS, timeout=120_000, polling=250)
    page.wait_for_function(WRAPPED_JS, timeout=60_000, polling=250)
    page.wait_for_function(IDLE_JS, timeout=120_000, polling=250)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("base", nargs="?", default="http://localhost:8599")
    ap.add_argument("--theme", choices=("light", "dark"), default="light")
    ap.add_argument("--pages", nargs="*", default=list(PAGES))
    ap.add_argument("--phone", action="store_true", help="390 px wide, like a phone")
    ap.add_argument("--width", type=int, default=1400, help="desktop width (CSS px)")
    a = ap.parse_args()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        for name in a.pages:
            height = {"overview": 3000, "parameters": 4200, "memory": 3900, "memory-training-log": 3200,
                      "parameters-six": 4200, "memory-finetune": 4600, "memory-serving": 2000,
                      "fit-finetune": 2600}.get(name, 2000)
            if a.phone:
                tall = {"overview": 6500, "parameters": 8000, "memory": 7500, "memory-training-log": 7000,
                        "parameters-six": 8000, "memory-finetune": 9000, "memory-serving": 4200,
                        "fit-finetune": 5200}.get(name, 4200)  # the app scrolls inside
                page = browser.new_page(viewport={"width": 390, "height": tall}, device_scale_factor=1,
                                        is_mobile=True, has_touch=True, color_scheme=a.theme)
            else:
                page = browser.new_page(viewport={"width": a.width, "height": height}, color_scheme=a.theme)
            page.goto(f"{a.base}/{PAGES[name]}", wait_until="networkidle")
            page.wait_for_selector("h1", timeout=30_000)
            idle(page)
            page.wait_for_timeout(1500)  # let Plotly draw
            if name == "verify":
                page.get_by_role("button", name="Build, count and measure").click()
                page.get_by_text("Measured (saved tensors)").first.wait_for(timeout=180_000)
                idle(page)
                page.wait_for_timeout(1500)
            png = page.screenshot(full_page=True)
            suffix = ("" if a.theme == "light" else "-dark") + ("-phone" if a.phone else "")
            (OUT / f"{name}{suffix}.png").write_bytes(shrink(png))
            print(name, len(png))
            page.close()
        browser.close()


if __name__ == "__main__":
    main()
