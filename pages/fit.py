"""Fit planner: the largest batch and the longest sequence per config on the chosen GPUs."""

import streamlit as st

from ui.legacy import through_app

through_app()  # a deep link before app.py ever ran in this process: hand the run over to it

from albert_core.estimate.gpus import precision_note
from albert_core.step.training import PRECISION_LABELS, is_lower_bound
from albert_core.units import format_bytes, format_count
from ui import controls, data, figures, plots, sections, state, tables, url
from ui import finetune as ft_ui
from ui.text import attention_note, clipped_note, md

cfgs = tuple(state.shown_configs())
st.title("Fit planner")
st.markdown("For each config: the **largest micro-batch** per GPU at the sequence length, and the **longest "
            "sequence** at the batch size (max_position raised with it). What must fit is the training step's "
            "**peak**, the most bytes alive at one moment, not the sum of its parts.")
with st.expander("How the plan is made", icon=":material/info:"):
    st.markdown("- ZeRO-1/2/3 partition the optimizer state, then the gradients, then the weights over the GPUs "
                "(FSDP ≈ ZeRO-3); activations are never partitioned.\n"
                "- Planned for CUDA: exact at the step's start and in the optimizer step (torch.optim's foreach "
                "path, CUDA's default); **at least** in the forward and backward, whose working set inside a layer "
                "is replayed op by op only for the CPU's kernels.\n"
                "- Verify measures that step on this server. The table's max_seq_len keeps to the config's own "
                "max_position.")
c1, c2, c3 = st.columns(3)
with c1:
    gpu = controls.select("gpu", "GPU")
with c2:
    num_gpus = controls.number("num_gpus", "Number of GPUs")
with c3:
    sharding = controls.select("sharding", "Sharding", help="none: every GPU holds everything (data parallel).")
c4, c5, c6, c7 = st.columns(4)
with c4:
    batch = controls.number("batch_size", "Batch size per GPU (sequences)")
with c5:
    seq_len = controls.number("seq_len", "Sequence length (tokens)", step=128,
                              help="Clipped to each config's max_position.")
with c6:
    precision = controls.select("precision", "Precision", fmt=lambda p: PRECISION_LABELS[p])  # as Memory and Verify
with c7:
    optimizer = controls.select("optimizer", "Optimizer")
c8, c9 = st.columns(2)
with c8:
    attention = controls.select("attention", "Attention")
with c9:
    checkpointing = controls.toggle("checkpointing", "Gradient checkpointing")
if sharding != "none" and num_gpus == 1:
    st.info("Sharding over a single GPU partitions nothing: planning as 'none'.")
if note := attention_note(cfgs, attention):
    st.caption(note)
if note := precision_note(gpu, precision):
    st.caption(note)
if note := clipped_note(cfgs, seq_len):
    st.info(note)
tuned, cfgs = ft_ui.expander(cfgs, "fit")
# no config the setup can be counted for: the expander said why; the page ends here, without st.stop(), so the
# sidebar (drawn after the page, app.py) and the link still come
if cfgs:
    ctl = dict(state.controls(), checkpointing=checkpointing)
    fig, plan = figures.fit_bars(cfgs, ctl)
    no_fit = [r["config"] for _, r in plan.iterrows() if int(r["max_batch_size"]) == 0]
    if no_fit:
        st.warning(f"Not even one sequence of the chosen length fits for: {', '.join(md(n) for n in no_fit)}. Add GPUs, shard, "
                   "checkpoint, or shorten the sequence.")
    lines = []
    by_name = {c.name: c for c in cfgs}
    w = figures.training_workload(ctl, planner=True)
    for _, r in plan.iterrows():
        verdict = "fits" if r["fits"] else "does **not** fit"
        bound = "at least " if is_lower_bound(str(r["peak_is"])) else ""
        row_w = w.replace(batch_size=int(r["batch_size"]), seq_len=int(r["seq_len"]))  # this number's step
        # a peak above the sum says why: what it holds that no part has (TrainingMemory.beyond_parts)
        held = str(r["beyond_parts"]).split("; ")
        beyond = (f"; the peak also holds what no part has: {md(', '.join(held[:-1]) + ' and ' if held[:-1] else '')}"
                  f"{md(held[-1])}, {format_bytes(int(r['beyond_parts_bytes']))}"
                  if int(r["needed_bytes"]) > int(r["sum_of_parts"]) and r["beyond_parts"] else "")
        lines.append(f"- **{md(r['config'])}**: the step's peak {bound}{format_bytes(int(r['needed_bytes']))} "
                     f"({md(r['peak_phase'])}; the sum of the parts {format_bytes(int(r['sum_of_parts']))}{beyond}) at batch "
                     f"{int(r['batch_size']):,} × {int(r['seq_len']):,} tokens {verdict} in {format_bytes(int(r['gpu_bytes']))}; "
                     f"largest batch {int(r['max_batch_size']):,}; trainable {format_count(int(r['trainable']))} of "
                     f"{format_count(int(r['parameters']))} parameters  \n"
                     # the workload of this number, measured: config, batch, length and every control of the step
                     f"  {url.measure_on_verify(by_name[r['config']], row_w)}"
                     f"{' (one GPU, unsharded)' if num_gpus > 1 and sharding != 'none' else ''}")
    st.markdown("\n".join(lines))
    # only the open tab runs and is sent: the first visit draws the chart alone (docs/benchmarks.md, "Speed in the browser")
    tab, body = sections.lazy_tabs("fit_tab", {"chart": "Chart", "table": "Table and CSV"})
    with body:
        if tab == "chart":
            st.caption("Top: the largest batch at the sequence length (cut to each config's own max_position). "
                       "Bottom: the longest sequence at the batch size, max_position (and the position table) raised "
                       "with it.")
            plots.show(fig, "fit_bars")
        else:
            st.caption("needed_bytes: the training step's peak per GPU (what fits is decided on it); sum_of_parts: "
                       "weights + gradients + optimizer state + master weights + activations, beside it; peak_phase: "
                       "where in the step the peak occurs; peak_is: exact or a lower bound, and why.")
            # the plan's answers first (beside the config, in view on a phone), then the step they were planned for
            shown = plan[["config", "max_batch_size", "max_seq_len", "longest_max_position", "fits", "needed_bytes",
                          "gpu_bytes", "sum_of_parts", "seq_len", "batch_size", "peak_phase", "peak_is", "trainable"]]
            tables.show(shown, "fit_table", file_name="fit-plan.csv",
                        readable={"needed_bytes": "bytes", "sum_of_parts": "bytes", "gpu_bytes": "bytes"})
            st.caption("What trains, counted as peft's get_nb_trainable_parameters counts the task model.")
            tables.show(data.trainable_table(cfgs, tuned), "fit_trainable_table", file_name="trainable-parameters.csv",
                        readable={"trainable": "count", "frozen": "count", "total": "count"}, pct=("trainable_pct",))
