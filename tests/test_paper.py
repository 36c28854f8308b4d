"""The ALBERT paper's parameter counts (Lan et al., ICLR 2020, Tables 1 and 3), reproduced.

Two checks per row (docs/parameters.md explains every difference):
1. our exact count in Hugging Face's layout is within the row's documented relative tolerance of the paper;
2. where we identified how the paper counts (vocabulary 30,000; pooler in or out; no E->H projection when
   E == H, as google-research/albert modeling.py does), that count rounds to the paper's figure exactly.
"""

import pytest

from albert_core.estimate.params import count_parameters, linear
from albert_core.presets import PRESETS

M = 1_000_000

# (preset, paper figure in millions, documented max |ours - paper| / paper in HF's layout)
TABLE_1 = [
    ("bert-base", 108, 0.015),
    ("bert-large", 334, 0.005),
    ("bert-xlarge", 1270, 0.006),
    ("albert-base", 12, 0.030),
    ("albert-large", 18, 0.020),
    ("albert-xlarge", 60, 0.025),
    ("albert-xxlarge", 235, 0.055),
]

# ALBERT-base, embedding size E: (E, not-shared, all-shared, tolerance not-shared, tolerance all-shared)
TABLE_3 = [
    (64, 87, 10, 0.010, 0.035),
    (128, 89, 12, 0.010, 0.030),
    (256, 93, 16, 0.010, 0.020),
    (768, 108, 31, 0.020, 0.025),
]


def paper_convention(cfg, *, pooler: bool) -> int:
    """Count as the paper appears to: V = 30,000 (SentencePiece, Sec. 4.1), pooler in or out, and no
    embedding_hidden_mapping_in when E == H (google-research/albert modeling.py: `if input_width != hidden_size`)."""
    cfg = cfg.replace(vocab_size=30000)
    c = count_parameters(cfg)
    n = c.total - (0 if pooler else c.pooler)
    if cfg.factorized and cfg.embedding_dim == cfg.hidden_dim:
        n -= linear(cfg.embedding_dim, cfg.hidden_dim)
    return n


@pytest.mark.parametrize("name, paper, tol", TABLE_1, ids=[r[0] for r in TABLE_1])
def test_table_1_within_documented_tolerance(name, paper, tol):
    ours = count_parameters(PRESETS[name]).total
    assert abs(ours - paper * M) / (paper * M) <= tol


@pytest.mark.parametrize("name, paper, ndigits", [
    ("bert-base", 108, 0), ("bert-large", 334, 0), ("bert-xlarge", 1270, -1),  # "1270M": 3 significant figures
])
def test_table_1_bert_rows_exact_without_pooler_at_30k_vocab(name, paper, ndigits):
    assert round(paper_convention(PRESETS[name], pooler=False) / M, ndigits) == paper


@pytest.mark.parametrize("name, paper", [("albert-base", 12), ("albert-large", 18)])
def test_table_1_albert_base_large_exact_as_hf_builds_them(name, paper):
    assert round(count_parameters(PRESETS[name]).total / M) == paper
    assert round(paper_convention(PRESETS[name], pooler=True) / M) == paper


@pytest.mark.parametrize("name, card", [("albert-base", 11), ("albert-large", 17), ("albert-xlarge", 58),
                                        ("albert-xxlarge", 223)])
def test_albert_rows_match_released_model_cards(name, card):
    """Hugging Face's albert-*-v1/v2 model cards state 11M, 17M, 58M, 223M for the released checkpoints;
    the paper's 60M and 235M for xlarge/xxlarge are not reproduced by any accounting we found."""
    assert abs(count_parameters(PRESETS[name]).total / M - card) < 1.0


def test_table_1_albert_xlarge_xxlarge_gap_is_what_we_document():
    # ours is below the paper by 1.3M (xlarge) and 12.4M (xxlarge); heads do not close the gap
    for name, paper, lo, hi in [("albert-xlarge", 60, 1.0, 1.5), ("albert-xxlarge", 235, 12.0, 12.6)]:
        gap = paper - count_parameters(PRESETS[name]).total / M
        assert lo <= gap <= hi
        assert paper - count_parameters(PRESETS[name], heads=True).total / M > 0.9


@pytest.mark.parametrize("E, not_shared, all_shared, tol_ns, tol_s", TABLE_3, ids=[f"E={r[0]}" for r in TABLE_3])
def test_table_3_within_documented_tolerance(E, not_shared, all_shared, tol_ns, tol_s):
    base = PRESETS["albert-base"].replace(embedding_dim=E)
    ns = count_parameters(base.replace(sharing="none")).total
    s = count_parameters(base.replace(sharing="all")).total
    assert abs(ns - not_shared * M) / (not_shared * M) <= tol_ns
    assert abs(s - all_shared * M) / (all_shared * M) <= tol_s


@pytest.mark.parametrize("E, not_shared, all_shared, tol_ns, tol_s", TABLE_3, ids=[f"E={r[0]}" for r in TABLE_3])
def test_table_3_exact_under_paper_convention(E, not_shared, all_shared, tol_ns, tol_s):
    base = PRESETS["albert-base"].replace(embedding_dim=E)
    # the not-shared column rounds exactly without the pooler, the all-shared column with it
    assert round(paper_convention(base.replace(sharing="none"), pooler=False) / M) == not_shared
    assert round(paper_convention(base.replace(sharing="all"), pooler=True) / M) == all_shared


def test_table_3_not_shared_e768_is_bert_base_at_30k_vocab():
    """At E = H = 768 with no sharing, ALBERT-base is BERT-base (plus HF's E->H projection): both 108M."""
    albert = PRESETS["albert-base"].replace(embedding_dim=768, sharing="none")
    bert = PRESETS["bert-base"].replace(vocab_size=30000)
    assert paper_convention(albert, pooler=False) == count_parameters(bert).total - count_parameters(bert).pooler
    assert count_parameters(albert).total - count_parameters(bert).total == linear(768, 768)


def test_sharing_saves_eleven_layers_in_every_row():
    for E, ns, s, *_ in TABLE_3:
        base = PRESETS["albert-base"].replace(embedding_dim=E)
        diff = count_parameters(base.replace(sharing="none")).total - count_parameters(base).total
        assert diff == 11 * count_parameters(base).per_layer
        assert abs(diff / M - (ns - s)) <= 1.0  # the paper's columns differ by 77M = 11 layers, up to rounding
