"""Memory: what activations and training cost as sequences grow, and where each config stops fitting."""

import streamlit as st

from ui.legacy import through_app

through_app()  # a deep link before app.py ever ran in this process: hand the run over to it

from albert_core.estimate.gpus import precision_note
from albert_core.share import forward_of
from albert_core.step.training import PRECISION_LABELS, PRECISION_NOTES
from albert_core.units import format_bytes
from ui import controls, data, figures, measured, plots, sections, state, tables, url
from ui import finetune as ft_ui
from ui.text import attention_note, md

cfgs = tuple(state.shown_configs())
cfg = cfgs[0]
st.title("What memory still costs")
st.markdown(
    "Sharing shrinks the weights, not the activations: every layer application keeps its own inputs for "
    "backward, and the attention scores and probabilities grow with **seq_len²**. Activations are counted "
    "as the bytes PyTorch saves for backward in one training-mode forward (CUDA kernels), for sequences as "
    "long as max_position."
)

# the tabs first, each with the controls it uses: the serving tab none, the training tab its own precision in place
# of dtype and Training (a new user read the top controls as the training tab's, and a phone scrolled 900 px of them)
# only the open tab runs and is sent: the first visit draws the activation chart alone (docs/benchmarks.md, "Speed in the
# browser")
tab, body = sections.lazy_tabs("memory_tab", {
    "activations": "Activations against max_position", "max_position": "At each max_position",
    "variants": "Eager against sdpa", "training": "Training memory per GPU", "serving": "Serving sizes",
    "decoders": "The small decoders"})
on_activations = tab in ("activations", "max_position", "variants")
stored = state.controls()
batch, seq_max, attention, scale = (stored[k] for k in ("batch_size", "seq_max", "attention", "scale"))
training, checkpointing = stored["training"] or tab == "training", stored["checkpointing"]
with body:
    if tab == "decoders":  # presets of albert_core.decoders, not the sidebar's configs: the batch and the axes only
        c1, c2 = st.columns(2)
        with c1:
            batch = controls.number("batch_size", "Batch size (sequences)")
        with c2:
            scale = controls.radio("scale", "Axis scale")
    elif tab != "serving":
        c1, c2, c3, c4 = st.columns(4)
        with c1:
            batch = controls.number("batch_size", "Batch size (sequences)")
        with c2:
            seq_max = controls.number("seq_max", "Longest sequence on the charts", step=512,
                                      help="The charts reach at least every shown config's own max_position.")
        with c3:
            attention = controls.select("attention", "Attention", help="eager materializes the S×S scores; sdpa "
                                        "(flash / memory-efficient kernels) does not.")
        c5, c6, c7 = st.columns(3)
        with c5:
            checkpointing = controls.toggle("checkpointing", "Gradient checkpointing",
                                            help="Keep only each layer's input; recompute the rest in backward.")
        if on_activations:  # what the activations are counted in, and whether backward keeps them
            with c4:
                controls.select("dtype", "Activation dtype", help="mixed_*: autocast with float32 weights. The "
                                "training tab counts its own precision.")
            with c6:
                training = controls.toggle("training", "Training (keep activations for backward)")
        with c7 if on_activations else c4:
            scale = controls.radio("scale", "Axis scale")
        if note := attention_note(cfgs, attention):
            st.caption(note)
        if checkpointing and not training:
            st.warning("Gradient checkpointing only applies to training; showing it off.")
            checkpointing = False
seqs = data.sweep_lengths(cfgs, seq_max)
log = scale == "log"
ctl = dict(state.controls(), checkpointing=checkpointing, training=training)
forward = forward_of(ctl)  # what the activation tabs count: batch, dtype, attention, checkpointing
shown = data.activations_modelled(cfgs, training)  # the inference peak is not modelled for every family
with body:
    if tab not in ("serving", "decoders") and seqs[-1] > seq_max:  # a shown config's own max_position reaches further than the control
        longest = max(cfgs, key=lambda c: c.max_position)
        st.caption(f"The charts run to {seqs[-1]:,} tokens, {md(longest.name)}'s own max_position (the longest "
                   f"sequence asked for: {seq_max:,}).")
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
            act = data.activation_table(shown, sweep_seqs, forward, training)
            tables.csv_button(measured.with_points(act, points), "activation-memory.csv", key="activation_csv")
    elif tab == "max_position":
        st.subheader("At each config's own max_position")
        if shown:
            at = data.at_max_position(shown, forward, training)
            tables.show(at, "max_position_table", file_name="at-max-position.csv",
                        readable={"activations": "bytes", "attention_seq_len2": "bytes"}, pct=("attention_pct",))
    elif tab == "variants":
        st.subheader(f"{md(cfg.name)}: eager against sdpa, with and without checkpointing")
        if training:
            var = data.variant_table(cfg, seqs, forward)
            plots.show(figures.memory_variants(cfg, seqs, forward, log), "memory_variants")
            tables.csv_button(var, "activation-variants.csv", key="variants_csv")
        else:
            st.info("Turn Training on to compare eager and sdpa with and without checkpointing (saved activations).")
    elif tab == "training":
        st.header("Training memory per GPU")
        st.markdown("One training step: weights, gradients, optimizer state, float32 master weights (the master-copy "
                    "precisions) and activations, and the **step's peak**: the most bytes alive at one moment of "
                    "the step (albert_core.step.peak), which is what must fit. Dashed lines: the memory of common GPUs.")
        d1, d2, d3, d4 = st.columns(4)
        with d1:
            seq_len = controls.number("seq_len", "Sequence length for the bars (tokens)", step=128,
                                      help="Clipped to each config's max_position.")
        with d2:
            precision = controls.select("precision", "Precision", fmt=lambda p: PRECISION_LABELS[p],
                                        help="mixed: torch.autocast over float32 weights (HF Trainer's bf16/fp16); "
                                             "+ float32 master copy: 16-bit weights, the optimizer over float32 "
                                             "copies (apex O2, DeepSpeed); model cast: pure 16-bit. The bars and "
                                             "the peak count the same one.")
        with d3:
            optimizer = controls.select("optimizer", "Optimizer")
        with d4:
            gpu = controls.select("gpu", "GPU")
        if note := precision_note(gpu, precision):
            st.caption(note)
        tuned, ok = ft_ui.expander(cfgs)
        if ok:
            ft_text = ft_ui.settings_of(state.controls()).fine_tuning()
            st.subheader("What trains")
            st.caption(f"{ft_text}; counted as peft's get_nb_trainable_parameters counts the task model "
                       "(LoRA's adapters and peft's trainable head copies included).")
            tables.show(data.trainable_table(ok, tuned), "trainable_table", file_name="trainable-parameters.csv",
                        readable={"trainable": "count", "frozen": "count", "total": "count"}, pct=("trainable_pct",))
            ctl_t = dict(ctl, seq_len=seq_len, precision=precision, optimizer=optimizer, gpu=gpu)
            w = figures.training_workload(ctl_t)  # the step of this tab's controls
            train = data.training_table(ok, w)
            plots.show(figures.memory_training_stack(ok, ctl_t), "memory_training")
            st.subheader("The step's peak beside the sum of the parts")
            st.caption(f"Batch {batch:,} × {seq_len:,} tokens (at most max_position), {precision}, {optimizer}, "
                       f"{attention}{', checkpointing' if checkpointing else ''}, {ft_text}. "
                       f"{PRECISION_LABELS[precision]}: {PRECISION_NOTES[precision]}, in the bars and the peak alike.")
            peaks = data.peak_table(ok, w)
            at_cols = {c: "bytes" for c in peaks.columns if c.startswith("at peak: ")}
            tables.show(peaks, "peak_table", file_name="training-step-peak.csv",
                        readable={"peak": "bytes", "sum_of_parts": "bytes", **at_cols}, pct=("peak_vs_sum_pct",))
            st.caption("Each peak's step, built in PyTorch: " + " · ".join(  # config, batch, length, every control
                f"{md(c.name)}: {url.measure_on_verify(c, w.replace(seq_len=min(seq_len, c.max_position)))}" for c in ok)
                + ".")
            tables.csv_button(train, "training-memory.csv", key="training_csv")

            st.subheader("Where each config stops fitting")
            st.markdown("The training step's peak per GPU as max_position (and the sequence) grows; dashed: common GPUs.")
            sweep = data.training_sweep(ok, seqs, w)
            full = ft_ui.settings_of(state.controls())
            step_points = None
            if full.mode == "full" and full.head == "none":
                step_points = measured.training_points(ok, seqs, ctl, precision, optimizer)
            else:
                st.caption("Measured points: the engine's sweep measures full fine-tuning of the base model; choose "
                           "full and no head to measure here (Verify measures any mode).")
            plots.show(figures.memory_training(ok, ctl_t, step_points),
                       "memory_training_sweep")
            stops = data.stop_fitting(ok, (gpu,), w)
            st.markdown(f"The longest max_position whose training step's peak (batch {batch:,}, sequences as long "
                        f"as max_position, {md(ft_text)}) fits one **{gpu}**; the position table grows with it.")
            tables.show(stops, "stop_table", file_name="stop-fitting.csv", readable={"gpu_bytes": "bytes"})
            tables.csv_button(measured.with_step_points(sweep, step_points), "training-memory-vs-length.csv",
                              key="training_sweep_csv")
    elif tab == "decoders":
        st.header("The small decoders: what their vocabulary and context cost")
        st.markdown("A decoder's vocabulary costs memory past its table: training a causal LM keeps the loss's "
                    "**float32 logits**, batch × sequence × vocabulary × 4 bytes, and serving it keeps a **KV cache** "
                    "that grows with the context. Five of albert_core's decoder presets, at the batch above; "
                    "the whole training step of any of them (its peak, what is alive there): memory --preset NAME "
                    "on the command line, measured on the engine.")
        plots.show(figures.decoder_context("loss", batch, log), "memory_decoders_loss")
        plots.show(figures.decoder_context("kv_cache", batch, log), "memory_decoders_kv")
        tables.csv_button(data.decoder_context(batch), "decoder-logits-kv-cache.csv", key="decoders_csv")
        st.subheader("Serving their weights: int8 and int4 as torchao stores them")
        st.caption("Every decoder preset's weights at rest (scales and zero points counted, the rest in bfloat16), with "
                   "its causal LM's output projection where it is trained as one, against the rule of parameters ÷ 1 "
                   "byte for int8. A tied output projection is an nn.Linear of its own to torchao: quantized, it is a "
                   "copy beside the token table, which stays in bfloat16, so a small model with a large vocabulary "
                   "holds more at int8 than at bfloat16; GPT-2's Conv1D projections are not quantized at all; "
                   "torchao's CPU int4 keeps one value per byte. The command line: memory --preset NAME --serve int8.")
        tables.show(data.decoder_serving(), "decoder_serving", file_name="decoder-serving.csv",
                    readable={"bfloat16": "bytes", "int8": "bytes", "int4": "bytes", "int8_rule": "bytes"})
    else:
        st.header(f"Serving sizes: {md(cfg.name)}")
        st.markdown("The weights at rest in each format, as torchao stores them (scales and zero points counted; "
                    "biases, LayerNorms and, unless quantized, the embedding tables kept in bfloat16), against the "
                    "usual rule of parameters × 4 bytes ÷ 1, 2, 4, 8. For the sidebar config with the task head "
                    "chosen under Fine-tuning on the training tab.")
        e1, e2, e3 = st.columns(3)
        with e1:
            fmt = controls.select("serve_format", "Format described below")
        with e2:
            group = controls.number("group_size", "int4 group size", help="Values per scale and zero point along "
                                    "each weight's input width K; it must divide K (torchao asserts it).")
        with e3:
            emb = controls.toggle("serve_embeddings", "Quantize the embedding tables too")
        c_ = state.controls()
        table = data.serving_table(cfg, group, emb, c_["head"], c_["num_labels"])
        st.caption(f"{md(cfg.name)}, head {c_['head']}{':' + str(c_['num_labels']) if c_['head'] in ('classification', 'token') else ''}, "
                   f"group size {group:,}, embeddings {'quantized' if emb else 'kept in bfloat16'}; vs_approx: the "
                   "bytes at rest ÷ the rule's.")
        order = ["format", "weights", "approx", "vs_approx", "dtype", "kept", "quantized_values", "scales",
                 "zero_points", "buildable_on_cpu", "error", "layout"]  # the answer and the rule first, on a phone too
        tables.show(table[order], "serving_table", file_name="serving-sizes.csv",
                    readable={"weights": "bytes", "approx": "bytes", "kept": "bytes", "scales": "bytes"})
        for line in data.serving_inversions(table):  # whatever format is picked below
            st.caption(md(line))
        row = table[table["format"] == fmt]
        if len(row):
            r = row.iloc[0]
            if r["error"]:
                st.warning(md(r["error"]))
            else:
                built = "built and measured on the CPU in the tests" if r["buildable_on_cpu"] else \
                    "not buildable on the CPU in torchao 0.18: the layout's arithmetic"
                st.info(f"**{md(fmt)}**: {format_bytes(int(r['weights']))} at rest against the rule's "
                        f"{format_bytes(int(r['approx']))} ({r['vs_approx']:.2f}×); {md(r['layout'])} ({built}).")
far = [c for c in cfgs if c.max_position > 131_072]
if far:
    st.info("max_position beyond 131,072 for " + ", ".join(md(c.name) for c in far) + ": far past any BERT or "
            "ALBERT that was trained (512); the numbers are what such a model would need, not a recommendation.")
