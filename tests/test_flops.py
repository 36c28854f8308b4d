"""FLOPs: exact against torch.utils.flop_counter on real models, and what sharing does (not) buy."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from albert_core.config import SHARING_MODES, ModelConfig
from albert_core.engine.models import hf_model, reference_model
from albert_core.estimate.flops import FlopCount, forward_flops, training_flops
from albert_core.estimate.params import count_parameters
from albert_core.presets import PRESETS


def counted(model, ids, **kw) -> int:
    with FlopCounterMode(display=False) as fc:
        model(ids, **kw)
    return fc.get_total_flops()


def counted_hf(cfg, ids, attention="eager") -> int:
    """Hugging Face's model on the meta device. DeBERTa's forward calls .item() on input_ids unless it gets an
    attention mask: all ones, the same computation as none. (FlopCounterMode has no formula for CPU's
    fused sdpa kernel, so sdpa is counted on the meta device, where it runs the math path.)"""
    kw = {"attention_mask": torch.ones(ids.shape, device="meta")} if cfg.family == "deberta-v2" else {}
    return counted(hf_model(cfg, device="meta", attention=attention), ids, **kw)


@pytest.mark.parametrize("name", list(PRESETS))
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_forward_matches_flop_counter_on_presets(name, attention):
    """Every preset, built on the meta device (shapes only), seq 128, batch 2: BERT and ALBERT on the reference
    encoder, the other families on Hugging Face's model."""
    cfg = PRESETS[name]
    ids = torch.zeros(2, 128, dtype=torch.long, device="meta")
    if cfg.family in ("bert", "albert"):
        got = counted(reference_model(cfg, device="meta", attention=attention), ids)
    else:
        got = counted_hf(cfg, ids, attention)
    assert got == forward_flops(cfg, 128, 2).total


@pytest.mark.parametrize("cfg", [
    ModelConfig(name="a", family="albert", vocab_size=97, embedding_dim=24, hidden_dim=48, num_layers=6,
                num_heads=6, intermediate_dim=80, max_position=64, sharing="all", num_groups=3, inner_group_num=2),
    ModelConfig(name="b", family="bert", vocab_size=97, embedding_dim=40, hidden_dim=40, num_layers=3,
                num_heads=5, intermediate_dim=72, max_position=64, sharing="none"),
], ids=["albert", "bert"])
def test_forward_matches_flop_counter_on_hf_models(cfg):
    ids = torch.zeros(3, 37, dtype=torch.long, device="meta")
    assert counted(hf_model(cfg, device="meta"), ids) == forward_flops(cfg, 37, 3).total


@pytest.mark.parametrize("recompute", [False, True])
def test_training_matches_flop_counter(recompute):
    cfg = ModelConfig(name="t", family="albert", vocab_size=50, embedding_dim=16, hidden_dim=32, num_layers=4,
                      num_heads=4, intermediate_dim=48, max_position=20, sharing="ffn", num_groups=2,
                      inner_group_num=2)
    torch.manual_seed(0)
    model = reference_model(cfg, device="cpu").train()
    model.gradient_checkpointing = recompute
    ids = torch.randint(0, 50, (3, 11))
    with FlopCounterMode(display=False) as fc:
        seq, pooled = model(ids)
        (seq.sum() + pooled.sum()).backward()
    assert fc.get_total_flops() == training_flops(cfg, 11, 3, recompute=recompute)


def test_per_layer_matches_narayanan_closed_form():
    """24·B·S·H² + 4·B·S²·H per layer when I = 4H (Narayanan et al. 2021, Appendix)."""
    cfg = PRESETS["bert-large"]
    B, S, H, L = 4, 512, cfg.hidden_dim, cfg.num_layers
    assert forward_flops(cfg, S, B).layers == L * (24 * B * S * H * H + 4 * B * S * S * H)


def test_xxlarge_stores_fewer_parameters_than_bert_large_but_costs_more():
    xxl, large = PRESETS["albert-xxlarge"], PRESETS["bert-large"]
    assert count_parameters(xxl).total < count_parameters(large).total
    for S in (128, 512):
        assert forward_flops(xxl, S).total > forward_flops(large, S).total
        assert training_flops(xxl, S) > training_flops(large, S)
    # and the gap is large: the H² terms give 12·4096² / (24·1024²) = 8×; the S² terms only 2×
    for S in (128, 512):
        assert 7 < forward_flops(xxl, S).total / forward_flops(large, S).total < 8


def test_sharing_modes_cost_the_same():
    base = PRESETS["albert-large"]
    flops = {s: forward_flops(base.replace(sharing=s, num_groups=4), 256, 8) for s in SHARING_MODES}
    assert len({f.total for f in flops.values()}) == 1
    params = {s: count_parameters(base.replace(sharing=s, num_groups=4)).total for s in SHARING_MODES}
    assert len(set(params.values())) == 4  # while parameters differ in every mode


def test_inner_groups_multiply_compute():
    base = PRESETS["albert-base"]
    one, three = forward_flops(base, 64), forward_flops(base.replace(inner_group_num=3), 64)
    assert three.layers == 3 * one.layers
    assert three.pooler == one.pooler and three.embedding_projection == one.embedding_projection


def test_quadratic_terms_scale_with_seq_len_squared():
    cfg = PRESETS["bert-base"]
    a, b = forward_flops(cfg, 128), forward_flops(cfg, 256)
    assert b.attention_scores == 4 * a.attention_scores and b.attention_values == 4 * a.attention_values
    assert b.qkv == 2 * a.qkv and b.ffn == 2 * a.ffn and b.pooler == a.pooler


def test_breakdown_is_tidy_and_exact_for_huge_configs():
    cfg = ModelConfig(name="huge", family="albert", vocab_size=10**7, embedding_dim=4096, hidden_dim=65_536,
                      num_layers=1000, num_heads=512, intermediate_dim=262_144, max_position=65_536)
    f = forward_flops(cfg, 65_536, 1024)
    assert isinstance(f, FlopCount) and f.total > 2**63  # past int64, still exact
    df = f.breakdown()
    assert list(df.columns) == ["component", "formula", "flops", "pct"]
    assert sum(df["flops"]) == f.total
    assert abs(df["pct"].sum() - 100) < 1e-9
    H, S, B, N = 65_536, 65_536, 1024, 1000
    assert f.attention_scores == N * 2 * B * S * S * H


@pytest.mark.parametrize("args, needle", [
    ((0, 1), "seq_len must be a whole number of at least 1"),
    ((128, 0), "batch_size must be a whole number of at least 1"),
    ((1.5, 1), "seq_len"),
    ((513, 1), "seq_len (513) must be at most max_position (512)"),
])
def test_bad_arguments(args, needle):
    with pytest.raises(ValueError) as e:
        forward_flops(PRESETS["albert-base"], *args)
    assert needle in str(e.value)
