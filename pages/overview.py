"""Overview: your configs against BERT and ALBERT at a glance, the side-by-side tables, and the report."""

import streamlit as st

from ui.legacy import through_app

through_app()  # a deep link before app.py ever ran in this process: hand the run over to it

from albert_core.presets import PRESETS
from albert_core.step.training import PEAK_MAX_LAYERS, is_lower_bound
from albert_core.units import format_bytes, format_count
from ui import comparison, controls, data, figures, paper, plots, sections, state, tables
from ui.text import md

st.title("BERT against ALBERT at a glance")
st.markdown(
    "BERT's parameters sit in two places: a **V×H embedding table** (about a fifth of BERT-base, a lookup "
    "table) and **a separate set of weights for every layer**. ALBERT (Lan et al., ICLR 2020) cuts both: it "
    "**factorizes the embedding** into V×E + E×H with a small E (128), and it **shares one layer's weights "
    "across all layers**. The parameter count collapses; the activations and the compute do not, because "
    "every layer still runs."
)
c1, c2, c3 = st.columns(3)
c1.page_link("pages/parameters.py", label="Where the parameters go", icon=":material/bar_chart:")
c2.page_link("pages/memory.py", label="What memory still costs", icon=":material/memory:")
c3.page_link("pages/compute.py", label="Fewer parameters, more compute", icon=":material/speed:")

shown = tuple(state.shown_configs())
cfg = shown[0]
mine = data.overview_table((cfg,)).iloc[0]
st.subheader(f"Your config: {md(cfg.name)}")
m1, m2, m3, m4 = st.columns(4)
m1.metric("Parameters", format_count(int(mine["total"])), help=f"{int(mine['total']):,} exactly")
m2.metric("Embedding share", f"{mine['embedding_pct']:.1f}%", help=f"{int(mine['embedding']):,} parameters")
m3.metric("Layer share", f"{mine['layers_pct']:.1f}%", help=f"{int(mine['all_layers']):,} parameters")
seq = min(512, cfg.max_position)
if mine["training_512_is_peak"]:  # short labels: a metric's label is cut to its column (four across)
    # "≥" where the peak is a lower bound (CUDA: the working set inside a layer not replayed), as Fit says "at least"
    m4.metric("Training step's peak", ("≥ " if is_lower_bound(mine["training_512_peak_is"]) else "")
              + format_bytes(int(mine["training_512"])),
              help=f"1 × {seq:,} tokens, float32, AdamW, eager attention: the most bytes alive at one moment of the "
                   f"step (albert_core.step.peak; {int(mine['training_512']):,} bytes; {mine['training_512_peak_is']}). "
                   f"The sum of its parts (weights, gradients, optimizer state, every saved activation) is "
                   f"{format_bytes(int(mine['training_512_sum']))}.")
else:
    m4.metric("Training step, sum of parts", format_bytes(int(mine["training_512"])),
              help=f"1 × {seq:,} tokens, float32, AdamW, eager attention ({int(mine['training_512']):,} bytes): the "
                   f"step's peak is modelled up to {PEAK_MAX_LAYERS} layer applications; past them, the sum of the parts.")
st.caption(f"The training step above: **one sequence of {seq:,} tokens, float32, AdamW, eager attention** (the same "
           "in the table below)"
           + ("." if mine["training_512_is_peak"] else
              f"; its peak is modelled up to {PEAK_MAX_LAYERS:,} layer applications, and {md(cfg.name)} runs "
              f"{cfg.layer_applications:,}: the number is the sum of the parts, which the peak never exceeds.")
           + " The Side by side tab and the Memory page use their own settings (batch, precision) and say which above "
             "each table and beside each number.")
st.caption("For a design review: **Share this view** in the sidebar holds the link to this view and a report, one "
           "HTML file with the configs, the two side-by-side tables and every page's main figures.")

# only the open tab runs and is sent: the first visit draws the charts alone (docs/benchmarks.md, "Speed in the browser")
tab, body = sections.lazy_tabs("overview_tab", {"presets": "Against the presets", "table": "Table and CSV",
                                                "compare": "Side by side", "paper": "What the paper measured",
                                                "decoders": "The small decoders"})
with body:
    if tab in ("presets", "table"):
        with_presets = controls.flip("overview_presets", ("Show the BERT and ALBERT presets as a reference",
                                                          "Hide the BERT and ALBERT presets"),
                                     icons=(":material/visibility:", ":material/visibility_off:"),
                                     help="Your configs come first (shaded); the published BERT and ALBERT configs "
                                          "after them.")
        reference = tuple(p for p in PRESETS.values() if p.family in ("bert", "albert") and p not in shown)
        ref = shown + (reference if with_presets else ())
    if tab == "presets":
        left, right = st.columns(2)
        shares = figures.params_shares(ref, "Shares of the parameters", highlight=len(shown))
        counts = figures.params_counts(ref, "Parameter counts", highlight=len(shown))
        plots.show(shares, "overview_shares", where=left, share=0.5)
        plots.show(counts, "overview_components", where=right, share=0.5)
    elif tab == "table":
        table = data.overview_table(ref)
        tables.show(table, "overview_table", file_name="overview.csv",
                    readable={"total": "count", "embedding": "count", "all_layers": "count",
                              "weights_fp32": "bytes", "activations_512": "bytes", "training_512": "bytes",
                              "training_512_sum": "bytes"},
                    pct=("embedding_pct", "layers_pct"))
        st.caption("At max_position 512 (or less), one sequence, float32, eager attention: weights_fp32 = 4 bytes "
                   "per parameter; activations_512 = what the forward keeps for backward; training_512 = the peak of one "
                   "AdamW training step (the most bytes alive at once), training_512_sum = the sum of its parts (weights, "
                   "gradients, optimizer state, activations); training_512_is_peak says which training_512 is (past "
                   f"{PEAK_MAX_LAYERS} layer applications, the sum); training_512_peak_is: exact, or a lower bound and "
                   "why. Exact numbers at the right "
                   "and in the CSV.")
    elif tab == "paper":
        paper.overview(shown)
    elif tab == "decoders":
        st.markdown("The parameter problem ALBERT answered is now largest in the small decoders people fine-tune and "
                    "serve: a 150k-262k-token vocabulary is a quarter to two thirds of a model under a billion "
                    "parameters. Exact counts of what transformers builds from each published config.json; on the "
                    "command line, python -m albert_core params --preset Qwen2.5-0.5B (with --cuts 128 for ALBERT's "
                    "cuts, --context for the KV cache).")
        reference = (PRESETS["bert-base"], PRESETS["albert-base"])
        plots.show(figures.decoder_shares(reference, "Where a decoder's parameters sit"), "overview_decoders")
        tables.show(data.decoder_table(reference), "overview_decoder_table", file_name="decoders.csv",
                    readable={"total": "count", "embedding": "count", "layers": "count", "other": "count",
                              "kv_cache_per_token": "bytes"},
                    pct=("embedding_pct", "layers_pct", "other_pct"))
        st.caption("other: the final norm of a decoder, the pooler of an encoder (other_is). kv_cache_per_token: what "
                   "one more token of context costs in bfloat16 while every layer holds it, 2 × layers × kv_heads × "
                   "head_dim × 2 bytes (grouped-query attention; Gemma-3's local layers hold at most their window: "
                   "params --context); none for the encoders and EmbeddingGemma, which attend both ways.")
    else:
        st.markdown("Your configs (the sidebar config first, then the compared ones) in two tables: their own facts "
                    "at each one's own max_position, and one training step at the workload the sidebar chose. "
                    "Highlighted: what differs from the first column; in brackets: the change against it.")
        settings = comparison.settings()
        comparison.show(data.comparison(shown, settings), shown, settings)
