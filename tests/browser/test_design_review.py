"""Design-review features in the real app (issue 9): your configs on the charts, max_position marked, Compute
past 512 tokens, the side-by-side table, titled figures on every page, and the offline HTML report.

Every expected number comes from albert_core.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from albert_core.estimate.flops import forward_flops
from albert_core.estimate.params import count_parameters
from albert_core.presets import DEFAULT_PRESET, PRESETS
from albert_core.workload import Workload

from .harness import error_blocks, open_tab, wait_for_figures, wait_until_idle

pytestmark = pytest.mark.browser

FIGURES_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(d => {
    const holder = d.closest('[class*="st-key-"]');
    const key = holder ? (holder.className.match(/st-key-([\\w-]+)/) || [])[1] : null;
    const png = (d._context && d._context.toImageButtonOptions) || {};
    return {key: key, title: (d.layout && d.layout.title && d.layout.title.text) || "",
            png: png.filename || "", paper: d.layout.paper_bgcolor || "",
            traces: (d.data || []).map(t => ({name: t.name, meta: t.meta,
                x: t.x ? Array.from(t.x) : null, y: t.y ? Array.from(t.y) : null}))};
})"""


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    pg = ctx.new_page()
    yield pg
    ctx.close()


def open_view(page, url: str) -> None:
    page.goto(url)
    wait_until_idle(page)
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
    wait_until_idle(page)


def figures(page) -> dict[str, dict]:
    return {f["key"]: f for f in page.evaluate(FIGURES_JS)}


def test_memory_link_reaches_and_marks_max_position_8192(server, page):
    open_view(page, f"{server}/memory?max_position=8192")
    assert error_blocks(page) == []
    fig = figures(page)["memory_activations"]
    mine = f"{DEFAULT_PRESET} (edited)"
    curves = [t for t in fig["traces"] if t["meta"] == mine]
    assert curves and all(max(t["x"]) >= 8192 for t in curves)  # the curves reach 8,192
    marks = [t for t in fig["traces"] if t["name"] == "max_position" and t["x"] == [8192]]
    assert len(marks) == 1  # the config's own max_position is marked
    open_tab(page, "Training memory per GPU")  # drawn when its tab is opened
    wait_for_figures(page, 1)
    assert "memory_tab=training" in page.url and "max_position=8192" in page.url
    sweep = figures(page)["memory_training_sweep"]
    assert any(t["name"].endswith("its max_position") and t["x"] == [8192] for t in sweep["traces"])


def test_compute_takes_a_custom_config_at_4096_tokens_without_clamping(server, page):
    open_view(page, f"{server}/compute?name=long&max_position=4096&flops_seq_len=4096")
    assert error_blocks(page) == []
    assert "showing seq_len" not in page.inner_text('[data-testid="stMain"]')
    assert page.get_by_role("spinbutton", name="Sequence length (tokens)").input_value() == "4096"
    cfg = PRESETS[DEFAULT_PRESET].replace(name="long", max_position=4096)
    (t,) = [t for t in figures(page)["compute_scatter"]["traces"] if t["name"] == "long"]
    assert t["y"] == [forward_flops(cfg, 4096).total]
    (bb,) = [t for t in figures(page)["compute_scatter"]["traces"] if t["name"] == "bert-base"]
    assert bb["y"] == [forward_flops(PRESETS["bert-base"], 512).total]  # counted at its own max_position


def test_comparison_table_lists_the_shown_configs_with_their_totals(server, page):
    open_view(page, f"{server}/?compare=bert-large,albert-xxlarge&hidden_dim=1024&num_heads=16")
    open_tab(page, "Side by side")
    mine = PRESETS[DEFAULT_PRESET].replace(hidden_dim=1024, num_heads=16)
    shown = [mine, PRESETS["bert-large"], PRESETS["albert-xxlarge"]]
    own = page.locator('.st-key-compare_own [data-testid="stTable"]')
    own.scroll_into_view_if_needed()
    names = (f"{DEFAULT_PRESET} (edited)", "bert-large", "albert-xxlarge")
    totals = tuple(f"{count_parameters(cfg).total:,}" for cfg in shown)
    text = own.inner_text()
    for wanted in names + totals:
        assert wanted in text


# Each side-by-side table as drawn: its title and settings (the captions above it), its scroll box, and every row:
# the label's text and box, each cell's text, and whether any cell's text runs past its box (cut off)
# Where a cell's text goes on to a new line: for each break, the characters before and after it (read from where
# the browser drew each character)
LINE_BREAKS_JS = """el => {
  const out = [], walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  let top = null, node;
  while ((node = walk.nextNode())) for (let i = 0; i < node.data.length; i++) {
    const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
    const box = Array.from(r.getClientRects()).find(b => b.width > 0);
    if (!box) continue;
    if (top !== null && box.top > top + 2) out.push([node.data.slice(0, i), node.data.slice(i)]);
    top = box.top;
  }
  return out; }"""
SIDE_BY_SIDE_JS = """() => { const lineBreaks = """ + LINE_BREAKS_JS + """;
 return ['compare_own', 'compare_workload'].map(key => {
  const sec = document.querySelector('.st-key-' + key), t = sec.querySelector('[data-testid="stTable"] table');
  const box = t.parentElement, b = box.getBoundingClientRect();
  const rows = Array.from(t.querySelectorAll('tbody tr')).map(tr => {
    const a = tr.firstElementChild.getBoundingClientRect(), z = tr.lastElementChild.getBoundingClientRect();
    return {label: tr.firstElementChild.innerText.replace(/\u200b/g, '').trim(),
            cells: Array.from(tr.children).slice(1).map(c => c.innerText.trim()),
            breaks: lineBreaks(tr.firstElementChild),
            top: a.top, labelLeft: a.left, labelRight: a.right, lastTop: z.top, lastRight: z.right}; });
  const cut = Array.from(t.querySelectorAll('th, td')).filter(c => c.scrollWidth > c.clientWidth + 1
                                                              || c.scrollHeight > c.clientHeight + 1).map(c => c.innerText);
  return {title: sec.querySelector('[data-testid="stMarkdownContainer"]').innerText.trim(),
          captions: Array.from(sec.querySelectorAll('[data-testid="stCaptionContainer"]')).map(c => c.innerText.trim()),
          columns: Array.from(t.querySelectorAll('thead th')).slice(1).map(c => c.innerText.trim()),
          boxLeft: b.left, boxRight: b.right, scrollWidth: box.scrollWidth, clientWidth: box.clientWidth, rows, cut}; }); }"""
REVIEW = ("albert-base", "bert-base", "deberta-v3-base", "ModernBERT-base")


@pytest.mark.parametrize("width", [1280, 390])
def test_side_by_side_is_two_tables_each_under_its_settings_readable_at_the_width(server, browser, width):
    """issue 29 item 2, the review's case (four candidates, LoRA r=8 on query,value, 3 labels, 8 × 512, mixed bf16):
    the own facts (ModernBERT's activations at its own 8,192 tokens, float32) and the workload (the 512-token peak)
    are two tables, each stating its settings once; no row is in both; no label or value is cut off; each row's
    label sits beside its values (at 390 px the table scrolls sideways inside its box and the label column stays)."""
    from albert_core.choices import LoraSpec
    from albert_core.estimate.activations import activation_memory
    from albert_core.step.compare import OWN_HEADER
    from albert_core.step.training import training_memory
    from albert_core.units import format_bytes

    from .harness import resize

    ctx = browser.new_context(viewport={"width": width, "height": 1000})
    pg = ctx.new_page()
    try:
        pg.goto(f"{server}/?preset=albert-base&compare={','.join(REVIEW[1:])}&overview_tab=compare&train_mode=lora"
                "&lora_r=8&lora_targets=query,value&head=classification&num_labels=3&batch_size=8&seq_len=512"
                "&precision=mixed_bf16")
        pg.wait_for_selector('.st-key-compare_workload [data-testid="stTable"]', timeout=60_000)
        resize(pg, width)
        assert error_blocks(pg) == []
        own, work = pg.evaluate(SIDE_BY_SIDE_JS)
        assert (own["title"], work["title"]) == ("The configs' own facts", "At the chosen workload")
        assert own["captions"][0] == f"Settings: {OWN_HEADER}."
        head = work["captions"][0]
        assert head.startswith("Settings: One training step per GPU, on CUDA: batch 8 × 512 tokens, mixed_bf16")
        assert "LoRA r=8 alpha=8 dropout 0 on query,value, head classification:3" in head
        assert "mixed_bf16" not in own["captions"][0] and "LoRA" not in own["captions"][0]
        assert own["columns"] == work["columns"] == list(REVIEW)
        labels_own, labels_work = {r["label"]: r["cells"] for r in own["rows"]}, {r["label"]: r["cells"] for r in work["rows"]}
        assert not set(labels_own) & set(labels_work)  # no row in both tables
        modern = PRESETS["ModernBERT-base"]
        act = activation_memory(
            modern, Workload(batch_size=1, seq_len=modern.max_position, precision="float32", attention="eager")
        )
        peak = training_memory(modern, Workload(batch_size=8, seq_len=512, precision="mixed_bf16", attention="eager",
                                                mode="lora", head="classification", num_labels=3,
                                                lora=LoraSpec(r=8, targets=("query", "value")))).peak
        assert labels_own["activations at max_position"][3].startswith(format_bytes(act.total))
        assert labels_work["training step's peak per GPU"][3].startswith(format_bytes(peak))
        assert "activations at max_position" not in labels_work and "training step's peak per GPU" not in labels_own
        for t in (own, work):
            assert t["cut"] == [], t["cut"]  # every label and value shown whole (wrapped, not cut)
            for r in t["rows"]:
                assert abs(r["lastTop"] - r["top"]) < 1, r  # the label and the last value on one row
                # a label goes on to a new line only at a space, a hyphen or after a field name's "_" (on a phone
                # "embedding_dim" broke as "embeddin / g_dim")
                mid_word = [(a, b) for a, b in r["breaks"] if not re.search(r"[\s\u200b_/-]$", a) and b[:1] != " "]
                assert mid_word == [], (r["label"], mid_word)
            if width >= 1280:
                assert t["scrollWidth"] <= t["clientWidth"], t  # everything in view, no sideways scroll
                assert all(r["lastRight"] <= t["boxRight"] + 1 for r in t["rows"])
        pg.evaluate("() => document.querySelectorAll('.st-key-compare_section [data-testid=\"stTable\"] table')"
                    ".forEach(t => { t.parentElement.scrollLeft = t.parentElement.scrollWidth; })")
        for t in pg.evaluate(SIDE_BY_SIDE_JS):  # scrolled to the last config: the labels are still at the left
            for r in t["rows"]:
                assert abs(r["labelLeft"] - t["boxLeft"]) < 2 and r["lastRight"] <= t["boxRight"] + 1, (r, t["boxLeft"])
    finally:
        ctx.close()


def test_side_by_side_shows_names_as_typed(server, page):
    """st.table reads its cells, labels and column names as Markdown: the names are escaped, shown as typed."""
    from urllib.parse import urlencode

    from .test_browser import EVIL2, HOSTILE, MARKUP_JS

    page.goto(f"{server}/?{urlencode(HOSTILE | {'overview_tab': 'compare'})}")
    page.wait_for_selector('.st-key-compare_own [data-testid="stTable"]', timeout=60_000)
    wait_until_idle(page)
    assert error_blocks(page) == []
    found = page.evaluate(MARKUP_JS)
    assert {k: v for k, v in found.items() if v} == {}
    columns = page.locator('.st-key-compare_own [data-testid="stTable"] thead th').all_inner_texts()
    assert columns[1:] == [HOSTILE["name"], EVIL2]


@pytest.mark.parametrize("width", [1400, 390])
def test_long_names_are_drawn_in_full_under_the_bars(server, browser, width):
    """issue 29 item 9: "bert-base-mu…ual-cased" is drawn in full, in lines, under its bars and above its Memory
    panel; each tick's lines are read from the SVG Plotly drew."""
    from .harness import resize

    ctx = browser.new_context(viewport={"width": width, "height": 1000})
    pg = ctx.new_page()
    try:
        open_view(pg, f"{server}/parameters?preset=bert-base-multilingual-cased&compare=bert-base")
        resize(pg, width)
        for key in ("params_shares", "params_components"):
            ticks = pg.evaluate("k => Array.from(document.querySelectorAll('.st-key-' + k + ' .xtick text')).map("
                                "t => { const ls = Array.from(t.querySelectorAll('tspan.line')).map(l => l.textContent);"
                                " return ls.length ? ls : [t.textContent]; })", key)
            assert ["bert-base-multilingual-", "cased"] in ticks and ["bert-base"] in ticks, (key, ticks)
            assert not any("…" in line for t in ticks for line in t)
        open_view(pg, f"{server}/memory?preset=bert-base-multilingual-cased&compare=bert-base")
        titles = pg.evaluate("() => Array.from(document.querySelectorAll('.st-key-memory_activations .annotation-text'))"
                             ".map(t => { const ls = Array.from(t.querySelectorAll('tspan.line')).map(l => l.textContent);"
                             " return ls.length ? ls.join('') : t.textContent; })")
        assert "bert-base-multilingual-cased" in titles and "bert-base" in titles, titles  # the panels' titles
    finally:
        ctx.close()


def test_overview_path_opens_overview(server, page):
    open_view(page, f"{server}/overview")
    assert "Page not found" not in page.inner_text("body")
    assert page.locator('[data-testid="stMain"] h1').first.inner_text() == "BERT against ALBERT at a glance"


def test_report_downloads_and_draws_offline(server, browser, page, tmp_path: Path):
    open_view(page, f"{server}/?compare=bert-base&max_position=1024")
    page.get_by_role("button", name="Share this view").click()  # the report sits beside the link
    with page.expect_download(timeout=120_000) as dl:
        page.get_by_role("button", name="Download report").click()
    path = tmp_path / dl.value.suggested_filename
    dl.value.save_as(path)
    assert path.suffix == ".html" and path.stat().st_size > 1_000_000  # plotly.js inside
    n_figures = path.read_text(encoding="utf-8").count("<div class='figure'")
    assert n_figures == 7  # the view's six and the paper's trade-off (parameters against the paper's Avg)

    ctx = browser.new_context(viewport={"width": 1300, "height": 900}, offline=True)
    asked: list[str] = []

    def block(route):
        asked.append(route.request.url)
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            route.abort()

    ctx.route("**/*", block)
    try:
        pg = ctx.new_page()
        pg.goto(path.as_uri())
        wait_for_figures(pg, n_figures)
        drawn = pg.evaluate("() => Array.from(document.querySelectorAll('.js-plotly-plot')).map("
                            "d => ({n: (d.data || []).length, title: d.layout.title.text}))")
        assert len(drawn) == n_figures and all(d["n"] > 0 and d["title"] for d in drawn)
        assert [u for u in asked if not u.startswith("file://")] == []  # nothing asked of a network
        assert "bert-base" in pg.inner_text("body") and f"{count_parameters(PRESETS['bert-base']).total:,}" in \
            pg.inner_text("body")
    finally:
        ctx.close()


def test_png_export_is_named_opaque_and_slide_sized(server, page, tmp_path: Path):
    """Plotly's "Download plot as png": a descriptive name, an opaque white background, 3200 px wide."""
    import io

    from PIL import Image

    open_view(page, f"{server}/compute")
    chart = page.locator(".st-key-compute_scatter .js-plotly-plot")
    chart.hover()
    with page.expect_download(timeout=60_000) as dl:
        chart.locator('.modebar-btn[data-title^="Download plot"]').click()
    name = dl.value.suggested_filename
    assert name.startswith("albert-explorer_compute_scatter_Forward_FLOPs") and name.endswith(".png")
    path = tmp_path / name
    dl.value.save_as(path)
    img = Image.open(io.BytesIO(path.read_bytes())).convert("RGBA")
    assert img.width == 3200  # 1600 px at scale 2
    assert img.getpixel((2, 2)) == (255, 255, 255, 255)  # opaque white, not transparent
    dark = sum(1 for x in range(0, 1600, 4) for y in range(0, 120, 4) if sum(img.getpixel((x, y))[:3]) < 200)
    assert dark > 20  # the title's dark text is in the image
