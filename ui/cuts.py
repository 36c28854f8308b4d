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


def decoder_section() -> None:
    """The same cuts for albert_core's decoder presets (the sidebar holds encoders): one decoder's bars and table, then
    every decoder at the same E."""
    from albert_core.decoders.decoder_presets import DECODER_PRESETS

    st.header("ALBERT's two cuts for the small decoders")
    st.markdown("A small decoder spends much of its budget on its token table, as BERT did: the case ALBERT's "
                "factorized embedding was made for. Here the table is E wide with a projection E→H into the layers "
                "and, where the LM head is tied to the table, one H→E out of them; shared: the attention, the FFN or "
                "whole layers stored once and run at every depth (MobileLLM shares blocks so). transformers builds "
                "neither: closed forms (decoders.decoder_params.decoder_cuts), one stored layer held equal to the "
                "count of a one-layer model that transformers builds. Sharing saves weights only: the activations, "
                "the KV cache and the FLOPs stay those of every layer.")
    left, right, _ = st.columns([2, 1, 2])
    name = controls.select("cuts_decoder", "Decoder", where=left)
    e = controls.number("cuts_e", "Factorized embedding width E", step=16, where=right,
                        help="ALBERT uses 128; E at or above the decoder's hidden size costs parameters instead of saving them.")
    cfg = DECODER_PRESETS[name].cfg
    df = data.decoder_cuts(name, e)
    plots.show(cuts_bars(df), "params_decoder_cuts", "ALBERT's two cuts for a decoder",
               f"{name} ({DECODER_PRESETS[name].model_id}), stored parameters of the base model: as now, factorized "
               f"at E = {e:,}, shared (one layer), and both. In brackets: the change against what it stores now.")
    if e >= cfg.hidden_dim:  # at E = H the table is as large as now, and the projections come on top
        st.caption(f":orange[E = {e:,} is not narrower than {md(name)}'s hidden size ({cfg.hidden_dim:,}): the "
                   "factorization adds parameters here.]")
    st.caption(f"{md(name)}: hidden size {cfg.hidden_dim:,}, vocabulary {cfg.vocab_size:,}, {cfg.num_layers:,} layers; "
               "LM head " + ("tied to the token table (the factorized model keeps the tie through E)."
                             if cfg.tied else "untied: its own V×H matrix, not in the base model's count."))
    tables.show(df, "decoder_cuts_table", file_name=f"{file_stem(name)}-albert-cuts.csv",
                readable={"total": "count", "embedding": "count", "layers": "count", "saved": "count"},
                pct=("saved_pct",))
    st.subheader(f"Every decoder preset at E = {e:,}")
    st.caption("The base model's parameters now, its token table's share, and the three cuts: factorized at E, "
               "every layer shared, both; the largest saving of the factorization first.")
    tables.show(data.decoder_cuts_all(e), "decoder_cuts_all", file_name="decoders-albert-cuts.csv",
                readable={"total": "count", "factorized": "count", "shared_all": "count", "both": "count"},
                pct=("embedding_pct", "factorized_saved_pct", "shared_all_saved_pct", "both_saved_pct"))
