"""Parameters: where they sit, how the shares move, and what factorization and sharing save."""

import streamlit as st

from ui.legacy import through_app

through_app()  # a deep link before app.py ever ran in this process: hand the run over to it

from ui import controls, cuts, data, figures, paper, plots, sections, state, tables
from ui.text import file_stem, md

cfgs = tuple(state.shown_configs())
cfg = cfgs[0]

st.title("Where the parameters go")
st.markdown("Embedding, layers and pooler for each config (sidebar config first, then the compared ones): the "
            "shares on the left, the counts on the right. Hover a bar for the exact count; click a legend entry to "
            "hide it. The other tabs: the table, the fine breakdown, the sweeps, the sharing modes, ALBERT's cuts, "
            "and those cuts for the small decoders.")
# only the open tab runs and is sent: the first visit draws the two charts alone (docs/benchmarks.md, "Speed in the browser")
tab, body = sections.lazy_tabs("parameters_tab", {
    "shares": "Shares and counts", "table": "Table and CSV", "breakdown": "Fine breakdown",
    "sweep": "How the shares move", "factorization": "Factorization", "sharing": "Sharing modes",
    "cuts": "ALBERT's two cuts", "decoders": "The small decoders"})
with body:
    if tab == "shares":
        left, right = st.columns(2)
        plots.show(figures.params_shares(cfgs), "params_shares", where=left, share=0.5)
        plots.show(figures.params_counts(cfgs), "params_components", where=right, share=0.5)
    elif tab == "table":
        table = data.params_table(cfgs)
        tables.show(table, "params_table", file_name="parameters.csv",
                    readable={"total": "count", "embedding": "count", "per_layer": "count", "all_layers": "count"},
                    pct=("embedding_pct", "layers_pct", "pooler_pct"))
    elif tab == "breakdown":
        st.header("The fine breakdown")
        st.markdown(f"Every weight-and-bias group of **{md(cfg.name)}** (the sidebar config). A shared tensor is "
                    "stored once per group; click a ring to zoom in.")
        left, right = st.columns([3, 2])
        bd = data.breakdown(cfg)
        plots.show(figures.params_sunburst(cfg), "params_sunburst", where=left, share=0.6)  # st.columns([3, 2])
        with right:
            tables.show(bd, "breakdown_table", file_name=f"{file_stem(cfg.name)}-breakdown.csv",
                        readable={"params": "count"}, pct=("pct",))
    elif tab == "sweep":
        st.header("How the shares move")
        field = controls.radio("sweep", "Vary", help="The other fields stay as in each config; for hidden_dim the "
                               "FFN keeps its ratio to H and the head width stays fixed.")
        scale = controls.radio("params_scale", "Axis scale")
        sweep = data.share_sweep(cfgs, field)
        plots.show(figures.params_share_sweep(cfgs, field, scale == "log"), "params_share_sweep")
        tables.csv_button(sweep, f"share-vs-{field}.csv", key="share_sweep_csv")
        paper.depth_width(cfgs, field)
    elif tab == "factorization":
        st.header("What the factorization saves")
        st.markdown("ALBERT replaces the V×H embedding with V×E + E×H. The Language AI Handbook's ALBERT chapter (Key "
                    "Parameters) calls E between 64 and 256 a reasonable starting point (shaded); ALBERT uses 128. "
                    "Dashed: the unfactorized embedding of the same config.")
        fact = data.factorization_sweep(cfgs)
        plots.show(figures.params_factorization(cfgs), "params_factorization")
        tables.csv_button(fact, "factorization.csv", key="factorization_csv")
        paper.factorization(cfgs)
    elif tab == "sharing":
        st.header("The four sharing modes")
        st.markdown("none: every layer owns its weights (BERT). attention / ffn: the layers of a group share only "
                    "that sublayer. all: whole layers are shared (ALBERT's default).")
        sharing = data.sharing_table(cfgs)
        scale = controls.radio("sharing_scale", "Axis scale", help="A log axis keeps small configs readable beside "
                               "a large one (albert-xxlarge not shared: 2.4B).")
        plots.show(figures.params_sharing(cfgs, scale == "log"), "params_sharing")
        tables.show(sharing, "sharing_table", file_name="sharing-modes.csv",
                    readable={"total": "count", "all_layers": "count"})
        paper.sharing(cfgs)
    elif tab == "cuts":  # ALBERT's two cuts for the sidebar config, any family
        cuts.section(cfg)
    else:  # the same cuts for albert_core's decoder presets
        cuts.decoder_section()
