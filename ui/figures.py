"""The main figure of each page, titled and captioned with its settings: drawn by the pages and put into the
report (ui/report.py), so both show the same figure. Controls come as the session's control dict."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go

from charts import compute as compute_charts
from charts import fit as fit_charts
from charts import memory as memory_charts
from charts import params as params_charts
from charts.base import slide

from . import data

Ctl = Mapping[str, Any]


def activation_caption(ctl: Ctl) -> str:
    mode = "training" if ctl["training"] else "inference"
    ckpt = ", gradient checkpointing" if ctl["checkpointing"] and ctl["training"] else ""
    return (f"Batch {ctl['batch_size']:,}, {ctl['dtype']} activations, {ctl['attention']} attention, {mode}{ckpt}; "
            "dotted: each config's own max_position, with the attention (seq_len²) memory there.")


def training_kw(ctl: Ctl) -> tuple:
    return (("precision", ctl["precision"]), ("optimizer", ctl["optimizer"]), ("attention", ctl["attention"]),
            ("checkpointing", bool(ctl["checkpointing"] and ctl["training"])))


def training_caption(ctl: Ctl, seq: str) -> str:
    ckpt = ", checkpointing" if ctl["checkpointing"] and ctl["training"] else ""
    return (f"Batch {ctl['batch_size']:,} per GPU, {seq}, {ctl['precision']}, {ctl['optimizer']}, "
            f"{ctl['attention']} attention{ckpt}; dashed: GPU memory.")


def params_shares(cfgs: tuple, title: str = "Where the parameters sit: shares") -> go.Figure:
    fig = params_charts.share_bars(data.params_long(data.params_table(cfgs)))
    return slide(fig, title, "Embedding (token, position, segment tables and ALBERT's E→H projection), "
                             "all layers (a shared layer counted once), pooler; 100% = the config's parameters.")


def params_counts(cfgs: tuple, title: str = "Where the parameters sit: counts") -> go.Figure:
    fig = params_charts.component_bars(data.params_long(data.params_table(cfgs)))
    return slide(fig, title, "Stored parameters of the base model (no pre-training heads); hover for exact counts.")


def memory_activations(cfgs: tuple, ctl: Ctl) -> go.Figure:
    seqs = data.sweep_lengths(cfgs, ctl["seq_max"])
    ckpt = bool(ctl["checkpointing"] and ctl["training"])
    args = (ctl["batch_size"], ctl["dtype"], ctl["attention"], bool(ctl["training"]), ckpt)
    act = data.activation_table(cfgs, seqs, *args)
    at = data.at_max_position(cfgs, *args)
    marks = {r["config"]: (int(r["max_position"]), int(r["attention_seq_len2"]), int(r["activations"]))
             for _, r in at.iterrows()}
    fig = memory_charts.activation_vs_seq(act, log=ctl["scale"] == "log", marks=marks)
    return slide(fig, "Activation memory against max_position", activation_caption(ctl), pad=34)


def memory_training(cfgs: tuple, ctl: Ctl) -> go.Figure:
    seqs = data.sweep_lengths(cfgs, ctl["seq_max"])
    sweep = data.training_sweep(cfgs, seqs, ctl["batch_size"], training_kw(ctl))
    fig = memory_charts.training_vs_seq(sweep, data.GPUS, log=ctl["scale"] == "log",
                                        marks={c.name: c.max_position for c in cfgs})
    return slide(fig, "Training memory per GPU against max_position",
                 training_caption(ctl, "sequences as long as max_position") + " Diamonds: each config's own.")


def fit_bars(cfgs: tuple, ctl: Ctl) -> tuple[go.Figure, Any]:
    kw = (("precision", ctl["precision"]), ("optimizer", ctl["optimizer"]), ("num_gpus", ctl["num_gpus"]),
          ("sharding", ctl["sharding"]), ("attention", ctl["attention"]), ("checkpointing", bool(ctl["checkpointing"])))
    plan = data.fit_plan(cfgs, ctl["gpu"], ctl["batch_size"], ctl["seq_len"], kw)
    ckpt = ", checkpointing" if ctl["checkpointing"] else ""
    fig = slide(fit_charts.fit_bars(plan), f"What fits on {ctl['num_gpus']:,} × {ctl['gpu']}",
                f"Sharding {ctl['sharding']}, {ctl['precision']}, {ctl['optimizer']}, {ctl['attention']} attention"
                f"{ckpt}; batch {ctl['batch_size']:,}, sequences of {ctl['seq_len']:,} tokens (at most max_position).",
                pad=34)  # room for the panel titles
    return fig, plan


def compute_scatter(cfgs: tuple, seq_len: int) -> tuple[go.Figure, Any, Any]:
    table, parts = data.compute_table(cfgs, seq_len)
    fig = slide(compute_charts.flops_vs_params(table, seq_len), "Forward FLOPs against stored parameters",
                f"One sequence of {seq_len:,} tokens (or the config's max_position if shorter), batch 1; "
                "matmul FLOPs, 2 per multiply-add.")
    return fig, table, parts
