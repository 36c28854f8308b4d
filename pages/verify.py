"""Verify: build the selected config in PyTorch, count and measure, and show it beside the estimate.

The only page that uses torch: albert_core.build and albert_core.measure import it inside the run.
"""

import streamlit as st

from ui.legacy import through_app

through_app()  # a deep link before app.py ever ran in this process: hand the run over to it

from albert_core import build  # no torch until a build function runs
from albert_core.hf import hf_built_config, hf_expressible
from albert_core.params import count_parameters
from albert_core.units import format_bytes
from ui import controls, state, tables
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
if st.button("Build, count and measure", type="primary", key="verify_run"):
    from albert_core import measure  # torch is imported inside its functions, only now

    result: dict = {"key": run_key}
    with st.status("Building the model and running one forward...", expanded=True) as status:
        st.write("Counting parameters on the meta device...")
        built_layers = build.layer_modules(cfg, source)
        if built_layers > build.MAX_BUILD_LAYERS:
            result["count_error"] = (f"Building {md(cfg.name)} creates {built_layers:,} layer modules; this server "
                                     f"builds at most {build.MAX_BUILD_LAYERS:,}. Lower num_layers or share whole layers.")
        else:
            model = (build.reference_model(cfg, device="meta") if source == "reference"
                     else build.hf_model(cfg, device="meta"))
            result["built"] = build.count_built(model)
            del model
        st.write(f"Measuring activation memory at batch {batch}, seq_len {seq} on the CPU...")
        try:
            result["measurement"] = measure.measure_activation_memory(
                cfg, batch_size=batch, seq_len=seq, dtype=dtype, attention=attention, kind=source,
                checkpointing=checkpointing)
        except ValueError as e:
            result["measure_error"] = str(e)
        status.update(label="Done", state="complete", expanded=False)
    st.session_state["_ae_verify"] = result


def show(result: dict) -> None:
    st.header("Parameters")
    expected = count_parameters(cfg).total
    note = ""
    if source == "hf" and not hf_expressible(cfg):
        expected = count_parameters(hf_built_config(cfg)).total  # the layout Hugging Face builds
        model = "BertModel" if cfg.family == "bert" else "AlbertModel"
        note = (f"Hugging Face's {model} cannot express sharing '{cfg.sharing}' (num_groups {cfg.num_groups}, "
                f"inner_group_num {cfg.inner_group_num}): it builds the layout of to_hf_config, whose count "
                f"albert_core gives as {expected:,} (this config itself: {count_parameters(cfg).total:,}).")
    if "count_error" in result:
        st.error(result["count_error"])
    else:
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

    st.header("Activation memory")
    if "measure_error" in result:
        st.error(f"Not measured: {md(result['measure_error'])}")
    else:
        m = result["measurement"]
        a1, a2, a3 = st.columns(3)
        a1.metric("Estimated (albert_core, CPU)", format_bytes(m.estimate), help=f"{m.estimate:,} bytes")
        a2.metric("Measured (saved tensors)", format_bytes(m.total), help=f"{m.total:,} bytes")
        a3.metric("Estimate error", f"{100 * m.error:+.2f}%")
        st.caption(f"{m.kind}, batch {m.batch_size}, seq_len {m.seq_len}, {m.dtype}, {m.attention} attention"
                   + (", checkpointing" if m.checkpointing else "") + ". Exact bytes: estimated "
                   f"{m.estimate:,}, measured {m.total:,}.")
        tables.show(m.breakdown(), "verify_breakdown", file_name=f"{file_stem(cfg.name)}-measured.csv", readable={"bytes": "bytes"})


result = st.session_state.get("_ae_verify")
if result is None or result["key"] != run_key:
    st.info("Press the button to build the model: parameter counts take a moment at any size; the measurement "
            "is refused, with the reason, when the model or its activations are too big for this server.")
else:
    show(result)
