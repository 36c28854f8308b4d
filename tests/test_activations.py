"""activation_memory against what PyTorch really saves, measured with saved_tensors_hooks on the CPU (real tensors:
at these sizes 8-30 times faster than the engine's fake ones, whose equality with real ones tests/test_engine.py holds).

Random small configs (both families, every activation, dropout 0 and above, several dtypes,
batch sizes and odd sequence lengths): the estimate must equal the measured bytes exactly (the
issue's bar is 1%).
"""

import random

import pytest

from albert_core.config import ModelConfig
from albert_core.engine.measure import measure_activation_memory
from albert_core.estimate.activations import (
    activation_memory,
    activation_sweep,
    attention_quadratic_memory,
    korthikanti_bytes,
)
from albert_core.presets import PRESETS
from albert_core.workload import Workload

ACTS = ["gelu", "gelu_new", "relu", "gelu_python", "gelu_fast", "quick_gelu", "silu", "tanh"]


def random_config(rng: random.Random, family: str, **over) -> ModelConfig:
    A = rng.choice([1, 2, 3, 4])
    H = A * rng.choice([2, 4, 5, 8])
    kw = dict(
        name="rand", family=family, vocab_size=rng.randint(5, 60),
        embedding_dim=H if family == "bert" else rng.randint(2, 12), hidden_dim=H,
        num_layers=rng.randint(1, 3), num_heads=A, intermediate_dim=rng.randint(3, 40),
        dropout=rng.choice([0.0, 0.1]), attention_dropout=rng.choice([0.0, 0.2]),
        max_position=rng.randint(8, 40), hidden_act=rng.choice(ACTS),
        sharing="all" if family == "albert" else "none", num_groups=1,
        inner_group_num=rng.choice([1, 1, 2]) if family == "albert" else 1,
    )
    kw.update(over)
    return ModelConfig(**kw)


def _case(seed: int, dtypes, attentions):
    rng = random.Random(seed)
    family = ("bert", "albert")[seed % 2]
    act = ("gelu", "gelu_new", "relu")[seed % 3] if seed < 24 else rng.choice(ACTS)
    cfg = random_config(rng, family, hidden_act=act)
    if seed % 4 == 0:  # make sure dropout 0 and > 0 both appear for each family
        cfg = cfg.replace(dropout=0.0, attention_dropout=0.0)
    elif seed % 4 == 1:
        cfg = cfg.replace(dropout=0.1, attention_dropout=0.1)
    B = rng.randint(1, 3)
    S = rng.choice([1, 3, 7, rng.randint(1, cfg.max_position), cfg.max_position])
    return cfg, B, S, dtypes[seed % len(dtypes)], rng.choice(attentions)


@pytest.mark.parametrize("seed", range(36))
def test_estimate_equals_hf_saved_tensors_eager(seed):
    cfg, B, S, dtype, attention = _case(seed, ["float32", "bfloat16"], ["eager"])
    m = measure_activation_memory(cfg, Workload(B, S, dtype, "eager", device="cpu"), fake=False, kind="hf")
    est = activation_memory(cfg, Workload(batch_size=B, seq_len=S, precision=dtype, attention="eager", device="cpu"))
    assert m.total > 0
    assert est.total == m.total, (cfg, B, S, dtype)
    assert abs(est.total - m.total) <= 0.01 * m.total


@pytest.mark.parametrize("seed", range(100, 116))
def test_estimate_equals_hf_other_dtypes_and_sdpa(seed):
    cfg, B, S, dtype, attention = _case(seed, ["float16", "mixed_bf16", "mixed_fp16", "float32"], ["eager", "sdpa"])
    m = measure_activation_memory(cfg, Workload(B, S, dtype, attention, device="cpu"), fake=False, kind="hf")
    assert m.estimate == m.total, (cfg, B, S, dtype, attention)


@pytest.mark.parametrize("seed", range(200, 212))
def test_sdpa_cpu_paths(seed):
    """CPU sdpa: flash kernel without attention dropout (no S² tensor), math path with it."""
    rng = random.Random(seed)
    cfg = random_config(rng, ("bert", "albert")[seed % 2], attention_dropout=(0.0, 0.1)[(seed // 2) % 2])
    B, S = rng.randint(1, 3), rng.randint(2, cfg.max_position)
    dtype = rng.choice(["float32", "bfloat16"])
    m = measure_activation_memory(cfg, Workload(B, S, dtype, "sdpa", device="cpu"), fake=False, kind="hf")
    est = activation_memory(cfg, Workload(batch_size=B, seq_len=S, precision=dtype, attention="sdpa", device="cpu"))
    assert est.total == m.total
    assert (est.quadratic == 0) == (cfg.attention_dropout == 0)


SHARING = ["none", "attention", "ffn", "all"]


@pytest.mark.parametrize("seed", range(300, 316))
def test_estimate_equals_reference_every_sharing_mode(seed):
    rng = random.Random(seed)
    L = rng.choice([1, 2, 4])
    cfg = random_config(rng, ("bert", "albert")[seed % 2], num_layers=L, sharing=SHARING[seed % 4],
                        num_groups=rng.choice([g for g in (1, 2, 4) if L % g == 0]),
                        inner_group_num=rng.choice([1, 2]))
    dtype = rng.choice(["float32", "bfloat16", "mixed_bf16"])
    B, S = rng.randint(1, 3), rng.randint(1, cfg.max_position)
    w = Workload(B, S, dtype, rng.choice(["eager", "sdpa"]), device="cpu")
    m = measure_activation_memory(cfg, w, fake=False, kind="reference")
    assert m.estimate == m.total, (cfg, B, S, dtype)


@pytest.mark.parametrize("seed", range(400, 408))
def test_checkpointing_against_measurement(seed):
    """HF BertModel's per-layer checkpointing; ALBERT on the reference encoder (HF's AlbertModel has none)."""
    rng = random.Random(seed)
    family = ("bert", "albert")[seed % 2]
    cfg = random_config(rng, family, num_layers=rng.randint(2, 3))
    B, S = rng.randint(1, 3), rng.randint(1, cfg.max_position)
    dtype = rng.choice(["float32", "bfloat16", "mixed_bf16"])
    kind = "hf" if family == "bert" else "reference"
    m = measure_activation_memory(cfg, Workload(B, S, dtype, "eager", True, "cpu"), fake=False, kind=kind)
    full = activation_memory(cfg, Workload(batch_size=B, seq_len=S, precision=dtype, attention="eager", device="cpu"))
    assert m.estimate == m.total
    assert m.total < full.total  # checkpointing keeps less


@pytest.mark.parametrize("seed", range(500, 516))
def test_inference_peak_against_measurement(seed):
    rng = random.Random(seed)
    family = ("bert", "albert")[seed % 2]
    L = rng.choice([1, 2, 3, 5, 6])
    cfg = random_config(rng, family, num_layers=L,
                        num_groups=rng.choice([g for g in (1, 2, 3) if L % g == 0]) if family == "albert" else 1)
    B, S = rng.randint(1, 3), rng.randint(1, cfg.max_position)
    dtype = ("float32", "bfloat16", "float16", "mixed_bf16", "mixed_fp16")[seed % 5]
    attention = rng.choice(["eager", "sdpa"])
    m = measure_activation_memory(cfg, Workload(B, S, dtype, attention, device="cpu"), fake=False, training=False)
    assert m.estimate == m.total > 0, (cfg, B, S, dtype, attention)


@pytest.mark.parametrize("dtype", ["float32", "mixed_bf16"])
def test_inference_peak_of_a_deep_inner_group_against_measurement(dtype):
    """Five inner layers and five steps: the replay skips inner layers 2-3 and steps 2-3 (their cached casts only)."""
    cfg = random_config(random.Random(7), "albert", num_layers=5, inner_group_num=5, num_groups=1)
    m = measure_activation_memory(cfg, Workload(2, 9, dtype, "eager", device="cpu"), fake=False, training=False)
    assert m.estimate == m.total > 0


@pytest.mark.parametrize("seed", range(600, 640))
def test_skipping_repeated_layers_leaves_the_inference_peak_as_replaying_all(seed, monkeypatch):
    """The replay replays steps and inner layers 0, 1 and the last (activations._replayed): the peak and its
    seq_len² part equal a replay of every layer, on deep groups, every sharing mode and autocast."""
    from albert_core.estimate import activations

    rng = random.Random(seed)
    L, inner = rng.choice([1, 4, 6, 9]), rng.choice([1, 3, 4, 7])
    sharing = rng.choice(["all", "attention", "ffn", "none"])
    groups = rng.choice([g for g in (1, 2, 3) if L % g == 0])
    cfg = random_config(rng, "albert", num_layers=L, inner_group_num=inner, sharing=sharing, num_groups=groups)
    B, S = rng.randint(1, 4), rng.randint(1, cfg.max_position)
    kw = dict(batch_size=B, seq_len=S, dtype=rng.choice(["float32", "bfloat16", "mixed_bf16", "mixed_fp16"]),
              attention=rng.choice(["eager", "sdpa"]), device=rng.choice(["cpu", "cuda"]))
    skipping = activations.inference_peak(cfg, **kw)
    activations._CACHE.clear()
    monkeypatch.setattr(activations, "_replayed", lambda n: list(range(n)))
    assert activations.inference_peak(cfg, **kw) == skipping, (cfg, kw)
    activations._CACHE.clear()


# ---- properties that need no measurement ------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_sharing_leaves_activations_alone(dtype, device, attention):
    base = PRESETS["albert-base"].replace(num_layers=4, max_position=128)
    ref = activation_memory(
        base.replace(sharing="none"),
        Workload(batch_size=2, seq_len=100, precision=dtype, attention=attention, device=device),
    ).total
    for sharing in SHARING:
        for groups in (1, 2, 4):
            cfg = base.replace(sharing=sharing, num_groups=groups)
            assert (
                activation_memory(
                    cfg, Workload(batch_size=2, seq_len=100, precision=dtype, attention=attention, device=device)
                ).total
                == ref
            )


def test_under_autocast_only_the_weight_copies_depend_on_sharing():
    base = PRESETS["albert-base"].replace(num_layers=4)
    H, I = base.hidden_dim, base.intermediate_dim
    a = activation_memory(
        base.replace(sharing="none"), Workload(batch_size=1, seq_len=64, precision="mixed_bf16", attention="eager")
    )
    b = activation_memory(
        base.replace(sharing="all"), Workload(batch_size=1, seq_len=64, precision="mixed_bf16", attention="eager")
    )
    # 3 fewer stored copies of 4 H×H attention and 2 H×I FFN matrices, 2 bytes each
    assert a.total - b.total == 3 * (4 * H * H + 2 * H * I) * 2


@pytest.mark.parametrize("name", ["bert-base", "albert-large"])
def test_doubling_seq_len_quadruples_eager_scores(name):
    cfg = PRESETS[name]
    q1 = attention_quadratic_memory(cfg, Workload(batch_size=4, seq_len=128, precision="bfloat16", attention="eager"))
    q2 = attention_quadratic_memory(cfg, Workload(batch_size=4, seq_len=256, precision="bfloat16", attention="eager"))
    assert q1 > 0 and q2 == 4 * q1
    total1 = activation_memory(cfg, Workload(batch_size=4, seq_len=128, precision="bfloat16", attention="eager")).total
    total2 = activation_memory(cfg, Workload(batch_size=4, seq_len=256, precision="bfloat16", attention="eager")).total
    assert 2 * total1 < total2 < 4 * total1  # the linear part only doubles


def test_quadratic_part_by_hand():
    """Eager, float32, CPU, dropout > 0: softmax output + dropout noise + dropped probs, 4 bytes each."""
    cfg = PRESETS["bert-base"]
    B, S, A, L = 2, 96, cfg.num_heads, cfg.num_layers
    assert (
        attention_quadratic_memory(
            cfg, Workload(batch_size=B, seq_len=S, precision="float32", attention="eager", device="cpu")
        )
        == L * 3 * 4 * B * A * S * S
    )
    # CUDA: native_dropout's mask is bool, 1 byte
    assert (
        attention_quadratic_memory(
            cfg, Workload(batch_size=B, seq_len=S, precision="float32", attention="eager", device="cuda")
        )
        == L * (4 + 1 + 4) * B * A * S * S
    )
    # sdpa on CUDA never materializes the S×S matrix
    assert (
        attention_quadratic_memory(
            cfg, Workload(batch_size=B, seq_len=S, precision="bfloat16", attention="sdpa", device="cuda")
        )
        == 0
    )


def test_cuda_dropout_masks_are_a_quarter_of_cpu_float32_masks():
    cfg = PRESETS["bert-base"]
    B, S, E, H, A, L = 2, 50, cfg.embedding_dim, cfg.hidden_dim, cfg.num_heads, cfg.num_layers
    cpu = activation_memory(
        cfg, Workload(batch_size=B, seq_len=S, precision="float32", attention="eager", device="cpu")
    ).total
    cuda = activation_memory(
        cfg, Workload(batch_size=B, seq_len=S, precision="float32", attention="eager", device="cuda")
    ).total
    mask_elems = B * S * E + L * (B * A * S * S + 2 * B * S * H)  # embeddings, attention, 2 residual dropouts
    assert cpu - cuda == mask_elems * (4 - 1)


def test_breakdown_sums_to_total_and_parts_add_up():
    for cfg in PRESETS.values():
        for dtype in ("float32", "mixed_bf16"):
            am = activation_memory(cfg, Workload(batch_size=3, seq_len=77, precision=dtype, attention="eager"))
            df = am.breakdown()
            assert sum(df["bytes"]) == am.total
            assert am.quadratic + am.linear == am.total
            assert sum(df.loc[df["part"] == "quadratic", "bytes"]) == am.quadratic
            assert all(isinstance(v, int) for v in df["bytes"])


def test_dropout_zero_saves_no_mask():
    cfg = PRESETS["bert-base"]
    with_dropout = activation_memory(
        cfg, Workload(batch_size=1, seq_len=32, precision="float32", attention="eager", device="cpu")
    ).breakdown()
    without = activation_memory(
        cfg.replace(dropout=0.0, attention_dropout=0.0),
        Workload(batch_size=1, seq_len=32, precision="float32", attention="eager", device="cpu"),
    ).breakdown()
    assert "residual dropout masks" in set(with_dropout["component"])
    assert "residual dropout masks" not in set(without["component"])
    assert "attention dropout mask" not in set(without["component"])


def test_sweep_matches_pointwise_and_stays_exact():
    cfgs = {n: PRESETS[n] for n in ("bert-base", "albert-xxlarge")}
    seqs = [64, 127, 512]
    df = activation_sweep(cfgs, seqs, Workload(batch_size=3, precision="bfloat16", attention="eager"))
    for name, cfg in cfgs.items():
        for s in seqs:
            am = activation_memory(cfg, Workload(batch_size=3, seq_len=s, precision="bfloat16", attention="eager"))
            row = df[(df["config"] == name) & (df["seq_len"] == s)].set_index("part")["bytes"]
            assert row["total"] == am.total and row["quadratic"] == am.quadratic and row["linear"] == am.linear
    # a config whose bytes overflow int64 stays exact (Python ints)
    huge = ModelConfig(name="huge", family="bert", vocab_size=10**7, embedding_dim=65536, hidden_dim=65536,
                       num_layers=1000, num_heads=64, intermediate_dim=262144, max_position=1 << 20)
    big = activation_sweep([huge], [1 << 20], Workload(batch_size=1024, precision="float32", attention="eager"))
    exact = activation_memory(
        huge, Workload(batch_size=1024, seq_len=1 << 20, precision="float32", attention="eager")
    ).total
    assert exact > 2**63
    assert big.loc[big["part"] == "total", "bytes"].iloc[0] == exact


def test_korthikanti_formula():
    cfg = PRESETS["bert-base"]
    s, b, h, a = 128, 2, 768, 12
    assert korthikanti_bytes(cfg, batch_size=b, seq_len=s) == 12 * (34 * s * b * h + 5 * a * s * s * b)


@pytest.mark.parametrize("bad", [
    dict(seq_len=513), dict(seq_len=0), dict(batch_size=0), dict(batch_size=1.5), dict(dtype="fp8"),
    dict(attention="flash"), dict(device="tpu"), dict(checkpointing=True, training=False),
])
def test_bad_input_is_a_clear_value_error(bad):
    kw = dict(batch_size=1, seq_len=8, precision="float32", attention="eager")
    kw.update(bad)
    training = kw.pop("training", True)
    if "dtype" in kw:
        kw["precision"] = kw.pop("dtype")
    with pytest.raises(ValueError):  # the Workload refuses its own fields; activation_memory what needs the config
        activation_memory(PRESETS["bert-base"], Workload(**kw), training=training)
