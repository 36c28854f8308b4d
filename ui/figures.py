"""The main figure of each page, titled and captioned with its settings: drawn by the pages and put into the
report (ui/report.py), so both show the same figure. Controls come as the session's control dict.

Building a Plotly figure costs tens of milliseconds (every property is validated), so the figures are
cached as objects (st.cache_resource): callers must not change a figure they get from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from albert_core.share import forward_of, workload_of
from albert_core.step.training import PRECISION_LABELS
from albert_core.workload import Workload
from charts import compute as compute_charts
from charts import fit as fit_charts
from charts import memory as memory_charts
from charts import paper as paper_charts
from charts import params as params_charts
from charts.base import MUTED, SLIDE_PAD, slide

from . import data
from . import finetune as ft_ui

Ctl = Mapping[str, Any]
cached = st.cache_resource(show_spinner=False, max_entries=64)


def activation_caption(ctl: Ctl) -> str:
    mode = "training" if ctl["training"] else "inference"
    ckpt = ", gradient checkpointing" if ctl["checkpointing"] and ctl["training"] else ""
    return (f"Batch {ctl['batch_size']:,}, {ctl['dtype']} activations, {ctl['attention']} attention, {mode}{ckpt}; "
            "dotted: each config's own max_position, with the attention (seq_len²) memory there; one y range "
            "for every panel.")


def training_workload(ctl: Ctl, *, planner: bool = False) -> Workload:
    """The training step the controls describe (albert_core.share.workload_of, what a link carries):
    Memory's training tab, or with planner the Fit planner's (its GPUs and sharding)."""
    return workload_of(ctl, "fit" if planner else "memory")


def training_caption(ctl: Ctl, seq: str) -> str:
    ckpt = ", checkpointing" if ctl["checkpointing"] and ctl["training"] else ""
    return (f"Batch {ctl['batch_size']:,} per GPU, {seq}, {PRECISION_LABELS[ctl['precision']]}, {ctl['optimizer']}, "
            f"{ctl['attention']} attention{ckpt}, {ft_ui.settings_of(ctl).fine_tuning()}; dashed: GPU memory.")


def _shade(fig: go.Figure, highlight: int) -> None:
    """Shade the first `highlight` configs (the user's, before the reference presets) and mark them above the plot,
    in the room slide(pad=YOURS_PAD) keeps there, with a bracket named "yours": inside, a tall bar or a full share
    would cover a label (and the shares cover the shading)."""
    if highlight:
        fig.add_vrect(x0=-0.5, x1=highlight - 0.5, fillcolor="rgba(38,39,48,0.07)", line_width=0, layer="below")
        fig.add_shape(type="line", x0=-0.45, x1=highlight - 0.55, xref="x", y0=5, y1=5, yref="paper", yanchor=1,
                      ysizemode="pixel", line=dict(color=MUTED, width=1.5))
        fig.add_annotation(text="yours", x=(highlight - 1) / 2, xref="x", y=1, yref="paper", yanchor="bottom",
                           yshift=6, showarrow=False, font=dict(size=12, color=MUTED))


YOURS_PAD = 30  # px between the subtitle and the plot where "yours" stands: a 12-px line and its padding


@cached
def params_shares(cfgs: tuple, title: str = "Where the parameters sit: shares", highlight: int = 0) -> go.Figure:
    fig = params_charts.share_bars(data.params_long(data.params_table(cfgs)))
    _shade(fig, highlight)
    return slide(fig, title, "Embedding (token, position, segment tables and ALBERT's E→H projection), "
                             "all layers (a shared layer counted once), pooler; 100% = the config's parameters.",
                 pad=YOURS_PAD if highlight else SLIDE_PAD)


@cached
def params_counts(cfgs: tuple, title: str = "Where the parameters sit: counts", highlight: int = 0) -> go.Figure:
    fig = params_charts.component_bars(data.params_long(data.params_table(cfgs)))
    _shade(fig, highlight)
    return slide(fig, title, "Stored parameters of the base model (no pre-training heads); hover for exact counts.",
                 pad=YOURS_PAD if highlight else SLIDE_PAD)


@cached
def decoder_shares(reference: tuple, title: str) -> go.Figure:
    fig = params_charts.share_bars(data.decoder_long(data.decoder_table(reference)))
    return slide(fig, title, "BERT-base and ALBERT-base first, then the small decoders by their embedding share: the "
                             "token table (GPT-2's positions too), the layers, the final norm (the encoders' pooler); "
                             "100% = the base model's parameters, a tied output projection counted once.",
                 pad=SLIDE_PAD)


@cached
def memory_activations(cfgs: tuple, ctl: Ctl, points: Any = None) -> go.Figure:
    """points: measure.points_table of the engine's measured points (None: the estimate alone)."""
    seqs = data.sweep_lengths(cfgs, ctl["seq_max"])
    w, training = forward_of(ctl), bool(ctl["training"])
    act = data.activation_table(cfgs, seqs, w, training)
    at = data.at_max_position(cfgs, w, training)
    marks = {r["config"]: (int(r["max_position"]), int(r["attention_seq_len2"]), int(r["activations"]))
             for _, r in at.iterrows()}
    fig = memory_charts.activation_vs_seq(act, log=ctl["scale"] == "log", marks=marks, measured=points)
    caption = activation_caption(ctl)
    if points is not None:
        caption += (f" Circles: {len(points)} points measured by PyTorch on this server (fake tensors, CPU kernels), "
                    "on the dashed estimate for the same kernels.")
    return slide(fig, "Activation memory against max_position", caption, pad=34)


DECODER_VIEWS = {  # Memory's decoders tab: what each chart draws, its title and caption
    "loss": ("The loss's float32 logits against sequence length",
             "What a causal LM's loss saves for backward at batch {batch:,}: transformers' ForCausalLMLoss upcasts the "
             "logits to float32 and cross_entropy's log-softmax keeps them, B × S × vocab × 4 bytes (and the "
             "shifted labels), on top of the step's other memory; measured equal by the engine "
             "(memory --preset NAME). Diamonds: each model's max_position; dashed: common GPUs."),
    "kv_cache": ("KV cache against context",
                 "Serving: the keys and values a decoder keeps while it generates with that many tokens of context, "
                 "batch {batch:,}, bfloat16: 2 × layers × kv_heads × head_dim × 2 bytes a token (grouped-query "
                 "attention: kv_heads, not heads). Gemma-3's local layers keep at most their 512-token window once "
                 "generation starts (right after the prompt transformers' cache holds all of it), so past 512 "
                 "tokens only its global layers, one in six, grow. Equal to the DynamicCache transformers fills "
                 "(tests). Diamonds: max_position."),
}


@cached
def decoder_context(what: str, batch: int, log: bool) -> go.Figure:
    """Memory's decoders tab: the loss's saved logits or the KV cache of data.MEMORY_DECODERS against length."""
    title, caption = DECODER_VIEWS[what]
    df = data.decoder_context(batch)
    d = df[df["what"] == what]
    marks = {n: int(g["seq_len"].max()) for n, g in d.groupby("config")}
    label = "the loss's float32 logits" if what == "loss" else "KV cache"
    fig = memory_charts.training_vs_seq(d[["config", "seq_len", "bytes"]], data.GPUS, log=log, marks=marks,
                                        what=label, x_title="seq_len" if what == "loss" else "context")
    return slide(fig, title, caption.format(batch=batch))


@cached
def memory_training(cfgs: tuple, ctl: Ctl, points: Any = None) -> go.Figure:
    """points: measure.step_points_table of the engine's measured step peaks (None: the estimate alone)."""
    seqs = data.sweep_lengths(cfgs, ctl["seq_max"])
    sweep = data.training_sweep(cfgs, seqs, training_workload(ctl))
    fig = memory_charts.training_vs_seq(sweep, data.GPUS, log=ctl["scale"] == "log",
                                        marks={c.name: c.max_position for c in cfgs}, measured=points,
                                        what="the step's peak")
    caption = (training_caption(ctl, "sequences as long as max_position") + " The training step's peak per GPU "
               "(albert_core.step.peak; mixed_*: autocast with float32 weights). Diamonds: each config's own.")
    if points is not None:
        worst = max((abs(e) for e in points["error"] if e is not None and e == e), default=0.0)
        caption += (f" Circles: the training step's peak measured by PyTorch on this server (fake tensors, CPU "
                    f"kernels); dashed: albert_core's modelled peak for that step, within {100 * worst:.1f}%. The "
                    "solid lines are albert_core's modelled peak for CUDA (1-byte dropout masks, torch.optim's "
                    "foreach step; the working set inside a layer not replayed: peak_is in the table).")
    return slide(fig, "Training memory against max_position", caption)  # per GPU: its y axis and caption


@cached
def fit_bars(cfgs: tuple, ctl: Ctl) -> tuple[go.Figure, Any]:
    plan = data.fit_plan(cfgs, ctl["gpu"], training_workload(ctl, planner=True))
    ckpt = ", checkpointing" if ctl["checkpointing"] else ""
    fig = slide(fit_charts.fit_bars(plan), f"What fits on {ctl['num_gpus']:,} × {ctl['gpu']}",
                f"Sharding {ctl['sharding']}, {ctl['precision']}, {ctl['optimizer']}, {ctl['attention']} attention"
                f"{ckpt}, {ft_ui.settings_of(ctl).fine_tuning()}; batch {ctl['batch_size']:,}, sequences of "
                f"{ctl['seq_len']:,} tokens (at most max_position); the training step's peak must fit; "
                "below: the longest sequence, max_position raised with it.",
                pad=34)  # room for the panel titles
    return fig, plan


@cached
def compute_scatter(cfgs: tuple, seq_len: int) -> tuple[go.Figure, Any, Any]:
    table, parts = data.compute_table(cfgs, seq_len)
    fig = slide(compute_charts.flops_vs_params(table, seq_len), "Forward FLOPs against stored parameters",
                f"One sequence of {seq_len:,} tokens (or the config's max_position if shorter), batch 1; "
                "matmul FLOPs, 2 per multiply-add.")
    return fig, table, parts


# ---- the other figures of the pages (cached the same way) -------------------------------------------------
@cached
def params_sunburst(cfg) -> go.Figure:
    bd = data.breakdown(cfg)
    return slide(params_charts.breakdown_sunburst(bd, cfg.name),
                 "Every parameter group",  # the name in full below it: a title keeps one line on a phone
                 f"{cfg.name}: {int(bd['params'].sum()):,} stored parameters; a shared tensor counted once.")


# what albert_core.estimate.sweeps.scaled moves with the swept field (the rest stays as in each config)
SWEEP_MOVES = {
    "hidden_dim": "I/H and the head width stay (E follows H where the family ties them)",
    "num_layers": "uneven groups become one",
}


def _same_curves(df) -> list[list[str]]:
    """Configs whose share curves are the same points (one hides the other): lists of two or more names."""
    by: dict[tuple, list[str]] = {}
    for name, d in df.groupby("config", sort=False):
        key = tuple(zip(d["value"], d["embedding_pct"].round(9), d["layers_pct"].round(9), strict=True))
        by.setdefault(key, []).append(str(name))
    return [names for names in by.values() if len(names) > 1]


@cached
def params_share_sweep(cfgs: tuple, field: str, log: bool) -> go.Figure:
    df = data.share_sweep(cfgs, field)
    fig = params_charts.share_sweep(df, field, log_x=log)
    moves = SWEEP_MOVES.get(field)
    caption = ("Solid: embedding share; dotted: layers; diamonds: each config's own value. "
               + (f"Along {field}: {moves}; the rest as in each config." if moves else "The rest as in each config."))
    for names in _same_curves(df):
        caption += f" {' and '.join(names)}: the same curves, one under the other."
    return slide(fig, f"Parameter shares against {field}", caption)


@cached
def params_factorization(cfgs: tuple) -> go.Figure:
    return slide(params_charts.factorization(data.factorization_sweep(cfgs)),
                 "What the factorization saves",
                 "Embedding parameters. Solid: V×E + E×H at embedding_dim E; dashed: the unfactorized V×H; diamonds: each config's own "
                 "E; shaded: E = 64-256.")


@cached
def params_sharing(cfgs: tuple, log: bool = False) -> go.Figure:
    return slide(params_charts.sharing_modes(data.sharing_table(cfgs), log=log), "Parameters under the four sharing modes",
                 "Each config's own num_groups and inner_group_num; none = every layer owns its weights."
                 + (" Log scale." if log else ""))


@cached
def memory_variants(cfg, seqs: tuple, w: Workload, log: bool) -> go.Figure:
    """w: the forward of Memory's controls (share.forward_of); its attention and checkpointing are what varies."""
    var = data.variant_table(cfg, seqs, w)
    return slide(memory_charts.variants(var, cfg.name, log=log, max_position=cfg.max_position),
                 "Eager and sdpa, checkpointing on and off",
                 f"{cfg.name}: batch {w.batch_size:,}, {w.precision}, training; the dotted line is its max_position.")


@cached
def memory_training_stack(cfgs: tuple, ctl: Ctl) -> go.Figure:
    train = data.training_table(cfgs, training_workload(ctl))
    gpu = ctl["gpu"]
    peaks = {r["config"]: int(r["bytes"]) for _, r in train[train["part"] == "peak"].iterrows()}
    return slide(memory_charts.training_stack(train[~train["part"].isin(("total", "peak"))], {gpu: data.GPUS[gpu]},
                                              peaks=peaks),
                 "Training memory per GPU: parts and peak",  # one line on a phone (charts.base.TEXT_PX)
                 training_caption(ctl, f"sequences of {ctl['seq_len']:,} tokens (at most max_position)")
                 + " Bars: the sum of the parts; black bar: the step's peak (what must fit).")


@cached
def compute_breakdown(cfgs: tuple, seq_len: int, shares: bool = False) -> go.Figure:
    _, parts = data.compute_table(cfgs, seq_len)
    return slide(compute_charts.flops_breakdown(parts, seq_len, shares=shares), "Where the forward FLOPs go",
                 f"One sequence of {seq_len:,} tokens (or the config's max_position if shorter), batch 1, by "
                 "component" + ("; each bar is its config's forward, 100%." if shares else "."))


@cached
def decoder_breakdown(seq_len: int, shares: bool = False) -> go.Figure:
    _, parts = data.decoder_flops(seq_len)
    return slide(compute_charts.flops_breakdown(parts, seq_len, shares=shares), "Where a decoder's forward FLOPs go",
                 f"Every decoder preset, one sequence of {seq_len:,} tokens (or its max_position if shorter), batch 1, "
                 "by component, with the LM head where it trains as a causal LM (2·S·H·vocab: the vocabulary costs "
                 "compute too); attention's two S² parts compute the full S × S under a causal mask or a window"
                 + ("; each bar is its model's forward, 100%." if shares else "."))


# ---- what the ALBERT paper measured ---------------------------------------------------------------------------
@cached
def paper_tradeoff(cfgs: tuple, tables: tuple[int, ...], by: str, title: str) -> go.Figure:
    """The paper's rows of `tables` at albert_core's exact counts against their Avg; rings: the shown configs that
    are exactly one of those networks. A config the paper did not train is named in the caption, not drawn."""
    marks = data.paper_marks(cfgs, tables)
    fig = paper_charts.tradeoff(data.paper_points(tables, by), marks)
    which = ", ".join(str(t) for t in tables)
    unmatched = [c.name for c in cfgs if c.name not in set(marks["config"])]
    caption = (f"Lan et al. 2020, Table{'s' if len(tables) > 1 else ''} {which}: each point is a network the "
               "paper pretrained, at albert_core's exact count; rings: your configs that are exactly that network.")
    if unmatched:
        caption += f" Not trained in the paper, so not drawn (nothing is interpolated): {', '.join(unmatched)}."
    return slide(fig, title, caption)


@cached
def paper_speedup() -> go.Figure:
    return slide(paper_charts.speedup_bars(data.paper_speedups()), "Measured speedup against FLOPs",
                 "Table 2's six models; grey: BERT-large's forward FLOPs per token (512 tokens) over the model's, "
                 "what FLOPs alone predict; blue: the training throughput the paper measured on Cloud TPU v3, "
                 "which this app does not reproduce.")
