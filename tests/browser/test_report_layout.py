"""The report's side-by-side tables read as they are (issue 29 item 2): two tables, each under a header that states
its settings once, labels and values side by side, no sideways scroll, at 900 px and in print. Built in-process for
the design review's case: four candidates, LoRA r=8 on query,value, 3-class fine-tuning at 512 tokens, mixed bf16."""

from __future__ import annotations

import datetime as dt

import pytest

from albert_core.choices import LoraSpec
from albert_core.presets import PRESETS
from albert_core.share import CONTROLS
from albert_core.step.compare import OWN_HEADER, Settings
from albert_core.units import format_bytes
from albert_core.workload import Workload
from ui import report

from .harness import require_chromium

pytestmark = pytest.mark.browser

NAMES = ("albert-base", "bert-base", "deberta-v3-base", "ModernBERT-base")
S = Settings(batch_size=8, seq_len=512, precision="mixed_bf16", mode="lora", head="classification", num_labels=3,
             lora=LoraSpec(r=8, targets=("query", "value")))
# each side-by-side table: its header's text, its box, and every row's label box and last value box
TABLES_JS = """() => Array.from(document.querySelectorAll('section.compare')).map(sec => {
  const t = sec.querySelector('table'), r = t.getBoundingClientRect();
  const rows = Array.from(t.querySelectorAll('tbody tr')).map(tr => {
    const a = tr.firstElementChild.getBoundingClientRect(), b = tr.lastElementChild.getBoundingClientRect();
    return {label: tr.firstElementChild.textContent, cells: Array.from(tr.children).slice(1).map(c => c.innerText),
            top: a.top, labelRight: a.right, lastTop: b.top, lastRight: b.right}; });
  return {title: sec.querySelector('h3').textContent, header: sec.querySelector('p').textContent,
          scrollWidth: t.scrollWidth, clientWidth: t.clientWidth, right: r.right, viewport: innerWidth, rows}; })"""


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    require_chromium()
    cfgs = tuple(PRESETS[n] for n in NAMES)
    ctl = {k: c.default for k, c in CONTROLS.items()}
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(report.html(cfgs, ctl, "http://localhost:8501/?compare=bert-base", S,
                                dt.datetime(2026, 12, 3, tzinfo=dt.UTC)), encoding="utf-8")
    return path


@pytest.mark.parametrize("media", ["screen", "print"])
def test_both_side_by_side_tables_fit_900_px_with_labels_beside_values(browser, report_file, media):
    page = browser.new_page(viewport={"width": 900, "height": 1200})
    try:
        page.emulate_media(media=media)
        page.goto(report_file.as_uri())
        drawn = page.evaluate(TABLES_JS)
        assert [t["title"] for t in drawn] == ["The configs' own facts", "At the chosen workload"]
        for t in drawn:
            assert t["scrollWidth"] <= t["clientWidth"], t  # no sideways scroll to reach the values
            assert t["right"] <= t["viewport"], t
            for r in t["rows"]:  # the label and the last config's value on the same row, inside the page
                assert r["labelRight"] <= 0.45 * t["viewport"] and r["lastRight"] <= t["viewport"], r
                assert abs(r["lastTop"] - r["top"]) < 1, r
    finally:
        page.close()


def test_each_table_states_its_settings_once_and_no_row_mixes_them(browser, report_file):
    """The review's case: ModernBERT's activations at its own 8,192 tokens sit in the own-facts table (one
    sequence, float32), not beside the 512-token mixed-bf16 peak; the workload table says its settings once."""
    from albert_core.estimate.activations import activation_memory
    from albert_core.step.training import training_memory

    page = browser.new_page(viewport={"width": 900, "height": 1200})
    try:
        page.goto(report_file.as_uri())
        own, work = page.evaluate(TABLES_JS)
    finally:
        page.close()
    assert own["header"] == f"Settings: {OWN_HEADER}." and work["header"].startswith("Settings: One training step per GPU, on CUDA: ")
    assert "batch 8 × 512 tokens, mixed_bf16" in work["header"] and "LoRA r=8" in work["header"]
    assert "LoRA" not in own["header"] and "mixed_bf16" not in own["header"]
    modern = PRESETS["ModernBERT-base"]
    act = activation_memory(
        modern, Workload(batch_size=1, seq_len=modern.max_position, precision="float32", attention="eager")
    )
    t = training_memory(modern, Workload(batch_size=8, seq_len=512, precision="mixed_bf16", attention="eager",
                                         mode="lora", head="classification", num_labels=3, lora=S.lora))
    by_own = {r["label"]: r["cells"] for r in own["rows"]}
    by_work = {r["label"]: r["cells"] for r in work["rows"]}
    last = NAMES.index("ModernBERT-base")
    assert by_own["activations at max_position"][last].startswith(format_bytes(act.total))
    assert by_work["training step's peak per GPU"][last].startswith(format_bytes(t.peak))
    assert by_work["activations per GPU (saved for backward)"][last].startswith(format_bytes(t.activations))
    assert not set(by_own) & set(by_work)  # no row in both
    assert "training step's peak per GPU" not in by_own and "activations at max_position" not in by_work
    assert by_own["name"] == list(NAMES)
