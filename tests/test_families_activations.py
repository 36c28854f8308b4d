"""Activation memory and FLOPs of every new family against what PyTorch really does.

Seeded random tiny configs (hidden 2-32, 1-4 layers, seq 1-20, batch 1-3), 100 per family: the
bytes autograd saves in one training forward of Hugging Face's model, measured on the CPU with
saved_tensors_hooks (albert_core.engine.measure), must equal activation_memory(..., device="cpu") to
the byte (real tensors: fake equals real is tests/test_engine.py's), in every dtype (autocast included), eager and sdpa, dropout 0 and above, with and
without checkpointing. FLOPs must equal torch.utils.flop_counter.FlopCounterMode. The inference
peak (training=False) is exact for RoBERTa, DistilBERT and ELECTRA and refused for DeBERTa-v2 and
ModernBERT.
"""

import random

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from albert_core.config import ConfigError, ModelConfig
from albert_core.engine.measure import measure_activation_memory
from albert_core.engine.models import hf_model
from albert_core.estimate.activations import activation_memory, activation_sweep, attention_quadratic_memory
from albert_core.estimate.flops import forward_flops
from albert_core.presets import PRESETS
from albert_core.step.fit import max_batch_size
from albert_core.step.training import training_memory
from albert_core.workload import Workload

FAMILIES = ["roberta", "distilbert", "electra", "deberta-v2", "modernbert", "mpnet"]
ACTS = ["gelu", "gelu_new", "relu", "silu", "tanh", "quick_gelu"]
DTYPES = ["float32", "bfloat16", "float16", "mixed_bf16", "mixed_fp16"]


def _family_fields(rng: random.Random, family: str, H: int) -> dict:
    if family == "roberta":
        return dict(type_vocab_size=rng.choice([1, 2]), position_offset=rng.randint(1, 3))
    if family == "distilbert":
        return dict(type_vocab_size=0)
    if family == "electra":
        return dict(embedding_dim=rng.choice([H, rng.randint(2, 12)]), type_vocab_size=rng.choice([1, 2]))
    if family == "deberta-v2":
        return dict(embedding_dim=rng.choice([H, rng.randint(2, 12)]), type_vocab_size=rng.choice([0, 0, 2]),
                    relative_attention=rng.random() < 0.85, max_relative_positions=rng.choice([-1, 3, 8]),
                    position_buckets=rng.choice([-1, 2, 4, 6]), share_att_key=rng.random() < 0.5,
                    pos_att_type=rng.choice(["", "c2p", "p2c", "c2p|p2c", "c2p|p2c"]),
                    position_biased_input=rng.random() < 0.5, norm_rel_ebd=rng.choice(["none", "layer_norm"]))
    if family == "mpnet":
        return dict(type_vocab_size=0, relative_attention_num_buckets=rng.choice([32, 40]))
    return dict(type_vocab_size=0, attention_bias=rng.random() < 0.5, mlp_bias=rng.random() < 0.5,
                norm_bias=rng.random() < 0.5, global_attn_every_n_layers=rng.choice([1, 2, 3]),
                local_attention=rng.choice([2, 4, 6, 8, 16]))


def random_config(rng: random.Random, family: str) -> ModelConfig:
    A = rng.choice([1, 2, 4])
    H = A * rng.choice([2, 4, 8])
    kw = dict(name="rand", family=family, vocab_size=rng.randint(8, 60), embedding_dim=H, hidden_dim=H,
              num_layers=rng.randint(1, 4), num_heads=A, intermediate_dim=rng.randint(2, 40),
              dropout=rng.choice([0.0, 0.1]), attention_dropout=rng.choice([0.0, 0.2]),
              max_position=rng.randint(4, 20), hidden_act=rng.choice(ACTS), sharing="none")
    kw.update(_family_fields(rng, family, H))
    return ModelConfig(**kw)


def _case(family: str, seed: int):
    rng = random.Random(f"{family}-{seed}")
    cfg = random_config(rng, family)
    if seed % 4 == 0:  # dropout 0 and above both appear often in every family
        cfg = cfg.replace(dropout=0.0, attention_dropout=0.0)
    elif seed % 4 == 1:
        cfg = cfg.replace(dropout=0.1, attention_dropout=0.1)
    B, S = rng.randint(1, 3), rng.choice([1, rng.randint(1, cfg.max_position), cfg.max_position])
    # MPNetLayer cannot be checkpointed in transformers (test_mpnet_checkpointing_is_refused_by_the_engine)
    return cfg, B, S, DTYPES[seed % 5], ("eager", "sdpa")[(seed // 5) % 2], seed % 9 == 4 and family != "mpnet"


@pytest.mark.parametrize("seed", range(100))
@pytest.mark.parametrize("family", FAMILIES)
def test_saved_bytes_equal_measurement(family, seed):
    cfg, B, S, dtype, attention, checkpointing = _case(family, seed)
    m = measure_activation_memory(cfg, Workload(B, S, dtype, attention, checkpointing, "cpu"), fake=False)
    est = activation_memory(
        cfg,
        Workload(
            batch_size=B, seq_len=S, precision=dtype, attention=attention, device="cpu", checkpointing=checkpointing
        ),
    )
    assert m.total > 0
    assert est.total == m.total, (cfg, B, S, dtype, attention, checkpointing)
    assert sum(est.breakdown()["bytes"]) == est.total


def _flop_counter(cfg: ModelConfig, B: int, S: int, attention: str) -> int:
    """On the meta device (sdpa runs the math path there; FlopCounterMode has no formula for the CPU's fused
    kernel). DeBERTa's forward calls .item() on input_ids without an attention mask: give it all ones."""
    ids = torch.zeros(B, S, dtype=torch.long, device="meta")
    kw = {"attention_mask": torch.ones(B, S, device="meta")} if cfg.family == "deberta-v2" else {}
    with FlopCounterMode(display=False) as fc:
        hf_model(cfg, device="meta", attention=attention)(input_ids=ids, **kw)
    return fc.get_total_flops()


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("family", FAMILIES)
def test_flops_equal_flop_counter(family, seed):
    cfg, B, S, _, attention, _ = _case(family, 1000 + seed)
    assert forward_flops(cfg, S, B).total == _flop_counter(cfg, B, S, attention)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("family", ["roberta", "distilbert", "electra", "mpnet"])
def test_inference_peak_equals_measurement(family, seed):
    """training=False: the peak of live tensor bytes in a no_grad eval forward (measure.peak_live_bytes),
    every dtype, eager and sdpa, up to 6 layers."""
    rng = random.Random(f"inference-{family}-{seed}")
    cfg = random_config(rng, family).replace(num_layers=rng.choice([1, 2, 3, 5, 6]))
    B, S = rng.randint(1, 3), rng.randint(1, cfg.max_position)
    dtype, attention = DTYPES[seed % 5], ("eager", "sdpa")[(seed // 5) % 2]
    m = measure_activation_memory(cfg, Workload(B, S, dtype, attention, device="cpu"), fake=False, training=False)
    assert m.estimate == m.total > 0, (cfg, B, S, dtype, attention)


@pytest.mark.parametrize("family", ["deberta-v2", "modernbert"])
def test_inference_peak_is_refused_naming_the_family(family):
    cfg, *_ = _case(family, 0)
    with pytest.raises(ConfigError, match=f"not modelled for family '{family}'"):
        activation_memory(
            cfg, Workload(batch_size=1, seq_len=4, precision="float32", attention="eager"), training=False
        )


def test_mpnet_checkpointing_is_refused_by_the_engine():
    from albert_core.engine.measure import check_kind

    cfg, *_ = _case("mpnet", 0)
    with pytest.raises(ValueError, match="MPNetModel does not support gradient checkpointing.*turn checkpointing off$"):
        check_kind(cfg, "hf", checkpointing=True)
    with pytest.raises(Exception, match="MPNetModel does not support gradient checkpointing"):
        measure_activation_memory(cfg, Workload(1, 4, "float32", "eager", True, "cpu"))


def test_mpnet_relative_bias_saves_its_bucket_indices_once():
    """compute_position_bias runs once a forward: one (S, S) int64 index tensor, whatever the depth; the bias is
    added in place to each layer's scores, which saves nothing, so MPNet's quadratic part is BERT's eager one plus it."""
    cfg = PRESETS["mpnet-base"]
    B, S, A, L = 2, 64, cfg.num_heads, cfg.num_layers
    q = attention_quadratic_memory(
        cfg, Workload(batch_size=B, seq_len=S, precision="float32", attention="eager", device="cpu")
    )
    assert q == L * 3 * 4 * B * A * S * S + 8 * S * S
    deeper = cfg.replace(num_layers=2 * L)
    assert (
        attention_quadratic_memory(
            deeper, Workload(batch_size=B, seq_len=S, precision="float32", attention="eager", device="cpu")
        )
        == 2 * L * 3 * 4 * B * A * S * S + 8 * S * S
    )


def test_deberta_quadratic_part_holds_its_extra_terms():
    """Beside BERT's softmax output, dropout noise and dropped probabilities, each DeBERTa layer saves a
    bool (B, 1, S, S) mask and, per c2p/p2c term, an int64 (S, S) gather index (no batch dimension)."""
    cfg = PRESETS["deberta-v3-base"]
    B, S, A, L = 2, 64, cfg.num_heads, cfg.num_layers
    q = attention_quadratic_memory(
        cfg, Workload(batch_size=B, seq_len=S, precision="float32", attention="eager", device="cpu")
    )
    assert q == L * (3 * 4 * B * A * S * S + B * S * S + 2 * 8 * S * S)
    assert (
        attention_quadratic_memory(
            cfg, Workload(batch_size=B, seq_len=2 * S, precision="float32", attention="eager", device="cpu")
        )
        == 4 * q
    )
    # DeBERTa runs its own attention: sdpa keeps every S×S tensor
    assert (
        attention_quadratic_memory(
            cfg, Workload(batch_size=B, seq_len=S, precision="float32", attention="sdpa", device="cpu")
        )
        == q
    )


def test_modernbert_sdpa_mask_appears_from_half_the_window():
    """create_bidirectional_sliding_window_mask gives no mask below local_attention // 2 tokens; from there
    the fused sdpa kernel saves one (B, 1, S, S) mask shared by the sliding layers."""
    cfg = ModelConfig(name="m", family="modernbert", vocab_size=30, embedding_dim=8, hidden_dim=8, num_layers=2,
                      num_heads=2, intermediate_dim=6, max_position=16, type_vocab_size=0, hidden_act="gelu",
                      sharing="none", local_attention=8, global_attn_every_n_layers=2)
    below = measure_activation_memory(cfg, Workload(2, 3, "float32", "sdpa", device="cpu"))
    at = measure_activation_memory(cfg, Workload(2, 4, "float32", "sdpa", device="cpu"))
    assert below.estimate == below.total and at.estimate == at.total
    assert (
        attention_quadratic_memory(
            cfg, Workload(batch_size=2, seq_len=3, precision="float32", attention="sdpa", device="cpu")
        )
        == 0
    )
    assert (
        attention_quadratic_memory(
            cfg, Workload(batch_size=2, seq_len=4, precision="float32", attention="sdpa", device="cpu")
        )
        == 2 * 4 * 4 * 4
    )


@pytest.mark.parametrize("name", [n for n, c in PRESETS.items() if c.family in FAMILIES])
def test_training_memory_fit_and_sweep_work_for_every_preset(name):
    cfg = PRESETS[name]
    tm = training_memory(cfg, Workload(batch_size=2, seq_len=128))
    assert tm.total == tm.weights + tm.gradients + tm.optimizer + tm.master_weights + tm.activations
    assert tm.activations > 0
    assert max_batch_size(cfg, 80 << 30, Workload(seq_len=512)) > 0
    seqs = [1, 63, 128, 512]
    df = activation_sweep({name: cfg}, seqs, Workload(batch_size=1, precision="bfloat16", attention="sdpa"))
    for s in seqs:
        am = activation_memory(cfg, Workload(batch_size=1, seq_len=s, precision="bfloat16", attention="sdpa"))
        row = df[df["seq_len"] == s].set_index("part")["bytes"]
        assert row["total"] == am.total and row["quadratic"] == am.quadratic
