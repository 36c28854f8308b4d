"""The parameter sunburst's labels as Plotly draws them (issue 29 item 9: labels of thin slices overlapped): drawn
by plotly.js in headless Chromium at a phone's and a desktop's width, every label shown is readable (at least
MIN_LABEL_PX across) and belongs to a slice of at least charts.params.LABEL_MIN_PCT of the model; the thin slices
are drawn, unlabelled, with their numbers in the hover."""

from __future__ import annotations

import json
from pathlib import Path

import plotly
import pytest

from albert_core.estimate.params import count_parameters
from albert_core.presets import PRESETS
from charts import params as pcharts

from .harness import require_chromium

pytestmark = pytest.mark.browser

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
MIN_LABEL_PX = 9  # the smaller side of a label's drawn box: below it the label is a smudge (old: 1.1 px, "Pooler")
# draw one sunburst `width` px wide; return every drawn label's text and drawn box
DRAW_JS = """async ([spec, width]) => {
  document.body.innerHTML = '';
  const gd = document.createElement('div'); gd.style.width = width + 'px'; document.body.appendChild(gd);
  await Plotly.newPlot(gd, spec.data, Object.assign({}, spec.layout, {width: width}));
  return Array.from(gd.querySelectorAll('g.slice text.slicetext')).filter(e => e.textContent.trim()
      && getComputedStyle(e).display !== 'none' && e.getBoundingClientRect().width > 0).map(e => {
    const r = e.getBoundingClientRect(); return {text: e.textContent, w: r.width, h: r.height}; }); }"""


@pytest.fixture(scope="module")
def canvas(browser):
    require_chromium()
    page = browser.new_page(viewport={"width": 1000, "height": 800})
    page.set_content("<!doctype html><html><head><meta charset='utf-8'></head><body></body></html>")
    page.add_script_tag(path=str(PLOTLY_JS))
    yield page
    page.close()


@pytest.mark.parametrize("width", [358, 700])
@pytest.mark.parametrize("name", ["bert-base", "albert-base", "deberta-v3-base", "ModernBERT-base"])
def test_sunburst_draws_only_labels_its_slices_can_hold(canvas, name, width):
    c = count_parameters(PRESETS[name])
    fig = pcharts.breakdown_sunburst(c.breakdown(), name)
    spec = json.loads(fig.to_json())
    drawn = canvas.evaluate(DRAW_JS, [spec, width])
    t = spec["data"][0]
    share = {}  # a label -> the largest share of the model among the slices it names (labels repeat across configs)
    for label, v in zip(t["labels"], t["values"], strict=True):
        share[label] = max(share.get(label, 0.0), 100 * v / c.total)
    assert len(drawn) >= 3, drawn  # the root and the large slices keep their labels
    for d in drawn:
        assert min(d["w"], d["h"]) >= MIN_LABEL_PX, d  # readable, not shrunk to a smudge
        assert share[d["text"]] >= pcharts.LABEL_MIN_PCT, d  # only slices that can hold a label carry one
    thin = [lab for lab, s in share.items() if s < pcharts.LABEL_MIN_PCT]
    assert thin and not set(thin) & {d["text"] for d in drawn}  # the thin slices are drawn, unlabelled
