"""The side-by-side comparison: two tables (the configs' own facts; one training step at the chosen workload), one
column per shown config, differences from the first highlighted, each table's settings stated once above it."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from albert_core.step.compare import OWN_HEADER, Settings
from albert_core.units import format_bytes, format_count, format_flops

from . import finetune, state
from .tables import csv_button
from .text import attention_note, md

PEAK_IS = "the peak is"  # compare.WORKLOAD's row of how far each peak can be trusted

HIGHLIGHT = "background-color: #FFE8A3; color: #262730; font-weight: 600"


def settings() -> Settings:
    """The workload table's settings from the page controls (the sidebar's Memory / Fit planner controls)."""
    c = state.controls()
    return Settings(batch_size=c["batch_size"], seq_len=c["seq_len"], attention=c["attention"],
                    checkpointing=c["checkpointing"] and c["training"], precision=c["precision"],
                    optimizer=c["optimizer"], num_gpus=c["num_gpus"], sharding=c["sharding"], **_fine_tuning(c))


def _fine_tuning(c) -> dict:
    f = finetune.settings_of(c)
    return dict(mode=f.mode, head=f.head, num_labels=f.num_labels, lora=f.lora)


NOT_ITS_FIELD = "n/a"  # a family's own field in a config of another family (DeBERTa's position_buckets for BERT)


def _signed(d, fmt) -> str:
    return ("+" if d > 0 else "−") + fmt(abs(d))


def cell(unit: str, value, delta, rel) -> str:
    """Text of one cell: the value for people, and its change against the first config."""
    fmt = {"parameters": lambda v: f"{int(v):,} ({format_count(int(v))})", "bytes": lambda v: format_bytes(int(v)),
           "FLOPs": lambda v: format_flops(int(v)), "%": lambda v: f"{v:.2f}%"}.get(unit)
    if value is None:  # a result with no closed form; a field of another family (compare.field_applies)
        return "not modelled" if unit else NOT_ITS_FIELD
    if fmt is None:
        if isinstance(value, float):  # as the sidebar's field shows it: dropout 0, not 0.0 (the shortest exact digits)
            return repr(value).removesuffix(".0")
        return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)
    text = fmt(value)
    if delta:
        short = {"parameters": lambda v: format_count(int(v)), "%": lambda v: f"{v:.2f} pts"}.get(unit, fmt)
        pct = "" if rel is None or unit == "%" else \
            ", " + _signed(rel, lambda r: f"{r:.1%}" if r < 0.1 else f"{r:.0%}")  # one minus sign: U+2212 in both
        text += f"  ({_signed(delta, short)}{pct})"
    return text


@dataclass(frozen=True)
class Table:
    """One of the side-by-side tables: every number in it under the one set of settings its header states."""

    key: str  # the Streamlit container key (compare_own | compare_workload)
    title: str
    header: str  # the settings, once
    text: pd.DataFrame  # one column per config
    diff: pd.DataFrame  # the cells that differ from the first config


def wide(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(text table one column per config, bool table of cells that differ from the first config)."""
    names = list(dict.fromkeys(df["config"]))
    items = list(dict.fromkeys(df["item"]))
    text: dict[str, list[str]] = {n: [] for n in names}
    diff: dict[str, list[bool]] = {n: [] for n in names}
    by = {(r["item"], r["config"]): r for r in df.to_dict("records")}
    for item in items:
        for n in names:
            r = by[(item, n)]
            text[n].append(cell(r["unit"], r["value"], r["delta"], r["rel_delta"]))
            diff[n].append(bool(r["differs"]))
    index = pd.Index(items, name="field / result" if "field" in set(df["section"]) else "result")
    return pd.DataFrame(text, index=index), pd.DataFrame(diff, index=index)


def tables(df: pd.DataFrame, s: Settings, cfgs) -> list[Table]:
    """The two side-by-side tables of a compare_table: the configs' own facts (fields, and the results at each
    config's own max_position under OWN_HEADER's settings) and one training step at the chosen workload (s). No
    row of one is under the other's settings."""
    own = wide(df[df["section"].isin(("field", "own"))])
    work = df[df["section"] == "workload"]
    header = s.header(cfgs)
    trust = set(work[work["item"] == PEAK_IS]["value"]) - {None}
    if len(trust) == 1:  # one word for every config's peak: said once, in the header, not in a row of repeats
        header += f"; the peak is {trust.pop()}"
        work = work[work["item"] != PEAK_IS]
    return [Table("compare_own", "The configs' own facts", OWN_HEADER, *own),
            Table("compare_workload", "At the chosen workload", header, *wide(work))]


def differing(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of fields that differ between the configs (name included), and every result."""
    fields = df[df["section"] == "field"]
    keep = {"name"} | set(fields.loc[fields["differs"], "item"])
    return df[(df["section"] != "field") | df["item"].isin(keep)]


def show(df: pd.DataFrame, cfgs, settings: Settings, key: str = "compare_table") -> None:
    """The two tables, each under a header that states its settings once; cells and labels wrap (st.table), so
    nothing is cut at any width; a CSV of both with the exact values."""
    n_fields = df[df["section"] == "field"]["item"].nunique()
    every = st.toggle("Show every field", value=False, key="compare_every_field",
                      help="Off: only the fields in which the configs differ (and the results).")
    shown = df if every else differing(df)
    hidden = n_fields - shown[shown["section"] == "field"]["item"].nunique()
    with st.container(key="compare_section"):
        for t in tables(shown, settings, cfgs):
            with st.container(key=t.key):
                st.markdown(f"**{t.title}**")
                st.caption(f"Settings: {md(t.header)}.")
                note = attention_note(cfgs, settings.attention) if t.key == "compare_workload" else None
                if note:
                    st.caption(note)
                if t.key == "compare_own" and hidden:
                    st.caption(f"{hidden} fields equal in every config are hidden.")
                st.table(_styled(t))
        csv_button(df, "comparison.csv", key=f"{key}_csv")
    st.html(TABLE_CSS)


def _styled(t: Table):
    """The table for st.table, which reads every cell, label and column name as Markdown: escaped (ui.text.md), so
    each shows as typed; the cells that differ from the first config highlighted."""
    shown = t.text.map(md)
    shown.index = pd.Index([label(i) for i in t.text.index], name=t.text.index.name)
    shown.columns = [md(c) for c in t.text.columns]
    return shown.style.apply(lambda d: pd.DataFrame(t.diff.map(lambda v: HIGHLIGHT if v else "").to_numpy(),
                                                    index=d.index, columns=d.columns), axis=None)


BREAK = "\u200b"  # a zero-width space: where a label may break that the browser would not break by itself


def label(text: str) -> str:
    """A row's label for st.table: escaped (ui.text.md), and free to break after each "_" of a field's name, so that
    on a phone "embedding_dim" wraps as "embedding_ / dim", not "embeddin / g_dim" (the browser breaks only at
    spaces and hyphens, and the label column is 6em there)."""
    return md(text).replace("_", "_" + BREAK)


# The tables wrap their labels and cells; where the configs' columns are wider than the screen (a phone, or a dozen
# configs), the table scrolls sideways inside its box and the label column stays at its left, so each row's label
# stays beside its values. A sticky cell needs the page's background: every box from the app down to the label
# cells takes it (inherit), in a light or a dark theme; a highlighted cell keeps its own (the Styler's id rule).
TABLE_CSS = """<style>
[data-testid="stApp"] :has(.st-key-compare_section [data-testid="stTable"]), .st-key-compare_section,
.st-key-compare_section :has([data-testid="stTable"]), .st-key-compare_section [data-testid="stTable"],
.st-key-compare_section [data-testid="stTable"] :is(div, table, thead, tbody, tr) { background-color: inherit; }
.st-key-compare_section [data-testid="stTable"] th:first-child {
  position: sticky; left: 0; z-index: 1; background-color: inherit; min-width: 7em; max-width: 14em; }
.st-key-compare_section [data-testid="stTable"] th:first-child * { overflow-wrap: break-word; }
.st-key-compare_section [data-testid="stTable"] :is(th, td) { white-space: normal; }
@media (max-width: 640px) { .st-key-compare_section [data-testid="stTable"] :is(th, td) { font-size: 12px; }
  .st-key-compare_section [data-testid="stTable"] th:first-child { min-width: 6em; max-width: 10em; } }
</style>"""
