"""What the ALBERT paper measured: its results tables as typed, frozen rows, beside albert_core's exact counts.

Source: Lan et al., "ALBERT: A Lite BERT for Self-supervised Learning of Language Representations", ICLR 2020,
arXiv 1909.11942 v6 (Tables 1-8 and 11-13; Tables 9, 10 and 14 report GLUE/SQuAD/RACE leaderboard runs and
fine-tuning hyperparameters, not architectures against scores, and are left out). Numbers are as printed,
inconsistencies included: INCONSISTENCIES names each one, and the rows it concerns say so in `notes`.

Every row's architecture follows the paper's own rules unless its table says otherwise: V = 30,000 (footnote 1),
FFN I = 4H and H/64 attention heads (Sec. 3.1), sequences of at most 512 tokens with two segments (Sec. 4.1).
`PaperRow.config()` turns a row into an albert_core ModelConfig, so every count beside a row is albert_core's
exact count (Hugging Face's layout, pooler included). Pure data: no Streamlit, no torch; pandas only inside
the functions that return tables.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any

from ..config import ModelConfig
from .flops import forward_flops
from .paper_data import (
    CAPTIONS,
    INCONSISTENCIES,
    MODELS,
    PAPER,
    PAPER_BATCH,
    PAPER_SEQ,
    PAPER_STEPS,
    PAPER_V,
    ROW_BY_KEY,
    ROWS,
    SHARING_LABELS,
    TABLE_1_PARAMS_M,
    TASKS,
    TOPICS,
    Architecture,
    Inconsistency,
    M,
    PaperRow,
    Scores,
    Training,
)
from .params import count_parameters, linear

if TYPE_CHECKING:
    import pandas as pd

# ---- matching a user's config to what the paper trained (no interpolation) -----------------------------------
# the fields that make a network the paper's: its family, shape, heads, sharing layout, positions and segments.
# Not compared: dropout and activation (training choices), the name.
MATCH_FIELDS = ("family", "vocab_size", "embedding_dim", "hidden_dim", "num_layers", "num_heads", "intermediate_dim",
                "sharing", "num_groups", "inner_group_num", "max_position", "type_vocab_size")
_DEFAULT_EXTRA = {f.name: f.default for f in fields(ModelConfig)
                  if f.name not in MATCH_FIELDS + ("name", "dropout", "attention_dropout", "hidden_act")}


def differences(cfg: ModelConfig, row: PaperRow) -> list[tuple[str, Any, Any]]:
    """(field, cfg's value, the paper row's value) for every architecture field where they differ."""
    paper = row.config()
    out = [(f, getattr(cfg, f), getattr(paper, f)) for f in MATCH_FIELDS if getattr(cfg, f) != getattr(paper, f)]
    out += [(f, getattr(cfg, f), v) for f, v in _DEFAULT_EXTRA.items() if getattr(cfg, f) != v]
    return out


def matches(cfg: ModelConfig) -> tuple[PaperRow, ...]:
    """Every row whose network is exactly cfg's (MATCH_FIELDS equal, no family-specific field set)."""
    return tuple(r for r in ROWS if not differences(cfg, r))


def closest(cfg: ModelConfig) -> tuple[PaperRow, list[tuple[str, Any, Any]]]:
    """The row whose network differs from cfg in the fewest fields (then the nearest in exact parameters), and
    those differences. Nothing is interpolated: this only says what the paper did not train."""
    n = count_parameters(cfg).total

    def rank(r: PaperRow) -> tuple[int, float, int]:
        return (len(differences(cfg, r)), abs(r.exact_params() - n) / max(n, 1), r.table)

    best = min(ROWS, key=rank)
    return best, differences(cfg, best)


def match_text(cfg: ModelConfig, tables: tuple[int, ...] | None = None) -> str:
    """One sentence: which rows (of `tables`; None: all) the paper trained with cfg's exact network, or that it
    did not, and the closest."""
    every = matches(cfg)
    got = tuple(r for r in every if tables is None or r.table in tables)
    if got:
        avgs = ", ".join(f"Table {r.table} {r.label}: Avg {r.scores.avg:.1f}" for r in got)
        return f"{cfg.name}: the paper trained this exact network ({avgs})."
    if every:
        where = ", ".join(dict.fromkeys(str(r.table) for r in every))
        return f"{cfg.name}: not in Table {', '.join(str(t) for t in tables or ())}; the paper trained it in Table {where}."
    row, diff = closest(cfg)
    shown = "; ".join(f"{f} {_v(a)} here, {_v(b)} there" for f, a, b in diff[:4])
    more = f"; {len(diff) - 4} more" if len(diff) > 4 else ""
    return (f"{cfg.name}: not a network the paper trained, so no score is shown for it (nothing is interpolated). "
            f"Closest: {row.name} ({shown}{more}).")


def _v(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)


# ---- what albert_core computes beside the paper's numbers ----------------------------------------------------
def flops_per_token(cfg: ModelConfig, seq_len: int = PAPER_SEQ) -> float:
    """Forward matmul FLOPs per token of one sequence of seq_len tokens (albert_core.estimate.flops; a training step is 3×,
    the same ratio between models)."""
    return forward_flops(cfg, min(seq_len, cfg.max_position)).per_token


def paper_convention(row: PaperRow) -> int:
    """The count that rounds to the printed figure on every row up to H = 1,024 (docs/parameters.md): our exact
    count less the E→H projection at E = H (google-research/albert's modeling.py has none there) and, for
    not-shared rows, less the pooler. What fits the printed numbers, not what the authors say they counted."""
    cfg = row.config()
    c = count_parameters(cfg)
    n = c.total - (c.pooler if cfg.sharing == "none" else 0)
    if cfg.factorized and cfg.embedding_dim == cfg.hidden_dim:
        n -= linear(cfg.embedding_dim, cfg.hidden_dim)
    return n


def rows_records(rows: tuple[PaperRow, ...] = ROWS) -> list[dict[str, Any]]:
    """One dict per paper row (plain Python values, None where the paper prints nothing): its network, printed
    and exact parameters, the scores, the speedup, FLOPs per token at 512 tokens and the notes."""
    out = []
    for r in rows:
        cfg = r.config()
        c = count_parameters(cfg)
        exact = c.total
        out.append(dict(
            table=r.table, row=r.label, key=r.key, family=cfg.family, vocab_size=cfg.vocab_size,
            embedding_dim=cfg.embedding_dim, hidden_dim=cfg.hidden_dim, num_layers=cfg.num_layers,
            intermediate_dim=cfg.intermediate_dim, num_heads=cfg.num_heads, sharing=cfg.sharing,
            steps=r.training.steps, training=r.training.variant or "as Sec. 4.1",
            params_printed=r.params_m * M if r.params_m is not None else None, params_exact=exact,
            params_embedding=c.embedding,
            params_diff_pct=100 * (exact - r.params_m * M) / (r.params_m * M) if r.params_m else None,
            squad11_f1=r.scores.squad11[0], squad11_em=r.scores.squad11[1], squad20_f1=r.scores.squad20[0],
            squad20_em=r.scores.squad20[1], mnli=r.scores.mnli, sst2=r.scores.sst2, race=r.scores.race,
            avg=r.scores.avg, speedup=r.speedup,
            flops_per_token=flops_per_token(cfg),
            notes=" ".join((*r.notes, *(i.text for i in r.inconsistencies()))),
        ))
    return out


def rows_table(rows: tuple[PaperRow, ...] = ROWS) -> pd.DataFrame:
    """rows_records as a tidy DataFrame (one row per paper row)."""
    import pandas as pd

    df = pd.DataFrame(rows_records(rows))
    df["params_printed"] = df["params_printed"].astype("Int64")  # no printed count: <NA>, not a float
    return df


def rows_of(*tables: int) -> tuple[PaperRow, ...]:
    return tuple(r for r in ROWS if r.table in tables)


def speedup_table() -> pd.DataFrame:
    """Table 2's six models: exact parameters, FLOPs per token against BERT-large's, the speed FLOPs alone would
    predict (their inverse), the measured speedup, and what each data-parallel step all-reduces.

    Speedup (Sec. 4.3): training data throughput relative to BERT-large, measured on Cloud TPU v3 (Sec. 4.1);
    not reproduced here. A data-parallel step all-reduces one gradient per stored parameter (Li et al. 2020,
    "PyTorch Distributed", Sec. 3: DDP all-reduces every parameter's gradient each step); float32: 4 bytes each.
    """
    import pandas as pd

    ref = flops_per_token(MODELS["BERT-large"].config("BERT-large"))
    out = []
    for r in rows_of(2):
        cfg = r.config()
        n = count_parameters(cfg).total
        f = flops_per_token(cfg)
        out.append(dict(model=r.label, params_exact=n, params_printed=(r.params_m or 0) * M,
                        flops_per_token=f, flops_vs_bert_large=f / ref, flops_predicted_speedup=ref / f,
                        measured_speedup=r.speedup, allreduce_params=n, allreduce_bytes_fp32=4 * n,
                        avg=r.scores.avg))
    return pd.DataFrame(out)


def equal_time_table() -> pd.DataFrame:
    """Table 6: BERT-large for 400k steps (34 h) against ALBERT-xxlarge for 125k (32 h), with the FLOPs each run
    spent: 3 × forward (Kaplan et al. 2020 Sec. 2.1) × batch 4096 × steps, at 512 tokens per sequence (Sec. 4.1;
    10% of sequences were shorter, so these are upper bounds)."""
    import pandas as pd

    out = []
    for r in rows_of(6):
        cfg = r.config()
        per_seq = forward_flops(cfg, PAPER_SEQ).total
        run = 3 * per_seq * PAPER_BATCH * r.training.steps
        hours = r.training.hours or 0.0
        out.append(dict(model=r.label, steps=r.training.steps, hours=hours, params_exact=count_parameters(cfg).total,
                        flops_per_token=per_seq / PAPER_SEQ, run_flops=run, flops_per_hour=run / hours if hours else None,
                        avg=r.scores.avg))
    return pd.DataFrame(out)


# ---- the source texts' advice, against what the paper measured ------------------------------------------------
def _avg(key: str) -> float:
    return ROW_BY_KEY[key].scores.avg


ADVICE: dict[str, str] = {
    # "ALBERT › Key Parameters": "Values between 64-256 are reasonable starting points."; Table 3
    "embedding_dim": (
        f"The Language AI Handbook (ALBERT › Key Parameters) advises: embedding_dim values between 64 and 256 are "
        f"reasonable starting points. The paper (Table 3, ALBERT-base): "
        f"all-shared, Avg {_avg('t3-as-e64'):.1f} at E = 64, {_avg('t3-as-e128'):.1f} at 128 (the best, ALBERT's "
        f"choice), {_avg('t3-as-e256'):.1f} at 256, {_avg('t3-as-e768'):.1f} at 768; not-shared, larger is better "
        f"but not by much ({_avg('t3-ns-e64'):.1f} to {_avg('t3-ns-e768'):.1f})."),
    # "ALBERT › Key Parameters": "Standard values range from 0.0 to 0.1."; Table 8
    "dropout": (
        f"The Language AI Handbook (ALBERT › Key Parameters) advises: standard dropout values range from 0.0 to "
        f"0.1. The paper (Table 8, ALBERT-xxlarge at about 1M steps): "
        f"removing dropout raised the Avg from {_avg('t8-dropout'):.1f} to {_avg('t8-no-dropout'):.1f} "
        f"(+{_avg('t8-no-dropout') - _avg('t8-dropout'):.1f})."),
}

# Sec. 4.5's reading of Table 4, with Table 4's own numbers (not-shared minus each strategy, at E = 768 and 128)
SHARING_NOTE = (
    f"Sharing everything costs {_avg('t4-e768-none') - _avg('t4-e768-all'):.1f} Avg points at E = 768 and "
    f"{_avg('t4-e128-none') - _avg('t4-e128-all'):.1f} at E = 128; sharing only the attention costs "
    f"{_avg('t4-e768-none') - _avg('t4-e768-attention'):.1f} at E = 768 and gains "
    f"{_avg('t4-e128-attention') - _avg('t4-e128-none'):.1f} at E = 128 (Table 4, Sec. 4.5). Group sharing "
    "(num_groups > 1) was not measured: a config with groups matches no row.")

TPU_NOTE = (
    "The paper's speedups are training data throughput relative to BERT-large, measured on Cloud TPU v3 (Sec. 4.1, "
    "4.3); this app does not reproduce them. FLOPs alone do not explain them: ALBERT-large costs about 1.0× "
    "BERT-large's FLOPs per token, yet the paper measured 1.7×.")


__all__ = ["M", "PAPER", "PAPER_V", "PAPER_SEQ", "PAPER_BATCH", "PAPER_STEPS", "TASKS", "CAPTIONS", "TOPICS",
           "SHARING_LABELS", "Architecture", "MODELS", "TABLE_1_PARAMS_M", "Scores", "Training", "PaperRow",
           "ROWS", "ROW_BY_KEY", "Inconsistency", "INCONSISTENCIES", "MATCH_FIELDS", "differences",
           "matches", "closest", "match_text", "flops_per_token", "paper_convention", "rows_records",
           "rows_table", "rows_of", "speedup_table", "equal_time_table", "ADVICE", "SHARING_NOTE", "TPU_NOTE"]
