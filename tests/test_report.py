"""The HTML report: one file, plotly.js inline once, every figure, the configs, the comparison, the link."""

import datetime as dt
import re

from albert_core.presets import PRESETS
from albert_core.share import CONTROLS
from albert_core.step.compare import Settings
from albert_core.workload import Workload
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
    assert doc.count("<div class='figure'") == len(figs) == 7
    assert len(re.findall(r"Plotly\.newPlot", doc)) == len(figs)
    assert doc.count("plotly.js v") == 1 or doc.count("* plotly.js") == 1  # the library inline exactly once
    assert not re.search(r"<script[^>]+src=", doc)  # nothing fetched from a network
    assert "2026-11-29 20:15 UTC" in doc and link.replace("&", "&amp;") in doc
    assert "mine &lt;b&gt;x&lt;/b&gt;" in doc and "<b>x</b>" not in doc.split("<body>")[1].split("figure-1")[0]
    for f in figs:
        assert title_of(f)  # every figure titled
    assert "training memory per GPU" in doc and "total parameters" in doc  # the comparison
    assert "max_position" in doc and "2048" in doc  # the configs' fields
    # what the paper measured: the trade-off figure last, and one sentence per config (neither is a paper network)
    assert title_of(figs[-1]) == "What the paper measured"
    assert "What the ALBERT paper measured" in doc and doc.count("not a network the paper trained") == len(CFGS)


def test_configs_table_has_one_column_per_config_and_every_field():
    t = report.configs_table(CFGS)
    assert list(t.columns) == [c.name for c in CFGS]
    assert t.loc["max_position"].tolist() == ["2,048", "512"]  # as Side by side shows them
    # a new user's review: dropout read 0.0 here and 0 in Side by side; bert-large showed DeBERTa's position_buckets
    mixed = report.configs_table((PRESETS["bert-large"], PRESETS["deberta-v3-base"], PRESETS["ModernBERT-base"]))
    assert mixed.loc["position_buckets"].tolist() == ["n/a", "256", "n/a"]
    assert mixed.loc["dropout"].tolist() == ["0.1", "0.1", "0"] and mixed.loc["hidden_dim"].tolist()[0] == "1,024"


def test_report_carries_the_mode_and_the_peak():
    """A LoRA view: the settings line and the workload table's header name the mode; the peak is training_memory's;
    albert without targets has no training figures' numbers, not wrong ones, and the report still builds."""
    from albert_core.choices import LoraSpec
    from albert_core.step.training import training_memory
    from albert_core.units import format_bytes

    lora = LoraSpec(r=4, targets=("query", "value"))
    ctl = dict(CTL, train_mode="lora", lora_r=4, lora_targets="query,value", head="token", num_labels=7)
    s = Settings(mode="lora", head="token", num_labels=7, lora=lora)
    doc = report.html(CFGS, ctl, "http://x/?train_mode=lora", s, dt.datetime(2026, 12, 1, tzinfo=dt.UTC))
    text = "LoRA r=4 alpha=8 dropout 0 on query,value, head token:7"
    assert text in doc.split("<h2>")[0]  # the settings line at the top
    own, work = doc.replace("_<wbr>", "_").split("<section class='compare'>")[1:3]  # labels break after "_"
    assert "training step&#x27;s peak per GPU" in work and text in work.split("<table>")[0]  # stated in its header
    assert "training step&#x27;s peak per GPU" not in own and text not in own  # the own facts: no workload
    assert "own max_position" in own.split("<table>")[0] and "activations at max_position" in own
    peak = training_memory(PRESETS["bert-base"], Workload(batch_size=8, seq_len=512, attention="eager", mode="lora",
                                                          head="token", num_labels=7, lora=lora)).peak
    assert format_bytes(peak) in doc
    none = dict(CTL, train_mode="lora")  # peft's default: none for albert, the training figures for bert-base only
    figs = report.main_figures(CFGS, none)
    assert len(figs) == 7


def test_report_figures_are_wrapped_for_its_width():
    """The report draws its figures at least charts.report.FIGURE_PX wide: their subtitles wrap for that, not for
    a phone, and the app's cached figures are left as they were."""
    from charts.base import line_px, text_px
    from charts.report import FIGURE_PX, wrapped

    for fig in report.main_figures(CFGS, CTL):
        before = fig.layout.title.subtitle.text
        lines = wrapped(fig).layout.title.subtitle.text.split("<br>")
        assert all(text_px(ln, 12) <= line_px(FIGURE_PX) for ln in lines)
        assert len(lines) <= len(before.split("<br>")) and fig.layout.title.subtitle.text == before
    doc = report.html(CFGS, CTL, "http://x/", Settings(), dt.datetime(2026, 12, 2, tzinfo=dt.UTC))
    assert f"min-width:{FIGURE_PX}px" in doc
    fig = report.main_figures(CFGS, CTL)[0]
    assert len(wrapped(fig).layout.title.subtitle.text.split("<br>")) < len(fig.layout.title.subtitle.text.split("<br>"))
