"""The side-by-side comparison table: one column per shown config, differences from the first highlighted."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from albert_core.compare import Settings
from albert_core.training import LOWER_BOUND_MODES
from albert_core.units import format_bytes, format_count, format_flops

from . import finetune, state
from .tables import csv_button

HIGHLIGHT = "background-color: #FFE8A3; color: #262730; font-weight: 600"


def settings() -> Settings:
    """The comparison's settings from the page controls (Memory / Fit planner / Compute)."""
    c = state.controls()
    return Settings(batch_size=c["batch_size"], seq_len=c["seq_len"], dtype=c["dtype"], attention=c["attention"],
                    training=c["training"], checkpointing=c["checkpointing"] and c["training"],
                    precision=c["precision"], optimizer=c["optimizer"], num_gpus=c["num_gpus"],
                    sharding=c["sharding"], flops_seq_len=c["flops_seq_len"], **_fine_tuning(c))


def _fine_tuning(c) -> dict:
    f = finetune.settings_of(c)
    return dict(mode=f.mode, head=f.head, num_labels=f.num_labels, lora=f.lora)


def _signed(d, fmt) -> str:
    return ("+" if d > 0 else "−") + fmt(abs(d))


def cell(unit: str, value, delta, rel) -> str:
    """Text of one cell: the value for people, and its change against the first config."""
    fmt = {"parameters": lambda v: f"{int(v):,} ({format_count(int(v))})", "bytes": lambda v: format_bytes(int(v)),
           "FLOPs": lambda v: format_flops(int(v)), "%": lambda v: f"{v:.2f}%"}.get(unit)
    if value is None and unit:
        return "not modelled"
    if fmt is None:
        return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)
    text = fmt(value)
    if delta:
        short = {"parameters": lambda v: format_count(int(v)), "%": lambda v: f"{v:.2f} pts"}.get(unit, fmt)
        pct = "" if rel is None or unit == "%" else f", {rel:+.1%}" if abs(rel) < 0.1 else f", {rel:+.0%}"
        text += f"  ({_signed(delta, short)}{pct})"
    return text


def result_labels(s: Settings) -> dict[str, str]:
    """Each result row's name with the settings its number depends on: the Overview headline, this table and the
    Memory page give different training memories for one config when their settings differ, and each says which."""
    ckpt = ", checkpointing" if s.checkpointing and s.training else ""
    mode = "training" if s.training else "inference"
    return {
        "activations at max_position": f"activations at max_position (batch {s.batch_size:,}, {s.dtype}, "
                                       f"{s.attention}, {mode}{ckpt})",
        "trainable parameters": f"trainable parameters ({s.fine_tuning()})",
        "training step's peak per GPU": f"training step's peak per GPU (batch {s.batch_size:,} × {s.seq_len:,} "
                                        f"tokens, {s.precision}, {s.optimizer}, {s.attention}{ckpt}, "
                                        f"{s.num_gpus:,} GPU(s), {s.sharding}, {s.fine_tuning()}; on CUDA, "
                                        f"{'at least' if s.mode.split(':')[0] in LOWER_BOUND_MODES else 'an estimate'}"
                                        ": Memory → peak_is)",
        "training memory per GPU (sum of parts)": "training memory per GPU, sum of parts (same settings)",
        "forward FLOPs per sequence": f"forward FLOPs per sequence ({s.flops_seq_len:,} tokens)",
    }


def wide(df: pd.DataFrame, settings: Settings | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(text table one column per config, bool table of cells that differ from the first config); with the
    settings, the result rows carry them in their names (result_labels)."""
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
    labels = result_labels(settings) if settings is not None else {}
    index = pd.Index([labels.get(i, i) for i in items], name="field / result")
    return pd.DataFrame(text, index=index), pd.DataFrame(diff, index=index)


def differing(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of fields that differ between the configs (name included), and every result."""
    fields = df[df["section"] == "field"]
    keep = {"name"} | set(fields.loc[fields["differs"], "item"])
    return df[(df["section"] == "result") | df["item"].isin(keep)]


def show(df: pd.DataFrame, key: str = "compare_table", settings: Settings | None = None) -> None:
    n_fields = df[df["section"] == "field"]["item"].nunique()
    every = st.toggle("Show every field", value=False, key="compare_every_field",
                      help="Off: only the fields in which the configs differ (and the results).")
    shown = df if every else differing(df)
    hidden = n_fields - shown[shown["section"] == "field"]["item"].nunique()
    if hidden:
        st.caption(f"{hidden} fields equal in every config are hidden.")
    text, diff = wide(shown, settings)
    styled = text.style.apply(lambda col: [HIGHLIGHT if d else "" for d in diff[col.name]], axis=0)
    with st.container(key="compare_section"):
        cols = {n: st.column_config.TextColumn(n, width="medium") for n in text.columns}
        cols["_index"] = st.column_config.TextColumn("field / result", width="medium")
        st.dataframe(styled, key=key, height=35 * (len(text) + 1) + 3, column_config=cols)
        csv_button(df, "comparison.csv", key=f"{key}_csv")
