"""Retake the docs' screenshots of the app, every view in light and dark, desktop and phone:

    python docs/screenshots/take_screenshots.py                 # every view, both themes, both screens
    python docs/screenshots/take_screenshots.py verify memory   # some views

Starts `streamlit run serve.py` itself (tests/browser/harness.py), opens each view in headless Chromium at 1400 px
and at 390 px (an iPhone 12-15's CSS width, touch), waits on the signals the app emits when it has drawn
(harness.wait_until_idle: no run under way, the page drawn, every figure wrapped for the width reported; never a
sleep), and writes docs/screenshots/<view>[-dark][-phone].png (palette reduction keeps each under 300 KB).
Run it after every page change, and look at what it wrote.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.browser.harness import launch_browser, streamlit_server, wait_until_idle  # noqa: E402

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
    # issue 26: MPNet, the eighth family (all-mpnet-base-v2), beside BERT-base: its relative bias table among the layers
    "parameters-mpnet": "parameters?parameters_tab=breakdown&preset=all-mpnet-base-v2&compare=bert-base,roberta-base",
    # issue 54: the small decoders beside BERT-base and ALBERT-base
    "overview-decoders": "?overview_tab=decoders",
    "memory-decoders": "memory?memory_tab=decoders&scale=log",
    "compute-decoders": "compute?compute_tab=decoders&flops_seq_len=4096",
    "parameters-decoders": "parameters?parameters_tab=decoders&cuts_decoder=gemma-3-270m",
}
OUT = ROOT / "docs" / "screenshots"


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


# viewport heights: Streamlit scrolls its main area, not the page, so the viewport is as tall as the page's content
DESKTOP_HEIGHT = {"overview": 3000, "parameters": 4200, "memory": 3900, "memory-training-log": 3200,
                  "parameters-six": 4200, "parameters-mpnet": 4200, "memory-finetune": 4600, "memory-serving": 2000, "fit-finetune": 2600,
                  "memory-decoders": 2900, "parameters-decoders": 2400}
PHONE_HEIGHT = {"overview": 6500, "parameters": 8000, "memory": 7500, "memory-training-log": 7000,
                "parameters-six": 8000, "parameters-mpnet": 8000, "memory-finetune": 9000, "memory-serving": 4200, "fit-finetune": 5200,
                "memory-decoders": 3600, "parameters-decoders": 5600}


def shoot(browser, base: str, name: str, theme: str, phone: bool) -> Path:
    if phone:
        ctx = browser.new_context(viewport={"width": 390, "height": PHONE_HEIGHT.get(name, 4200)},
                                  is_mobile=True, has_touch=True, color_scheme=theme)
    else:
        ctx = browser.new_context(viewport={"width": 1400, "height": DESKTOP_HEIGHT.get(name, 2000)},
                                  color_scheme=theme)
    page = ctx.new_page()
    page.goto(f"{base}/{PAGES[name]}")
    wait_until_idle(page)
    if name == "verify":  # the page with a measurement on it: press the build and wait for its table
        page.get_by_role("button", name="Build, count and measure").click()
        page.get_by_text("Measured (saved tensors)").first.wait_for(timeout=180_000)
        wait_until_idle(page)
    path = OUT / f"{name}{'' if theme == 'light' else '-dark'}{'-phone' if phone else ''}.png"
    path.write_bytes(shrink(page.screenshot(full_page=True)))
    ctx.close()
    return path


def main(names: list[str]) -> None:
    from playwright.sync_api import sync_playwright

    unknown = [n for n in names if n not in PAGES]
    if unknown:
        raise SystemExit(f"no view named {', '.join(unknown)}; the views: {', '.join(PAGES)}")
    with streamlit_server() as (base, _), sync_playwright() as p:
        browser = launch_browser(p)
        for name in names:
            for theme in ("light", "dark"):
                for phone in (False, True):
                    print(shoot(browser, base, name, theme, phone).relative_to(ROOT), flush=True)
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1:] or list(PAGES))
