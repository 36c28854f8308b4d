"""Verify: build the selected config in PyTorch, count and measure, and show it beside the estimate.

torch runs only in a separate process per press (albert_core.worker, queued by ui/jobs.py): this
page gets plain numbers back, and the server's memory returns to where it was.
"""

import streamlit as st

from ui.legacy import through_app

through_app()  # a deep link before app.py ever ran in this process: hand the run over to it

import pandas as pd

from albert_core import worker  # no torch: every build runs in a separate process (ui/jobs.py)
from albert_core.hf import hf_built_config, hf_expressible
from albert_core.params import count_parameters
from albert_core.units import format_bytes
from ui import controls, jobs, state, tables
from ui.text import file_stem, md

SOURCES = {"reference": "reference encoder (any sharing)", "hf": "Hugging Face BertModel / AlbertModel"}

cfg = state.config()
st.title("Verify in PyTorch")
st.markdown(
    f"Build **{md(cfg.name)}** (the sidebar config) as a real PyTorch model, count its parameters on the meta "
    "device (no memory, any size), and measure the activation memory of one training-mode forward on this "
    "server's CPU: the bytes of every tensor autograd saves for backward. Beside each: albert_core's estimate."
)
c1, c2, c3 = st.columns(3)
with c1:
    source = controls.select("source", "Model", fmt=SOURCES.get)
with c2:
    batch = controls.number("verify_batch", "Batch size", help="Small: the model really runs here.")
with c3:
    seq = controls.number("verify_seq_len", "Sequence length (tokens)", step=16,
                          help=f"At most max_position ({cfg.max_position:,}).")
c4, c5, c6 = st.columns(3)
with c4:
    dtype = controls.select("dtype", "dtype")
with c5:
    attention = controls.select("attention", "Attention")
with c6:
    checkpointing = controls.toggle("checkpointing", "Gradient checkpointing")

run_key = (cfg, source, batch, seq, dtype, attention, checkpointing)
JOB, RESULT = "_ae_verify_job", "_ae_verify"  # session: (run_key, plan, runner Job) while pending; the result
if st.button("Build, count and measure", type="primary", key="verify_run"):
    request = {"config": cfg.to_dict(), "source": source, "batch_size": batch, "seq_len": seq, "dtype": dtype,
               "attention": attention, "checkpointing": checkpointing}
    if JOB in st.session_state:  # one job per session: a new press replaces the pending one
        jobs.cancel(st.session_state.pop(JOB)[2], "Replaced by a newer request.")
    plan = worker.plan(request, jobs.budget_bytes())  # no torch here: refusals need no process
    st.session_state.pop(RESULT, None)
    if plan["count"] or plan["measure"]:
        st.session_state[JOB] = (run_key, plan, jobs.submit(request | {"count": plan["count"],
                                                                       "measure": plan["measure"]}))
    else:
        st.session_state[RESULT] = {"key": run_key, **plan}

if JOB in st.session_state:
    key, plan, job = st.session_state[JOB]
    jobs.follow(job)  # waits here, showing the queue place, until the build process ends
    if job.finished:
        del st.session_state[JOB]
        st.session_state[RESULT] = {"key": key, **plan, **(job.result or {}),
                                    **({"job_error": job.message} if job.state != "done" else {})}


def show_count(result: dict) -> None:
    st.header("Parameters")
    expected = count_parameters(cfg).total
    note = ""
    if source == "hf" and not hf_expressible(cfg):
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
    if result["built"] == expected:
        st.success("The PyTorch model has exactly the parameters albert_core counts.")
    else:
        st.error("The counts differ.")


def show_measurement(result: dict) -> None:
    st.header("Activation memory")
    if "measurement" not in result:
        reason = result.get("measure_error") or result.get("job_error") or "the build process gave no measurement"
        st.error(f"Not measured: {md(reason)}")
        return
    m = result["measurement"]
    a1, a2, a3 = st.columns(3)
    a1.metric("Estimated (albert_core, CPU)", format_bytes(m["estimate"]), help=f"{m['estimate']:,} bytes")
    a2.metric("Measured (saved tensors)", format_bytes(m["total"]), help=f"{m['total']:,} bytes")
    a3.metric("Estimate error", f"{100 * m['error']:+.2f}%")
    st.caption(f"{m['kind']}, batch {m['batch_size']}, seq_len {m['seq_len']}, {m['dtype']}, {m['attention']} "
               "attention" + (", checkpointing" if m["checkpointing"] else "") + ". Exact bytes: estimated "
               f"{m['estimate']:,}, measured {m['total']:,}.")
    tables.show(pd.DataFrame.from_records(m["breakdown"]), "verify_breakdown",
                file_name=f"{file_stem(cfg.name)}-measured.csv", readable={"bytes": "bytes"})
    if "peak_rss" in result and "estimate" in result:
        st.caption(f"The build process peaked at {format_bytes(result['peak_rss'])} resident; estimated before "
                   f"building: {format_bytes(result['estimate']['total'])} (this server allows "
                   f"{format_bytes(jobs.budget_bytes())} per build).")


result = st.session_state.get(RESULT)
if result is None or result["key"] != run_key:
    st.info("Press the button to build the model: parameter counts take a moment at any size; the measurement "
            "is refused, with the reason, when the model or its activations are too big for this server.")
else:
    show_count(result)
    show_measurement(result)
