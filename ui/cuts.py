"""The Parameters page's section "ALBERT's two cuts for this model": any family, factorized at E and shared."""

from __future__ import annotations

import streamlit as st

from albert_core.config import ModelConfig
from charts.cuts import cuts_bars

from . import controls, data, plots, tables
from .text import file_stem, md


def section(cfg: ModelConfig) -> None:
    """Header, the E control, the bars and the table for the sidebar config."""
    st.header("ALBERT's two cuts for this model")
    st.markdown(f"What **{md(cfg.name)}** ({md(cfg.family)}) stores now, and what it would store with ALBERT's "
                "factorized embedding (its token, position and segment tables E wide, then a projection E→H) "
                "and with its layers shared: the attention, the FFN, or whole layers stored once. The largest "
                "vocabularies gain most from the first cut; deep models from the second.")
    left, _ = st.columns([1, 3])
    e = controls.number("cuts_e", "Factorized embedding width E", step=16, where=left,
                        help="ALBERT uses 128; E above hidden_dim costs parameters instead of saving them.")
    df = data.albert_cuts(cfg, e)
    plots.show(cuts_bars(df), "params_cuts", "ALBERT's two cuts",  # the name in full below the title
               f"{cfg.name}, stored parameters: as now, factorized at E = {e:,}, shared (one group), and both. "
               "In brackets: the change against what it stores now.")
    left_out = data.cuts_left_out(cfg, df)
    if left_out:
        st.caption(f"Left out: {', '.join(left_out)}. {md(cfg.name)} already shares more (sharing {md(cfg.sharing)}, "
                   f"{cfg.num_groups:,} group(s)): sharing only that sublayer would store more layer weights, "
                   "not fewer.")
    if e > cfg.hidden_dim:
        st.caption(f":orange[E = {e:,} is wider than hidden_dim ({cfg.hidden_dim:,}): the factorization adds "
                   "parameters here.]")
    tables.show(df, "cuts_table", file_name=f"{file_stem(cfg.name)}-albert-cuts.csv",
                readable={"total": "count", "embedding": "count", "layers": "count", "saved": "count"},
                pct=("saved_pct",))
