"""The "Fine-tuning" expander of Memory's training tab and the Fit planner, and the settings it gives.

What trains (albert_core.estimate.finetune's modes), the task head (albert_core.estimate.heads) and LoRA's settings, kept in the
page controls (so the URL carries them); every number comes from albert_core.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from albert_core.config import ModelConfig
from albert_core.estimate.finetune import Trainable, lora_targets, trainable
from albert_core.share import parse_control, workload_of
from albert_core.step.compare import Settings
from albert_core.workload import Workload

from . import controls, state
from .text import md

MODE_LABELS = {"full": "full fine-tuning", "frozen-embeddings": "frozen embeddings",
               "frozen-layers": "frozen embeddings + the first k layers", "lora": "LoRA (peft)",
               "bitfit": "BitFit (biases only)"}
HEAD_LABELS = {"none": "none (the base model)", "classification": "sequence classification",
               "token": "token classification", "mlm": "masked LM (the family's own head)"}


def targets_of(ctl: Mapping[str, Any]) -> tuple[tuple[str, ...] | None, str | None]:
    """(LoRA targets or None for peft's default, the problem with the typed text or None)."""
    try:
        text = parse_control("lora_targets", str(ctl["lora_targets"]))
    except ValueError as e:
        return None, str(e)
    return (tuple(text.split(",")) if text else None), None


def settings_for(w: Workload) -> Settings:
    """The fine-tuning part of compare.Settings of w (mode, head, labels, LoRA); .fine_tuning() says it in words."""
    return Settings(mode=w.mode, head=w.head, num_labels=w.num_labels, lora=w.lora)


def settings_of(ctl: Mapping[str, Any]) -> Settings:
    """settings_for the workload the controls describe, as a link's workload reads them
    (albert_core.share.workload_of)."""
    return settings_for(workload_of(ctl))


def workload_for(cfg: ModelConfig, w: Workload) -> Workload:
    """w for cfg: seq_len at most cfg's max_position, frozen-layers:k with k at most cfg's layers (one link, configs
    of any length and depth)."""
    return w.replace(seq_len=min(w.seq_len, cfg.max_position), mode=Settings(mode=w.mode).mode_for(cfg))


def trainable_of(cfg: ModelConfig, w: Workload) -> Trainable:
    """What trains in cfg's task model under w's fine-tuning (mode, head, labels, LoRA; frozen-layers' k at most
    cfg's layers), counted as peft counts it (albert_core.estimate.finetune.trainable)."""
    v = workload_for(cfg, w)
    return trainable(cfg, v.mode, head=v.head, num_labels=v.num_labels, lora=v.lora)


@st.cache_data(show_spinner=False, max_entries=64)
def problems(cfgs: tuple[ModelConfig, ...], w: Workload) -> dict[str, str]:
    """config name -> why w's fine-tuning cannot be counted for it (LoRA without targets where peft has none, a
    target that matches nothing): albert_core.estimate.finetune's message, which names the modules to choose from."""
    out = {}
    for cfg in cfgs:
        try:
            trainable_of(cfg, w)
        except ValueError as e:
            out[cfg.name] = str(e)
    return out


def usable(cfgs: tuple[ModelConfig, ...], w: Workload) -> tuple[ModelConfig, ...]:
    bad = problems(cfgs, w)
    return tuple(c for c in cfgs if c.name not in bad)


def expander(cfgs: tuple[ModelConfig, ...], page: str = "memory") -> tuple[Workload, tuple[ModelConfig, ...]]:
    """Draw the Fine-tuning expander; (the view's workload on `page`: share.workload_of(controls, page), the configs
    its fine-tuning can be counted for). Says why for the others (a LoRA on ALBERT, DistilBERT or ModernBERT asks
    for its target modules)."""
    ctl = state.controls()
    s = settings_of(ctl)
    open_ = s.mode != "full" or s.head != "none"
    # a stateful expander whose content runs only while open (as ui/sidebar._section): a first visit in full
    # fine-tuning sends none of its widgets (docs/benchmarks.md, "Speed in the browser"); open by default when a link
    # sets a mode or a head, until the user opens or closes it
    opened = state.section_open("finetune", open_)
    st.session_state["sec.finetune"] = opened
    with st.expander(f"Fine-tuning: {s.fine_tuning()}", key="sec.finetune", on_change=_on_open,
                     icon=":material/tune:"):
        if opened:
            _widgets()
    w = workload_of(state.controls(), page)
    k = state.controls()["frozen_layers"]
    if s.mode.startswith("frozen-layers:") and any(c.num_layers < k for c in cfgs):
        deep = ", ".join(f"{md(c.name)} ({c.num_layers:,})" for c in cfgs if c.num_layers < k)
        st.caption(f"k = {k:,} is more than the layers of {deep}: there every layer is frozen.")
    if s.lora is not None and s.lora.targets is not None and (said := mapped_targets(cfgs, s.lora.targets)):
        st.caption("The targets in each model's own names: " + "; ".join(said) + ".")
    why = problems(cfgs, w)
    for name, msg in why.items():
        st.warning(f"**{md(name)}**: {md(msg)}. Type them under Target modules in Fine-tuning." if "LoRA" in msg
                   else f"**{md(name)}**: {md(msg)}.")
    return w, tuple(c for c in cfgs if c.name not in why)


def mapped_targets(cfgs: tuple[ModelConfig, ...], targets: tuple[str, ...]) -> list[str]:
    """One line per config whose family names the given LoRA targets otherwise (finetune.lora_targets), as
    "deberta-v3-base: query → query_proj, value → value_proj"."""
    out = []
    for cfg in cfgs:
        _, mapped = lora_targets(cfg, targets)
        if mapped:
            out.append(f"{md(cfg.name)}: " + ", ".join(f"{a} → {b}" for a, b in mapped))
    return out


def _on_open() -> None:
    state.set_section_open("finetune", st.session_state["sec.finetune"])


def _widgets() -> None:
    """The expander's controls: mode and head, k, labels, LoRA's settings (only the ones the choices use)."""
    c1, c2 = st.columns(2)
    mode = controls.select("train_mode", "What trains", fmt=lambda m: MODE_LABELS[m], where=c1,
                           help="Frozen parameters keep no gradients and no optimizer state.")
    head = controls.select("head", "Task head", fmt=lambda h: HEAD_LABELS[h], where=c2,
                           help="The AutoModelFor... class's head; MLM's logits span the vocabulary.")
    if mode == "frozen-layers":
        controls.number("frozen_layers", "k: layers frozen after the embeddings", where=c1,
                        help="At most each config's num_layers. ALBERT: a shared group freezes whole.")
    if head in ("classification", "token"):
        controls.number("num_labels", "Labels", where=c2)
    if mode == "lora":
        l1, l2, l3, l4 = st.columns([1, 1, 1, 2])
        controls.number("lora_r", "r (rank)", where=l1)
        controls.number("lora_alpha", "lora_alpha", where=l2, help="Scales the update by alpha / r; no memory.")
        controls.fraction("lora_dropout", "lora_dropout", where=l3,
                          help="Dropout on LoRA's input (peft); it keeps a copy of the input for backward.")
        controls.text("lora_targets", "Target modules (Hugging Face names)", where=l4,
                      placeholder="empty: peft's default, e.g. query,value",
                      help="Comma-separated module names as peft matches them (the name or its last parts). "
                           "BERT's query, key and value mean each model's own: query_proj in DeBERTa, q_lin in "
                           "DistilBERT, the fused Wqkv in ModernBERT.")
        _, bad = targets_of(state.controls())
        if bad:
            st.warning(f"{bad}; using peft's default targets.")
