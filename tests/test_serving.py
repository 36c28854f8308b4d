"""Serving sizes: serving.weight_bytes against the storage of models torchao really quantizes on the CPU.

Small real models of every family (random widths, heads, group sizes), built by transformers on the CPU,
cast to the base dtype and quantized with torchao's quantize_; the storage is summed over each
parameter's inner tensors (qdata, scale, zero_point) as torchao's tensor subclasses hold them.
"""

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from albert_core.choices import CAUSAL_LM
from albert_core.decoders import FAMILIES as DECODER_FAMILIES
from albert_core.decoders.decoder_presets import DECODER_PRESETS
from albert_core.engine.task_model import task_model
from albert_core.estimate.serving import FORMATS, approximate_bytes, quantize, storage_bytes, weight_bytes
from albert_core.presets import PRESET_FAMILIES, PRESETS

N = 8  # random small models per family


@st.composite
def small(draw, fam):
    heads = draw(st.sampled_from([1, 2, 4]))
    H = 32 * draw(st.integers(1, 3))
    kw = dict(vocab_size=draw(st.integers(8, 120)), hidden_dim=H, num_heads=heads, num_layers=draw(st.integers(1, 3)),
              intermediate_dim=32 * draw(st.integers(1, 4)), max_position=draw(st.integers(8, 64)))
    base = PRESETS[PRESET_FAMILIES[fam][0]]
    kw["embedding_dim"] = 32 * draw(st.integers(1, 2)) if fam in ("albert", "electra", "deberta-v2") else H
    if fam == "albert":
        kw["num_groups"] = draw(st.sampled_from([g for g in (1, 2, 3) if kw["num_layers"] % g == 0]))
        kw["inner_group_num"] = draw(st.integers(1, 2))
    if fam == "deberta-v2":
        kw["max_relative_positions"] = draw(st.sampled_from([-1, 16]))
        kw["position_buckets"] = draw(st.sampled_from([-1, 8]))
    return base.replace(**kw)


def check(cfg, fmt, dtype, group_size, qe, head, model=None):
    """weight_bytes of cfg equal the storages of the model (task_model's, or the one given) cast and quantized."""
    import torch

    model = task_model(cfg, head, 3, "cpu") if model is None else model
    model = model.to(getattr(torch, dtype if fmt.startswith("int") else fmt))
    try:
        ours = weight_bytes(cfg, fmt, dtype=dtype, group_size=group_size, quantize_embeddings=qe, head=head,
                            num_labels=3)
    except ValueError as e:  # a group size that does not divide some K: torchao refuses it too
        assert fmt == "int4" and "must divide the input width K" in str(e)
        with pytest.raises(AssertionError, match="divisible by block_size"):
            quantize(model, fmt, group_size=group_size, quantize_embeddings=qe)
        return
    if fmt.startswith("int"):
        quantize(model, fmt, group_size=group_size, quantize_embeddings=qe)
    real = storage_bytes(model)
    assert dict(data=ours.data, scales=ours.scales, zero_points=ours.zero_points, kept=ours.kept) == real, (cfg, fmt)
    assert ours.params == sum(p.numel() for p in model.parameters())  # element counts too (quantized shape = logical)


@pytest.mark.parametrize("family", sorted(PRESET_FAMILIES))
def test_bytes_equal_torchao_storage(family):
    @settings(max_examples=N, deadline=None)
    @given(small(family), st.sampled_from(["float32", "bfloat16", "float16", "int8", "int4"]),
           st.sampled_from(["float32", "bfloat16"]), st.sampled_from([8, 16, 32]), st.booleans(),
           st.sampled_from(["none", "classification", "token", "mlm"]))
    def run(cfg, fmt, dtype, g, qe, head):
        check(cfg, fmt, dtype, g, qe, head)

    run()


@pytest.mark.parametrize("family", sorted(DECODER_FAMILIES))
def test_decoder_bytes_equal_torchao_storage(family):
    """A decoder's weights in every format equal what torchao stores, on 8 seeded small models per family (the base
    model or the causal LM, its output projection tied or not, grouped-query heads, Gemma-3's layer pattern):
    quantized, a tied output projection is a copy of its own beside the token table, and GPT-2's Conv1D projections,
    which are no nn.Linear, stay in the base dtype."""
    import random

    from test_decoders import small_config
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM
    from transformers.utils import logging

    logging.set_verbosity_error()
    for i in range(8):
        rng = random.Random(f"serving-{family}-{i}")
        cfg = small_config(rng, family, 3).replace(tied=rng.random() < 0.5)
        fmt = rng.choice(["bfloat16", "int8", "int4", "int4"])
        head = rng.choice([CAUSAL_LM, "none"])
        qe, g = rng.random() < 0.5, rng.choice([2, 4, 8])
        model = (AutoModelForCausalLM if head == CAUSAL_LM else AutoModel).from_config(AutoConfig.for_model(**cfg.to_hf()))
        check(cfg, fmt, rng.choice(["float32", "bfloat16"]), g, qe, head, model)
    if family == "gpt2":  # nothing of GPT-2's layers is quantized: its tables and a tied head's copy at most
        cfg = DECODER_PRESETS["gpt2"].cfg
        b = weight_bytes(cfg, "int8", dtype="bfloat16", head=CAUSAL_LM)
        assert b.quantized_params == cfg.vocab_size * cfg.hidden_dim  # the output projection's copy alone


@pytest.mark.parametrize("fmt", ["int8", "int4"])
def test_every_family_with_the_tied_mlm_decoder(fmt):
    """The MLM decoder shares the embedding table; torchao quantizes the decoder's copy and keeps the table."""
    for fam in sorted(PRESET_FAMILIES):
        cfg = PRESETS[PRESET_FAMILIES[fam][0]]
        kw = dict(vocab_size=50, hidden_dim=64, num_heads=2, num_layers=2, intermediate_dim=64, max_position=16)
        kw["embedding_dim"] = 32 if fam in ("albert", "electra", "deberta-v2") else 64
        check(cfg.replace(**kw), fmt, "float32", 32, False, "mlm")


def test_bert_base_against_the_divide_by_rule():
    cfg = PRESETS["bert-base"]
    f32 = weight_bytes(cfg, "float32")
    assert f32.weights == approximate_bytes(cfg, "float32")
    i8 = weight_bytes(cfg, "int8", dtype="float32")
    # embeddings (V+P+T)·H float32 stay: far above params ÷ 4 (accelerate's int8)
    assert i8.weights > approximate_bytes(cfg, "int8")
    i8e = weight_bytes(cfg, "int8", dtype="float32", quantize_embeddings=True)
    assert i8e.zero_points == i8e.scales // 4  # one float32 scale and one int8 zero point per row
    i4 = weight_bytes(cfg, "int4", dtype="bfloat16", group_size=128)
    assert i4.data == i4.quantized_params  # CPU int4 keeps one byte per value (IntxUnpackedToInt8Tensor)
    packed = weight_bytes(cfg, "int4-packed", dtype="bfloat16", group_size=128)
    assert packed.data * 2 == packed.quantized_params and not packed.buildable_on_cpu


def test_int4_group_size_must_divide_k_as_torchao_asserts():
    import torch

    cfg = PRESETS["bert-base"].replace(vocab_size=40, hidden_dim=48, num_heads=2, num_layers=1, intermediate_dim=96,
                                       embedding_dim=48, max_position=8)
    with pytest.raises(ValueError, match="group_size 32 must divide.*K=48.*divides 48"):
        weight_bytes(cfg, "int4", group_size=32)
    with pytest.raises(AssertionError, match="divisible"):  # torchao's own refusal, the reason for ours
        quantize(task_model(cfg, "none", 2, "cpu").to(torch.float32), "int4", group_size=32)
    check(cfg, "int4", "float32", 16, True, "none")  # 16 divides 48 and 96


def test_int4_packed_cannot_be_built_on_this_cpu():
    """torchao 0.18's Int4WeightOnlyConfig has no CPU path: the plain layout needs mslk, the tinygemm one CUDA."""
    import torch

    from albert_core.estimate.serving import quiet_torchao

    quiet_torchao()
    from torchao.quantization import Int4WeightOnlyConfig, quantize_

    for packing, dtype in (("plain", torch.bfloat16), ("tile_packed_to_4d", torch.bfloat16), ("plain_int32", torch.bfloat16)):
        with pytest.raises((ImportError, AssertionError, NotImplementedError, RuntimeError)):
            quantize_(torch.nn.Sequential(torch.nn.Linear(64, 32)).to(dtype),
                      Int4WeightOnlyConfig(group_size=32, int4_packing_format=packing))
    with pytest.raises(ValueError, match="int8 and int4 on the CPU"):
        quantize(torch.nn.Linear(64, 32), "int4-packed")


def test_bad_input_says_what_to_change():
    cfg = PRESETS["bert-base"]
    with pytest.raises(ValueError, match="serving format must be one of"):
        weight_bytes(cfg, "int3")
    with pytest.raises(ValueError, match="group_size must be a whole number"):
        weight_bytes(cfg, "int4", group_size=0)
    with pytest.raises(ValueError, match="set dtype to bfloat16"):
        weight_bytes(cfg, "int4-packed", dtype="float32")
    assert set(FORMATS) >= {"float32", "bfloat16", "int8", "int4"}


QUIET = ("import logging, sys; logging.basicConfig(stream=sys.stderr, level=logging.DEBUG); {pre}"
         "import torchao")


@pytest.mark.parametrize("quiet", [False, True])
def test_torchao_library_messages_stay_out_of_the_log(quiet):
    """On a CPU-only machine torchao logs a failure for each CUDA extension it tries; quiet_torchao drops them."""
    pre = "from albert_core.estimate.serving import quiet_torchao; quiet_torchao(); " if quiet else ""
    r = subprocess.run([sys.executable, "-c", QUIET.format(pre=pre)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    noisy = "Failed to load" in r.stderr or "is an Enum subclass" in r.stderr
    assert noisy != quiet, r.stderr[-2000:]


def test_format_table_rows_are_weight_bytes():
    from albert_core.estimate.serving import format_table

    cfg = PRESETS["distilbert-base-uncased"]
    df = format_table(cfg, ("float32", "int8", "int4", "int4-packed"), dtype="float32", group_size=96,
                      quantize_embeddings=True)
    for row in df.to_dict("records"):
        b = weight_bytes(cfg, row["format"], dtype=row["dtype"], group_size=96, quantize_embeddings=True)
        assert type(row["weights"]) is int and row["weights"] == b.weights == b.to_json()["weights"]
        assert row["approx"] == approximate_bytes(cfg, row["format"])
    bad = format_table(cfg, ("int4",), group_size=100)  # 100 divides neither 768 nor 3072
    assert bad["weights"][0] is None and "group_size 100 must divide" in bad["error"][0]


@pytest.mark.parametrize("sharing", ["none", "attention", "ffn", "all"])
def test_shared_layouts_store_each_tensor_once(sharing):
    """ALBERT's cross-layer sharing at serving time: one stored copy per group, quantized once."""
    from albert_core.estimate.params import count_parameters

    cfg = PRESETS["albert-base"].replace(sharing=sharing, num_groups=2 if sharing != "none" else 1)
    assert weight_bytes(cfg, "float32").weights == 4 * count_parameters(cfg).total
    i8 = weight_bytes(cfg, "int8")
    assert i8.params == count_parameters(cfg).total
    if sharing in ("none", "all"):  # layouts transformers builds: torchao's storage agrees
        check(cfg.replace(vocab_size=64, max_position=16, num_layers=4), "int8", "float32", 32, True, "none")


def test_a_model_build_logs_nothing_from_torchao():
    """transformers imports torchao on every model build where it is installed; models.hf_model keeps it quiet."""
    code = ("import logging, sys; logging.basicConfig(stream=sys.stderr, level=logging.INFO); "
            "from albert_core.engine.models import hf_model; from albert_core.presets import PRESETS; "
            "hf_model(PRESETS['bert-base']); assert 'torchao' in sys.modules")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Failed to load" not in r.stderr and "is an Enum subclass" not in r.stderr, r.stderr[-2000:]


@pytest.mark.parametrize("family", sorted(PRESET_FAMILIES))
def test_module_counts_equal_the_listed_modules_in_every_sharing_layout(family):
    """weight_bytes sums model_module_counts (each layer module with its copies, never walking the depth): the same
    modules, shape by shape, as model_modules lists one by one, for every family, sharing mode, group and head."""
    from collections import Counter

    from albert_core.estimate.heads import HEADS
    from albert_core.estimate.hf_modules import model_module_counts, model_modules

    @settings(max_examples=N, deadline=None)
    @given(small(family), st.sampled_from(["none", "attention", "ffn", "all"]), st.sampled_from(HEADS),
           st.integers(1, 3))
    def run(cfg, sharing, head, inner):
        L = cfg.num_layers
        cfg = cfg.replace(sharing=sharing, inner_group_num=inner, num_groups=1 if sharing == "none" else
                          max(g for g in (1, 2, 3) if L % g == 0))
        key = lambda m: (m.kind, m.n_in, m.n_out, m.bias, m.tied)  # noqa: E731
        listed = Counter(key(m) for m in model_modules(cfg, head, 3))
        counted: Counter = Counter()
        for m, n in model_module_counts(cfg, head, 3):
            counted[key(m)] += n
        assert counted == listed

    run()


def test_weight_bytes_at_any_depth_are_the_per_layer_bytes_times_the_layers():
    """A 4,194,304-application config (the depth a link may carry) is counted without walking its layers."""
    one = PRESETS["electra-base-discriminator"]
    deep = one.replace(num_layers=4096, inner_group_num=1024)
    for fmt in ("bfloat16", "int8", "int4"):
        per_layer = (weight_bytes(one.replace(num_layers=2), fmt, dtype="bfloat16").weights
                     - weight_bytes(one.replace(num_layers=1), fmt, dtype="bfloat16").weights)
        assert weight_bytes(deep, fmt, dtype="bfloat16").weights == (weight_bytes(one.replace(num_layers=1), fmt, dtype="bfloat16").weights
                                                                     + (4096 * 1024 - 1) * per_layer)


def test_int4_groups_are_the_group_sizes_weight_bytes_takes():
    """int4_groups names exactly the group sizes for which weight_bytes (and torchao) take every quantized width."""
    from albert_core.estimate.serving import INT4_GROUP_SIZES, int4_groups

    cases = [(p.cfg, h, qe) for p in DECODER_PRESETS.values() for h in (CAUSAL_LM, "none") for qe in (False, True)]
    cases += [(PRESETS[n], "none", qe) for n in ("bert-base", "albert-base", "deberta-v3-base") for qe in (False, True)]
    for cfg, head, qe in cases:
        taken = []
        for g in INT4_GROUP_SIZES:
            try:
                weight_bytes(cfg, "int4", dtype="bfloat16", group_size=g, head=head, quantize_embeddings=qe)
                taken.append(g)
            except ValueError as e:
                assert "must divide" in str(e)
        assert int4_groups(cfg, head, quantize_embeddings=qe) == tuple(taken), (cfg.name, head, qe)
    assert int4_groups(DECODER_PRESETS["SmolLM2-135M"].cfg, CAUSAL_LM) == (32, 64)  # 128 does not divide 576
