"""Compute: sharing stores fewer parameters, but every layer still runs."""

import streamlit as st

from ui.legacy import through_app

through_app()  # a deep link before app.py ever ran in this process: hand the run over to it

from albert_core.presets import PRESETS
from charts import compute as charts
from ui import controls, data, state, tables

st.title("Fewer parameters, more compute")
st.markdown(
    "Sharing cuts what is **stored**, not what is **run**: ALBERT applies its shared layer num_layers times, "
    "and each application costs the same matmuls as a BERT layer of the same width. ALBERT-xxlarge "
    "(H = 4096) stores fewer parameters than BERT-large yet costs several times its compute. FLOPs: matmuls "
    "only, 2 per multiply-add (Kaplan et al. 2020); a training step is 3 × the forward."
)
shown = state.shown_configs()
cfgs = tuple(shown) + tuple(p for p in PRESETS.values() if p not in shown)  # every preset for context
longest = min(c.max_position for c in cfgs)
seq_len = controls.number("flops_seq_len", "Sequence length (tokens)", step=64,
                          help=f"Must not exceed any shown config's max_position ({longest:,}).")
if seq_len > longest:
    st.warning(f"seq_len {seq_len:,} exceeds the max_position of a shown config ({longest:,}); "
               f"showing seq_len {longest:,}.")
    seq_len = longest
table, parts = data.compute_table(cfgs, seq_len)
st.plotly_chart(charts.flops_vs_params(table, seq_len), key="compute_scatter", width="stretch")
tables.show(table, "compute_table", file_name="compute.csv",
            readable={"params": "count", "forward_flops": "flops", "training_flops": "flops"})
st.header("Where the forward FLOPs go")
st.markdown("The attention-score and attention-×-V parts grow with seq_len²; the projections and FFN grow "
            "with seq_len.")
st.plotly_chart(charts.flops_breakdown(parts, seq_len), key="compute_breakdown", width="stretch")
tables.csv_button(parts, "flops-breakdown.csv", key="flops_breakdown_csv")
