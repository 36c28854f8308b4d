"""User text (config names from a link) is shown as typed in the real browser: no Markdown, no HTML.

Names that would turn into bold text, links, images, math, colored text or Plotly markup if the
app passed them through; docs/robustness.md lists the bugs this caught.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from .test_browser import PAGES, open_view, page  # noqa: F401  (the page fixture)

EVIL = "**bold** [link](javascript:alert(1)) <img src=x onerror=alert(1)> :red[red] $x^2$ _it_ <b>tag</b>"
EVIL2 = "<b>B2</b> %{y} &amp; `code`"
QUERY = {"name": EVIL[:80], "compare": "c1", "c1.name": EVIL2, "c1.num_layers": "6"}
MARKUP_JS = """() => {
  const body = document.body;
  return {
    // a page may bold the whole name on purpose: then the literal ** stay inside
    strong_bold: [...body.querySelectorAll('strong')].filter(
        e => e.innerText.includes('bold') && !e.innerText.includes('**bold**')).length,
    js_links: body.querySelectorAll('a[href^="javascript"]').length,
    links_named_link: [...body.querySelectorAll('a')].filter(e => e.innerText.trim() === 'link').length,
    imgs_x: body.querySelectorAll('img[src="x"]').length,
    katex: body.querySelectorAll('.katex').length,
    em_it: [...body.querySelectorAll('em')].filter(e => e.innerText === 'it').length,
    b_tag: [...body.querySelectorAll('b')].filter(e => e.textContent === 'tag' || e.textContent === 'B2').length,
    svg_bold: [...document.querySelectorAll('svg text tspan')].filter(
        e => (e.textContent === 'tag' || e.textContent === 'B2') && e.style.fontWeight === 'bold').length,
  };
}"""


@pytest.mark.browser
@pytest.mark.parametrize("path", PAGES)
def test_names_are_shown_as_typed(server, page, path):  # noqa: F811
    alerts = []
    page.on("dialog", lambda d: (alerts.append(d.message), d.dismiss()))
    open_view(page, f"{server}/{path}?{urlencode(QUERY)}", charts=path != "verify")
    found = page.evaluate(MARKUP_JS)
    assert {k: v for k, v in found.items() if v} == {}
    assert alerts == []
