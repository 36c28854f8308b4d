"""The report's side-by-side table reads as it is (issue 29): labels and values side by side, no sideways scroll,
at 900 px and in print. Built in-process for the design review's case: four candidates, LoRA r=8 on query,value,
3-class fine-tuning at 512 tokens, mixed bf16 (the result rows carry all of that in their labels)."""

from __future__ import annotations

import datetime as dt

import pytest

from albert_core.compare import Settings
from albert_core.finetune import LoraSpec
from albert_core.presets import PRESETS
from albert_core.share import CONTROLS
from ui import report

from .harness import require_chromium

pytestmark = pytest.mark.browser

NAMES = ("albert-base", "bert-base", "deberta-v3-base", "ModernBERT-base")
# the side-by-side table (the second), every row: the table's box, its label's box and its last value's box
TABLE_JS = """() => { const t = document.querySelectorAll('table')[1];
  const rows = Array.from(t.querySelectorAll('tbody tr')).map(tr => {
    const a = tr.firstElementChild.getBoundingClientRect(), b = tr.lastElementChild.getBoundingClientRect();
    return {label: tr.firstElementChild.textContent, top: a.top, labelRight: a.right, lastTop: b.top,
            lastRight: b.right}; });
  const r = t.getBoundingClientRect();
  return {scrollWidth: t.scrollWidth, clientWidth: t.clientWidth, right: r.right, viewport: innerWidth, rows}; }"""


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    require_chromium()
    cfgs = tuple(PRESETS[n] for n in NAMES)
    ctl = {k: c.default for k, c in CONTROLS.items()}
    s = Settings(batch_size=8, seq_len=512, precision="mixed_bf16", mode="lora", head="classification", num_labels=3,
                 lora=LoraSpec(r=8, targets=("query", "value")))
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(report.html(cfgs, ctl, "http://localhost:8501/?compare=bert-base", s,
                                dt.datetime(2026, 12, 3, tzinfo=dt.UTC)), encoding="utf-8")
    return path


@pytest.mark.parametrize("media", ["screen", "print"])
def test_the_side_by_side_table_fits_900_px_with_labels_beside_values(browser, report_file, media):
    page = browser.new_page(viewport={"width": 900, "height": 1200})
    try:
        page.emulate_media(media=media)
        page.goto(report_file.as_uri())
        t = page.evaluate(TABLE_JS)
        assert t["scrollWidth"] <= t["clientWidth"], t  # no sideways scroll to reach the values
        assert t["right"] <= t["viewport"], t
        labels = [r["label"] for r in t["rows"]]
        assert any(lab.startswith("training step's peak per GPU (batch 8 × 512 tokens, mixed_bf16") for lab in labels)
        for r in t["rows"]:  # the label and the last config's value on the same row, inside the page
            assert r["labelRight"] <= 0.45 * t["viewport"] and r["lastRight"] <= t["viewport"], r
            assert abs(r["lastTop"] - r["top"]) < 1, r
    finally:
        page.close()
