"""The HTML report: one file, plotly.js inline once, every figure, the configs, the comparison, the link."""

import datetime as dt
import re

from albert_core.compare import Settings
from albert_core.presets import PRESETS
from albert_core.share import CONTROLS
from charts.base import title_of
from ui import report

CFGS = (PRESETS["albert-base"].replace(name="mine <b>x</b>", max_position=2048), PRESETS["bert-base"])
CTL = {k: c.default for k, c in CONTROLS.items()}


def test_report_is_self_contained_and_complete():
    link = "http://localhost:8501/?max_position=2048&compare=bert-base"
    when = dt.datetime(2026, 11, 29, 20, 15, tzinfo=dt.UTC)
    doc = report.html(CFGS, CTL, link, Settings(), when)
    figs = report.main_figures(CFGS, CTL)
    assert doc.startswith("<!DOCTYPE html>")
    assert doc.count("<div class='figure'") == len(figs) == 6
    assert len(re.findall(r"Plotly\.newPlot", doc)) == len(figs)
    assert doc.count("plotly.js v") == 1 or doc.count("* plotly.js") == 1  # the library inline exactly once
    assert not re.search(r"<script[^>]+src=", doc)  # nothing fetched from a network
    assert "2026-11-29 20:15 UTC" in doc and link.replace("&", "&amp;") in doc
    assert "mine &lt;b&gt;x&lt;/b&gt;" in doc and "<b>x</b>" not in doc.split("<body>")[1].split("figure-1")[0]
    for f in figs:
        assert title_of(f)  # every figure titled
    assert "training memory per GPU" in doc and "total parameters" in doc  # the comparison
    assert "max_position" in doc and "2048" in doc  # the configs' fields


def test_configs_table_has_one_column_per_config_and_every_field():
    t = report.configs_table(CFGS)
    assert list(t.columns) == [c.name for c in CFGS]
    assert t.loc["max_position"].tolist() == [2048, 512]
