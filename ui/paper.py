"""What the ALBERT paper measured, beside the exact counts: the sections the Parameters, Overview and Compute pages
show (albert_core.estimate.paper_results through ui/data.py; figures from ui/figures.py)."""

from __future__ import annotations

import streamlit as st

from albert_core.estimate.paper_results import ADVICE, CAPTIONS, PAPER, SHARING_NOTE, TPU_NOTE

from . import data, figures, plots, tables
from .text import md

COUNTS = {"params_printed": "count", "params_exact": "count", "params_embedding": "count"}


def matches(cfgs: tuple, paper_tables: tuple[int, ...] | None = None) -> None:
    """A caption per shown config the paper trained (its rows, the rings on the chart); the others, each with the
    paper's closest network, in one closed expander below them (with eight configs, seven paragraphs of "not a
    network the paper trained" stood between the chart and its table)."""
    from albert_core.estimate.paper_results import matches as trained_rows

    lines = data.paper_matches(cfgs, paper_tables)
    trained = [bool(trained_rows(c)) for c in cfgs]
    for line in (line for line, t in zip(lines, trained, strict=True) if t):
        st.caption(md(line))
    others = [(c.name, line) for c, line, t in zip(cfgs, lines, trained, strict=True) if not t]
    if others:
        names = ", ".join(n for n, _ in others)
        with st.expander(f"Not trained by the paper, so not drawn: {md(names)}", icon=":material/info:"):
            for _, line in others:
                st.caption(md(line))


def rows(paper_tables: tuple[int, ...], key: str, file_name: str) -> None:
    """The rows of `paper_tables`: printed parameters beside albert_core's exact counts, the scores, the notes."""
    tables.show(data.paper_table(paper_tables), key, file_name=file_name, readable=COUNTS,
                pct=("params_diff_pct",))


def _caption(table: int) -> str:
    return f"Table {table} ({PAPER}): \u201c{CAPTIONS[table]}\u201d"


def factorization(cfgs: tuple) -> None:
    """Parameters page, factorization tab: Table 3 (E = 64 ... 768, not-shared and all-shared)."""
    st.subheader("What the paper measured: Table 3")
    st.info(md(ADVICE["embedding_dim"]), icon=":material/menu_book:")
    plots.show(figures.paper_tradeoff(cfgs, (3,), "sharing", "Embedding size: parameters against Avg"),
               "paper_table3")
    matches(cfgs, (3,))
    st.caption(md(_caption(3)) + " params_embedding is the embedding block at that E, the number the chart above "
               "draws for ALBERT-base (V = 30,000, H = 768).")
    rows((3,), "paper_table3_table", "paper-table-3.csv")


def sharing(cfgs: tuple) -> None:
    """Parameters page, sharing tab: Table 4 (the four strategies at E = 768 and E = 128)."""
    st.subheader("What the paper measured: Table 4")
    st.markdown("ALBERT-base with each of the four sharing strategies, at E = 768 and E = 128. " + md(SHARING_NOTE))
    plots.show(figures.paper_tradeoff(cfgs, (4,), "sharing", "Sharing strategy: parameters against Avg"),
               "paper_table4")
    matches(cfgs, (4,))
    st.caption(md(_caption(4)))
    rows((4,), "paper_table4_table", "paper-table-4.csv")


def depth_width(cfgs: tuple, field: str) -> None:
    """Parameters page, sweep tab: Tables 11 and 13 under num_layers, Table 12 under hidden_dim."""
    if field == "num_layers":
        st.subheader("What the paper measured: depth (Tables 11 and 13)")
        st.markdown("ALBERT-large from 1 to 48 layers and ALBERT-xxlarge at 12 and 24: with every layer shared, depth "
                    "adds no parameters (18M at every depth) but every layer still runs (flops_per_token). Table 11's "
                    "networks of 3 layers or more were warm-started from the previous depth (Sec. A.1).")
        matches(cfgs, (11, 13))
        rows((11, 13), "paper_depth_table", "paper-tables-11-13.csv")
    elif field == "hidden_dim":
        st.subheader("What the paper measured: width (Table 12)")
        st.markdown("ALBERT-large with 3 layers, hidden 1,024 to 6,144 (FFN 4H, H/64 heads): the Avg rises to "
                    "H = 4,096 and falls at 6,144.")
        matches(cfgs, (12,))
        rows((12,), "paper_width_table", "paper-table-12.csv")
    else:
        st.caption("The paper kept vocab_size at 30,000 in every model (footnote 1): no row varies it.")


def speedups() -> None:
    """Table 2's measured speedups beside exact parameters and FLOPs, and Table 6 (equal training time)."""
    st.info(TPU_NOTE, icon=":material/info:")
    tables.show(data.paper_speedups(), "paper_speedup_table", file_name="paper-table-2-speedups.csv",
                readable={"params_exact": "count", "params_printed": "count", "allreduce_params": "count",
                          "allreduce_bytes_fp32": "bytes", "flops_per_token": "flops"})
    st.caption("flops_per_token: forward matmul FLOPs per token of a 512-token sequence (albert_core.estimate.flops); "
               "flops_predicted_speedup = BERT-large's over the model's. allreduce_params: the gradients a "
               "data-parallel step all-reduces, one per stored parameter (4 bytes each in float32): sharing cuts "
               "them, one part of the measured speedup that FLOPs miss.")
    st.subheader("Equal training time: Table 6")
    tables.show(data.paper_equal_time(), "paper_equal_time_table", file_name="paper-table-6.csv",
                readable={"params_exact": "count", "flops_per_token": "flops", "run_flops": "flops",
                          "flops_per_hour": "flops"})
    st.caption(md(_caption(6)) + " run_flops: 3 × the forward FLOPs × batch 4,096 × steps at 512 tokens (Sec. 4.1; "
               "an upper bound, 10% of sequences were shorter). ALBERT-xxlarge spent more FLOPs in less time.")


def overview(cfgs: tuple) -> None:
    """Overview page, paper tab: every configuration the paper measured, Table 2's speedups and Table 6."""
    st.markdown(f"Every network the ALBERT paper pretrained ({PAPER}, Tables 2-8 and 11-13), at albert_core's exact "
                "parameter count against the paper's dev-set Avg (SQuAD 1.1 and 2.0, MNLI, SST-2, RACE). Tables 5-8 "
                "change the training, not the network; Table 8 is at about 1M steps, the others at 125k or 400k.")
    plots.show(figures.paper_tradeoff(cfgs, data.PAPER_TABLES, "table", "What the paper measured"), "paper_tradeoff")
    matches(cfgs)
    st.info(md(ADVICE["dropout"]), icon=":material/menu_book:")  # beside Table 8, in the rows below
    st.subheader("Table 2: measured speedup beside parameters and FLOPs")
    speedups()
    st.subheader("Every row")
    rows(data.PAPER_TABLES, "paper_rows_table", "paper-results.csv")


def compute() -> None:
    """Compute page, paper tab: the measured speedups against what FLOPs predict."""
    plots.show(figures.paper_speedup(), "paper_speedup")
    speedups()
