"""Compute: sharing stores fewer parameters, but every layer still runs."""

import streamlit as st

from ui.legacy import through_app

through_app()  # a deep link before app.py ever ran in this process: hand the run over to it

from ui import controls, data, figures, paper, plots, sections, state, tables
from ui.text import clipped_note

st.title("Fewer parameters, more compute")
st.markdown(
    "Sharing cuts what is **stored**, not what is **run**: ALBERT applies its shared layer num_layers times, "
    "and each application costs the same matmuls as a BERT layer of the same width. ALBERT-xxlarge "
    "(H = 4096) stores fewer parameters than BERT-large yet costs several times its compute. FLOPs: matmuls "
    "only, 2 per multiply-add (Kaplan et al. 2020); a training step is 3 × the forward. Add presets to the "
    "comparison in the sidebar to see them here."
)
cfgs = tuple(state.shown_configs())
longest = max(c.max_position for c in cfgs)
seq_len = controls.number("flops_seq_len", "Sequence length (tokens)", step=64,
                          help=f"Up to the longest max_position shown ({longest:,}); a config with a shorter "
                               "max_position is counted at its own max_position.")
asked = seq_len  # the decoders tab counts its own presets, each up to its own max_position
# only the open tab runs and is sent: the first visit draws the scatter alone (docs/benchmarks.md, "Speed in the browser")
tab, body = sections.lazy_tabs("compute_tab", {"scatter": "Parameters against FLOPs", "table": "Table and CSV",
                                               "breakdown": "Where the forward FLOPs go",
                                               "paper": "The paper's speedups", "decoders": "The small decoders"})
with body:
    if seq_len > longest and tab != "decoders":
        st.warning(f"seq_len {seq_len:,} exceeds the max_position of every shown config (longest {longest:,}); "
                   f"showing seq_len {longest:,}.")
    seq_len = min(seq_len, longest)
    if tab != "decoders" and (note := clipped_note(cfgs, seq_len, "Counted")):  # at most the longest: some, never all
        st.info(note)
fig, table, parts = figures.compute_scatter(cfgs, seq_len)
with body:
    if tab == "scatter":
        plots.show(fig, "compute_scatter")
    elif tab == "table":
        tables.show(table, "compute_table", file_name="compute.csv",
                    readable={"params": "count", "forward_flops": "flops", "training_flops": "flops"})
    elif tab == "paper":
        st.header("The paper's measured speedups against FLOPs")
        paper.compute()
    elif tab == "decoders":
        st.header("The small decoders: where their forward FLOPs go")
        st.markdown("albert_core.decoders' presets at the sequence length above: the LM head projects every position "
                    "onto the vocabulary, so a large vocabulary costs compute as well as parameters.")
        view = controls.radio("flops_view", "Bars", fmt={"flops": "FLOPs", "shares": "shares of each forward (%)"}.get)
        plots.show(figures.decoder_breakdown(asked, view == "shares"), "compute_decoders")
        dec_table, dec_parts = data.decoder_flops(asked)
        tables.show(dec_table, "compute_decoder_table", file_name="decoder-flops.csv",
                    readable={"params": "count", "forward_flops": "flops", "training_flops": "flops"},
                    pct=("lm_head_pct",))
        tables.csv_button(dec_parts, "decoder-flops-breakdown.csv", key="decoder_flops_csv")
    else:
        st.header("Where the forward FLOPs go")
        st.markdown("The attention-score and attention-×-V parts grow with seq_len²; the projections and FFN grow "
                    "with seq_len.")
        view = controls.radio("flops_view", "Bars", fmt={"flops": "FLOPs", "shares": "shares of each forward (%)"}.get,
                              help="Shares put every config's bar at 100%: a small config beside a large one reads "
                                   "as clearly.")
        plots.show(figures.compute_breakdown(cfgs, seq_len, view == "shares"), "compute_breakdown")
        tables.csv_button(parts, "flops-breakdown.csv", key="flops_breakdown_csv")
