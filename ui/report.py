"""The "Download report" button: the current view as one self-contained HTML file (charts/report.py)."""

from __future__ import annotations

import datetime as dt
from dataclasses import fields

import pandas as pd
import streamlit as st

from albert_core.config import ModelConfig
from albert_core.families import field_applies
from charts.report import build

from . import comparison, data, figures, finetune, state


def configs_table(cfgs) -> pd.DataFrame:
    """One column per config, one row per ModelConfig field (read generically), each value as Side by side shows it:
    dropout 0, not 0.0; another family's own field n/a (bert-large's position_buckets read -1)."""
    names = [f.name for f in fields(ModelConfig) if f.name != "name"]
    return pd.DataFrame({c.name: [comparison.cell("", getattr(c, n) if field_applies(c.family, n) else None, 0, None)
                                  for n in names] for c in cfgs}, index=pd.Index(names, name="field"))


def main_figures(cfgs: tuple, ctl: dict) -> list:
    """Every page's main figures for the configs and controls; the training figures (the step's peak under the
    fine-tuning mode) for the configs whose mode can be counted (LoRA without targets where peft has none: not)."""
    ok = finetune.usable(cfgs, figures.training_workload(ctl))
    compute, _, _ = figures.compute_scatter(cfgs, ctl["flops_seq_len"])
    train = [figures.memory_training(ok, ctl), figures.fit_bars(ok, ctl)[0]] if ok else []
    paper = figures.paper_tradeoff(cfgs, data.PAPER_TABLES, "table", "What the paper measured")
    return [figures.params_shares(cfgs), figures.params_counts(cfgs), figures.memory_activations(cfgs, ctl),
            *train, compute, paper]


def html(cfgs: tuple, ctl: dict, link: str, settings, when: dt.datetime) -> str:
    return build(title="ALBERT Explorer report: " + ", ".join(c.name for c in cfgs),
                 date=when.strftime("%Y-%m-%d %H:%M UTC"), link=link, settings=settings.describe(),
                 configs=configs_table(cfgs),
                 comparison=[(t.title, t.header, t.text, t.diff)
                             for t in comparison.tables(data.comparison(cfgs, settings), settings, cfgs)],
                 figures=main_figures(cfgs, ctl), paper=data.paper_matches(cfgs))


def button(cfgs: tuple, link: str) -> None:
    """A download button for the view `link` reproduces; the report is built when it is pressed (Streamlit's
    deferred data)."""
    ctl = dict(state.controls())
    settings = comparison.settings()

    def make() -> bytes:
        return html(cfgs, ctl, link, settings, dt.datetime.now(dt.UTC)).encode()

    st.caption("For a design document: the configs, the two side-by-side tables (each under its settings), every "
               "page's main figures, the settings and this link, in one HTML file.")
    st.download_button("Download report", make, file_name="albert-explorer-report.html", mime="text/html",
                       key="download_report", on_click="ignore", icon=":material/description:",
                       help="One HTML file: the configs, the two side-by-side tables (each under its settings), "
                            "every page's main figures (interactive, open offline), the settings, the date and the "
                            "link to this view.")
