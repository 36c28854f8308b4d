"""Memory: what activations and training cost as sequences grow, and where each config stops fitting."""

import streamlit as st

from ui.legacy import through_app

through_app()  # a deep link before app.py ever ran in this process: hand the run over to it

from ui import controls, data, figures, measured, plots, sections, state, tables
from ui.text import md

cfgs = tuple(state.shown_configs())
cfg = cfgs[0]
st.title("What memory still costs")
st.markdown(
    "Sharing shrinks the weights, not the activations: every layer application keeps its own inputs for "
    "backward, and the attention scores and probabilities grow with **seq_len²**. Activations are counted "
    "as the bytes PyTorch saves for backward in one training-mode forward (CUDA kernels), for sequences as "
    "long as max_position."
)

c1, c2, c3, c4 = st.columns(4)
with c1:
    batch = controls.number("batch_size", "Batch size (sequences)")
with c2:
    seq_max = controls.number("seq_max", "Longest sequence on the charts", step=512,
                              help="The charts reach at least every shown config's own max_position.")
with c3:
    dtype = controls.select("dtype", "dtype", help="mixed_*: autocast with float32 weights.")
with c4:
    attention = controls.select("attention", "Attention", help="eager materializes the S×S scores; sdpa (flash / "
                                "memory-efficient kernels) does not.")
c5, c6, c7 = st.columns(3)
with c5:
    training = controls.toggle("training", "Training (keep activations for backward)")
with c6:
    checkpointing = controls.toggle("checkpointing", "Gradient checkpointing",
                                    help="Keep only each layer's input; recompute the rest in backward.")
with c7:
    scale = controls.radio("scale", "Axis scale")
if checkpointing and not training:
    st.warning("Gradient checkpointing only applies to training; showing it off.")
    checkpointing = False

seqs = data.sweep_lengths(cfgs, seq_max)
log = scale == "log"
ctl = dict(state.controls(), checkpointing=checkpointing)
# only the open tab runs and is sent: the first visit draws the activation chart alone (docs/app.md, "Speed in the
# browser")
tab, body = sections.lazy_tabs("memory_tab", {
    "activations": "Activations against max_position", "max_position": "At each max_position",
    "variants": "Eager against sdpa", "training": "Training memory per GPU"})
shown = data.activations_modelled(cfgs, training)  # the inference peak is not modelled for every family
with body:
    if tab in ("activations", "max_position") and len(shown) < len(cfgs):
        st.info("The inference peak (Training off) is not modelled for " + ", ".join(
            f"{md(c.name)} ({c.family})" for c in cfgs if c not in shown) + ": albert_core does not replay when "
            "their code frees each tensor, so no number is shown; turn Training on to see their saved activations.")
    if tab == "activations":
        st.header("Activation memory against max_position")
        if shown:
            sweep_seqs = data.sweep_lengths(shown, seq_max)
            points = measured.activation_points(shown, sweep_seqs, ctl)
            plots.show(figures.memory_activations(shown, ctl, points), "memory_activations")
            act = data.activation_table(shown, sweep_seqs, batch, dtype, attention, training, checkpointing)
            tables.csv_button(measured.with_points(act, points), "activation-memory.csv", key="activation_csv")
    elif tab == "max_position":
        st.subheader("At each config's own max_position")
        if shown:
            at = data.at_max_position(shown, batch, dtype, attention, training, checkpointing)
            tables.show(at, "max_position_table", file_name="at-max-position.csv",
                        readable={"activations": "bytes", "attention_seq_len2": "bytes"}, pct=("attention_pct",))
    elif tab == "variants":
        st.subheader(f"{md(cfg.name)}: eager against sdpa, with and without checkpointing")
        if training:
            var = data.variant_table(cfg, seqs, batch, dtype)
            plots.show(figures.memory_variants(cfg, seqs, batch, dtype, log), "memory_variants")
            tables.csv_button(var, "activation-variants.csv", key="variants_csv")
        else:
            st.info("Turn Training on to compare eager and sdpa with and without checkpointing (saved activations).")
    else:
        st.header("Training memory per GPU")
        st.markdown("One training step: weights, gradients, optimizer state, float32 master weights (mixed "
                    "precision) and activations. Dashed lines: the memory of common GPUs.")
        d1, d2, d3, d4 = st.columns(4)
        with d1:
            seq_len = controls.number("seq_len", "Sequence length for the bars (tokens)", step=128,
                                      help="Clipped to each config's max_position.")
        with d2:
            precision = controls.select("precision", "Precision", help="mixed_*: 16-bit compute with float32 master "
                                        "weights; bfloat16/float16: pure 16-bit.")
        with d3:
            optimizer = controls.select("optimizer", "Optimizer")
        with d4:
            gpu = controls.select("gpu", "GPU")
        kw = (("precision", precision), ("optimizer", optimizer), ("attention", attention),
              ("checkpointing", checkpointing))
        train = data.training_table(cfgs, batch, seq_len, kw)
        plots.show(figures.memory_training_stack(cfgs, dict(ctl, seq_len=seq_len, precision=precision,
                                                           optimizer=optimizer, gpu=gpu)), "memory_training")
        tables.csv_button(train, "training-memory.csv", key="training_csv")

        st.subheader("Where each config stops fitting")
        st.markdown("Total training memory per GPU as max_position (and the sequence) grows; dashed: common GPUs.")
        sweep = data.training_sweep(cfgs, seqs, batch, kw)
        step_points = measured.training_points(cfgs, seqs, ctl, precision, optimizer)
        plots.show(figures.memory_training(cfgs, ctl, step_points), "memory_training_sweep")
        stops = data.stop_fitting(cfgs, (gpu,), batch, kw)
        st.markdown(f"The longest max_position whose training step (batch {batch:,}, sequences as long as "
                    f"max_position) fits one **{gpu}**; the position table grows with it.")
        tables.show(stops, "stop_table", file_name="stop-fitting.csv", readable={"gpu_bytes": "bytes"})
        tables.csv_button(measured.with_step_points(sweep, step_points), "training-memory-vs-length.csv",
                          key="training_sweep_csv")
far = [c for c in cfgs if c.max_position > 131_072]
if far:
    st.info("max_position beyond 131,072 for " + ", ".join(md(c.name) for c in far) + ": far past any BERT or "
            "ALBERT that was trained (512); the numbers are what such a model would need, not a recommendation.")
