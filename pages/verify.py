"""Verify: build the selected config in PyTorch, count and measure it on the engine, beside the estimate.

torch runs only in a separate process (albert_core.processes.child_request, queued by ui/jobs.py: the warm measurement process
for fake tensors, a fresh one per press for real tensors): this page gets plain numbers back, and the server's
memory returns to where it was.
"""

import streamlit as st

from ui.legacy import through_app

through_app()  # a deep link before app.py ever ran in this process: hand the run over to it

import pandas as pd

from albert_core.engine.measure import (
    default_kind,
    device_differences,
    modelled_step,
    planner_peaks,
    step_estimate,
    step_rows,
)
from albert_core.engine.types import Request
from albert_core.estimate.params import count_parameters
from albert_core.formats.hf import hf_built_config, hf_expressible
from albert_core.processes import parent_plan  # no torch: every build runs in a separate process (ui/jobs.py)
from albert_core.step.training import PRECISION_LABELS
from albert_core.units import format_bytes
from albert_core.workload import Workload
from ui import controls, jobs, state, tables
from ui import finetune as ft_ui
from ui.text import file_stem, gap_words, md
from ui.verify_other import other_encoder

SOURCES = {"auto": "automatic (Hugging Face's where it can)", "hf": "Hugging Face's model (AutoModel)",
           "reference": "reference encoder (BERT/ALBERT, any sharing)"}
PHASE_NOTE = {"forward": "in the forward", "backward": "in backward", "optimizer step": "in the optimizer step"}

cfg = state.config()
shown = state.shown_name(cfg)  # as every page names it: "albert-base (edited)" for an edited preset
st.title("Verify in PyTorch")
st.markdown(
    f"Build **{md(shown)}** (the sidebar config) as a real PyTorch model and run it: one training forward "
    "(the bytes autograd saves for backward), one full training step (the peak of every live tensor: weights, "
    "gradients, optimizer state, activations, temporaries) and one eval forward. By default on **fake tensors**: "
    "PyTorch's own ops and autograd with shapes but no storage, so real sizes are measured in a small process. "
    "Beside each number: albert_core's estimate."
)
c1, c2, c3 = st.columns(3)
with c1:
    source_choice = controls.select("source", "Model", fmt=SOURCES.get)
with c2:
    batch = controls.number("verify_batch", "Batch size")
with c3:
    seq = controls.number("verify_seq_len", "Sequence length (tokens)", step=16,
                          help=f"At most max_position ({cfg.max_position:,}).")
if seq > cfg.max_position:  # said now, as Compute says it, not only once Build is pressed
    st.warning(f"Sequence length {seq:,} is past {md(shown)}'s max_position ({cfg.max_position:,}): the model cannot "
               f"embed position {cfg.max_position:,} or later, and Build will refuse it. Lower it to at most "
               f"{cfg.max_position:,}, or raise max_position in the sidebar's Model fields.")
c4, c5, c6 = st.columns(3)
with c4:  # Memory's and Fit's own control (key "precision"), so a link from their numbers measures the same step
    dtype = controls.select("precision", "Precision", fmt=lambda p: PRECISION_LABELS[p],
                            help="The precision Memory's training tab and the Fit planner plan with, run here as "
                                 "they count it: mixed is torch.autocast over float32 weights; + float32 master "
                                 "copy: 16-bit weights, the optimizer over float32 copies.")
with c5:
    attention = controls.select("attention", "Attention")
with c6:
    optimizer = controls.select("optimizer", "Optimizer (training step)")
c7, c8 = st.columns(2)
with c7:
    checkpointing = controls.toggle("checkpointing", "Gradient checkpointing")
with c8:
    real = controls.toggle("verify_real", "Real tensors", help="Allocate every tensor on this server's CPU "
                           "(proves the fake-tensor engine; limited by this server's memory).")
view_w, _ = ft_ui.expander((cfg,), "verify")  # the fine-tuning controls of Memory and Fit (a link carries them)
tuned = ft_ui.workload_for(cfg, view_w)  # frozen-layers:k with k at most this config's layers
fine = tuned.mode != "full" or tuned.head != "none"
ft_text = ft_ui.settings_for(tuned).fine_tuning()
if fine:  # a task model or peft's LoRA: Hugging Face's (engine.task_model.build), unless the reference encoder is asked for
    source = "reference" if source_choice == "reference" else "hf"
else:
    source = default_kind(cfg, checkpointing) if source_choice == "auto" else source_choice
if source_choice == "auto":
    why = ("the fine-tuned task model" if fine else "Hugging Face's model cannot build this"
           if source == "reference" else f"family {md(cfg.family)}")
    st.caption(f"Model: {SOURCES[source]} ({why}).")

# the step this page runs: on this server's CPU (its optimizer's for-loop, torch.optim's CPU default)
workload = tuned.replace(batch_size=batch, seq_len=seq, precision=dtype, attention=attention,
                         checkpointing=checkpointing, device="cpu", optimizer=optimizer)
run_key = (cfg, source, workload, real)
JOB, RESULT = "_ae_verify_job", "_ae_verify"  # session: (run_key, plan, runner Job) while pending; the result
for note in jobs.runtime_notes():  # another torch/transformers release; the CUDA build without a GPU: said once
    st.info(note, icon=":material/memory:")
if st.button("Build, count and measure", type="primary", key="verify_run"):
    # the config under the name every page shows ("albert-base (edited)"): the process's words and refusals name it
    request = Request(workload, config=cfg.replace(name=shown), source=source, real=real)
    plan = parent_plan.plan(request, jobs.budget_bytes(), jobs.imports_bytes())  # no torch here: refusals need no process
    st.session_state.pop(RESULT, None)
    if plan.count or plan.measure:  # one job per session: a new press replaces the pending one
        jobs.start(JOB, run_key, plan.shown(), request.replace(count=plan.count, measure=plan.measure))
    else:
        st.session_state[RESULT] = {"key": run_key, **plan.shown()}

done = jobs.collect(JOB, "verify_cancel")
if done:
    st.session_state[RESULT] = {"key": done[0], **done[1]}  # drawn below, in this run


def show_count(result: dict) -> None:
    st.header("Parameters")
    expected = count_parameters(cfg).total
    note = ""
    tr = ft_ui.trainable_of(cfg, tuned) if fine and "trainable_built" in result else None
    if tr is not None:
        expected = tr.total  # the task model: the head, and LoRA's adapters, counted as peft counts them
        note = (f"{md(ft_text)}: trainable {tr.trainable:,} counted by albert_core, {result['trainable_built']:,} "
                f"built (requires_grad, as peft's get_nb_trainable_parameters counts); frozen {tr.frozen:,}.")
    elif source == "hf" and not hf_expressible(cfg):
        expected = count_parameters(hf_built_config(cfg)).total  # the layout Hugging Face builds
        model = "BertModel" if cfg.family == "bert" else "AlbertModel"
        note = (f"Hugging Face's {model} cannot express sharing '{cfg.sharing}' (num_groups {cfg.num_groups}, "
                f"inner_group_num {cfg.inner_group_num}): it builds the layout of to_hf_config, whose count "
                f"albert_core gives as {expected:,} (this config itself: {count_parameters(cfg).total:,}).")
    if "count_error" in result or "built" not in result:
        st.error(md(result.get("count_error") or result.get("job_error") or "The build process gave no count."))
        return
    m1, m2, m3 = st.columns(3)
    m1.metric("Estimated (albert_core)", f"{expected:,}")
    m2.metric("Built in PyTorch", f"{result['built']:,}")
    m3.metric("Difference", f"{result['built'] - expected:,}")
    if note:
        st.caption(note)
    if result["built"] == expected and (tr is None or result["trainable_built"] == tr.trainable):
        st.success("The PyTorch model has exactly the parameters albert_core counts"
                   + (", the trainable ones too." if tr is not None else "."))
    elif tr is not None:
        st.error(f"The counts differ: built {result['built']:,} ({result['trainable_built']:,} trainable), albert_core "
                 f"{tr.total:,} ({tr.trainable:,} trainable).")
    else:
        st.error("The counts differ, here (component, albert_core's count, what PyTorch built, its modules):")
        tables.show(pd.DataFrame.from_records(result.get("count_diff") or []), "verify_count_diff",
                    file_name=f"{file_stem(shown)}-count-difference.csv")


def settings_line(m: dict) -> str:
    how = "fake tensors" if m.get("fake", True) else "real tensors"
    return (f"{m['kind']} model, batch {m['batch_size']}, seq_len {m['seq_len']:,}, {m['dtype']}, {m['attention']} "
            "attention" + (", checkpointing" if m["checkpointing"] else "") + f", {md(ft_text)}, {how}")


def show_activations(result: dict) -> None:
    st.header("Activation memory (one training forward)")
    m = result["measurement"]
    cuda = m.get("estimate_cuda")
    a1, a2, a3, a4 = st.columns(4)
    a2.metric("Measured (saved tensors)", format_bytes(m["total"]), help=f"{m['total']:,} bytes")
    if m["estimate"] is None:  # a fine-tuned task model: frozen parts, heads and adapters have no closed form
        a1.metric("Estimated (albert_core, CPU)", "no closed form", help="albert_core's activation replay models "
                  "the base model; a fine-tuned model's saved tensors are measured only (its step peak is modelled "
                  "below).")
        st.caption(f"{settings_line(m)}. Exact bytes measured: {m['total']:,}.")
    else:
        a1.metric("Estimated (albert_core, CPU)", format_bytes(m["estimate"]), help=f"{m['estimate']:,} bytes")
        a3.metric("Estimate error", f"{100 * m['error']:+.2f}%")
        if cuda is not None:
            a4.metric("Estimated for CUDA", format_bytes(cuda), help=f"{cuda:,} bytes, as the Memory page counts them")
        st.caption(f"{settings_line(m)}. Exact bytes: estimated {m['estimate']:,}, measured {m['total']:,}"
                   + (f", for CUDA {cuda:,}." if cuda is not None else "."))
        if cuda is not None:
            st.caption(device_note(cuda, m["estimate"], device_differences(
                cfg, precision=m["dtype"], attention=m["attention"]), "activations"))
    tables.show(pd.DataFrame.from_records(m["breakdown"]), "verify_breakdown",
                file_name=f"{file_stem(shown)}-measured.csv", readable={"bytes": "bytes"})


def device_note(cuda: int, cpu: int, reasons: list[str], what: str) -> str:
    """One line: albert_core's CUDA figure beside its CPU one, and why they differ (measure.device_differences)."""
    if cuda == cpu:
        return f"For CUDA (what Memory and Fit show) albert_core gives the same {what}, to the byte."
    why = "; ".join(reasons) if reasons else "the kernels' saved tensors differ"
    return (f"For CUDA (what Memory and Fit show) albert_core gives {what} of {format_bytes(cuda)}, for the CPU "
            f"measured here {format_bytes(cpu)} ({cuda - cpu:+,} bytes). Why they differ: {why}. CUDA's figures "
            "follow PyTorch's sources; the engine here runs the CPU's kernels.")


def show_step(result: dict) -> None:
    st.header("Training step peak")
    s, m = result["step"], result["measurement"]
    w = tuned.replace(batch_size=m["batch_size"], seq_len=m["seq_len"], precision=m["dtype"], optimizer=s["optimizer"],
                      attention=m["attention"], checkpointing=m["checkpointing"], device="cpu")  # the step measured
    est = None if fine else step_estimate(cfg, w)
    modelled = modelled_step(cfg, m["kind"], w)
    p1, p2, p3 = st.columns(3)
    p1.metric("Measured peak", format_bytes(s["peak"]), help=f"{s['peak']:,} bytes")
    p2.metric("When", s["phase"], help=f"innermost module: {s['module'] or '(none)'}")
    if modelled is not None:
        gap = modelled.peak - s["peak"]  # equal to the byte: said in words, with no arrow (not "↑ +0.00%")
        p3.metric("albert_core's modelled peak", format_bytes(modelled.peak),
                  gap_words(gap, s["peak"]) + f", {modelled.phase}",
                  delta_color="off", delta_arrow="auto" if gap else "off",
                  help=f"{modelled.peak:,} bytes at {modelled.moment}")
    st.caption(f"{settings_line(m)}, {s['optimizer']}: training step 2, every live tensor counted once; the peak "
               f"comes {PHASE_NOTE.get(s['phase'], s['phase'])}.")
    if modelled is None:  # modelled_step: the reference encoder's step (a column of None in the table before)
        st.caption("No modelled peak beside it: albert_core.step.peak replays Hugging Face's modules, and this step "
                   "ran on the reference encoder. The planner's figures below are what Memory and Fit plan for this "
                   "config.")
    with st.expander("How the step is measured and modelled", icon=":material/info:"):
        st.markdown(
            "The step: forward, loss, backward, optimizer.step(), its second run (the optimizer state exists). "
            + (("The modelled peak (albert_core.step.peak) replays it op by op: the forward's moments, the backward on "
                "the recorded autograd graph (checkpointing's recomputation included) and the optimizer's "
                "temporaries. " if modelled.activations_exact else
                "The modelled peak (albert_core.step.peak) does not replay this setup (peft's LoRA on an embedding "
                "other than the word embeddings: position, token type, relative): it is the largest of moments "
                "the step passes through, a lower bound. ") if modelled is not None else "")
            + ("The sum of parts (albert_core's training memory: weights, gradients, optimizer state and every "
               f"saved activation) is {format_bytes(est.total)}: the real step frees activations in backward while "
               "gradients appear." if est is not None else
               "No sum of parts beside it: a fine-tuned model's saved tensors have no closed form."))
    show_planner(w)
    tables.show(pd.DataFrame.from_records(step_rows(s, est, modelled)), "verify_step",
                file_name=f"{file_stem(shown)}-training-step.csv",
                readable={"at peak": "bytes", "at step start": "bytes", "albert_core (modelled peak)": "bytes",
                          "albert_core (sum of parts)": "bytes"})


def show_planner(w: Workload) -> None:
    """What Memory's training tab and the Fit planner decide on for this step (one GPU, CUDA), beside the same
    step modelled for the CPU's kernels, which is what this server measures."""
    try:
        plan = planner_peaks(cfg, w)
    except ValueError as e:  # a precision the planner does not model
        st.caption(f"No planner figure beside it: {md(str(e))}.")
        return
    cuda, cpu = plan["cuda"], plan["cpu"]
    q1, q2, _ = st.columns(3)
    q1.metric("Planner's peak, CUDA (Memory, Fit)", format_bytes(cuda.planned), help=f"{cuda.planned:,} bytes")
    q2.metric("Planner's peak, CPU kernels", format_bytes(cpu.planned), help=f"{cpu.planned:,} bytes, the same "
              "step for the kernels this server measures")
    st.caption(f"The planner on one GPU, unsharded: CUDA {cuda.planned:,} bytes in the {cuda.peak_phase or 'sum'} "
               f"({md(cuda.peak_is)}); CPU {cpu.planned:,} bytes in the {cpu.peak_phase or 'sum'} ({md(cpu.peak_is)}).")
    if cuda.planned != cpu.planned:
        st.caption(device_note(cuda.planned, cpu.planned, device_differences(
            cfg, precision=w.precision, attention=w.attention, step=True, replayed_on_cuda=cuda.peak_replayed),
            "step peak"))


def show_measurement(result: dict) -> None:
    if "measurement" not in result:
        st.header("Memory")
        reason = result.get("measure_error") or result.get("job_error") or "the build process gave no measurement"
        if seq > cfg.max_position and f"max_position ({cfg.max_position})" in reason:
            # the warning under the controls said so before the press: a second alert saying it again is not needed
            st.caption(f"Not measured: sequence length {seq:,} is past max_position ({cfg.max_position:,}), as "
                       "the warning above says.")
        else:
            st.error(f"Not measured: {md(reason)}")
        return
    show_activations(result)
    if "step" in result:
        show_step(result)
    if "inference" in result:
        inf = result["inference"]
        st.caption(f"Eval forward (no_grad): peak of live tensors {format_bytes(inf['total'])} measured, "
                   f"{format_bytes(inf['estimate'])} estimated ({inf['total']:,} and {inf['estimate']:,} bytes).")
    if "peak_rss" in result and "estimate" in result:
        proc = result.get("process") or {}
        where = (f" (the warm measurement process, its build {proc['build']:,}: PyTorch imported once)"
                 if proc.get("warm") else "")
        st.caption(f"Measured on {result.get('how', 'fake tensors')}. The build process peaked at "
                   f"{format_bytes(result['peak_rss'])} resident{where}; estimated before building: "
                   f"{format_bytes(result['estimate']['total'])} (this server allows "
                   f"{format_bytes(jobs.budget_bytes())} per build: {jobs.budget_source()}).")


result = st.session_state.get(RESULT)
if result is None or result["key"] != run_key:
    st.info("Press the button to build and measure the model. On fake tensors any size is measured in a small "
            "process; on real tensors the measurement is refused, with the reason, when the model is too big "
            "for this server.")
else:
    if result.get("process_note"):
        st.caption(md(result["process_note"]))  # a new measurement process was started for it, and why
    if result.get("served_again"):
        st.caption(jobs.served_again(result["served_again"]))
    show_count(result)
    show_measurement(result)

other_encoder()
