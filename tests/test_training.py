"""training_memory: parts sum exactly; bytes per parameter as in the papers; optimizer state as torch keeps it."""

import pytest

from albert_core.config import ModelConfig
from albert_core.estimate.activations import activation_memory
from albert_core.estimate.params import count_parameters
from albert_core.presets import PRESETS
from albert_core.step.training import optimizer_state_elements, parameter_shapes, training_memory
from albert_core.workload import Workload


@pytest.mark.parametrize("name", list(PRESETS))
@pytest.mark.parametrize("precision", ["float32", "bfloat16", "mixed_bf16"])
@pytest.mark.parametrize("optimizer", ["adamw", "sgd", "adafactor"])
def test_parts_sum_to_total(name, precision, optimizer):
    t = training_memory(PRESETS[name], Workload(batch_size=4, seq_len=256, precision=precision, optimizer=optimizer,
                                                checkpointing=True))
    parts = [t.weights, t.gradients, t.optimizer, t.master_weights, t.activations]
    assert all(isinstance(p, int) for p in parts)
    assert sum(parts) == t.total
    assert sum(t.breakdown()["bytes"]) == t.total
    assert t.activations == t.activations_saved + t.activations_recompute


def test_bytes_per_parameter():
    cfg = PRESETS["bert-base"]
    n = count_parameters(cfg).total
    f32 = training_memory(cfg, Workload(batch_size=1, seq_len=8, precision="float32", optimizer="adamw"))
    assert (f32.weights, f32.gradients, f32.optimizer, f32.master_weights) == (4 * n, 4 * n, 8 * n, 0)
    master_w = Workload(batch_size=1, seq_len=8, precision="bf16_master", optimizer="adamw")
    master = training_memory(cfg, master_w)
    # ZeRO paper Sec. 3.1: 2Ψ + 2Ψ + 12Ψ (fp32 master + momentum + variance) = 16Ψ
    assert (master.weights, master.gradients, master.optimizer, master.master_weights) == (2 * n, 2 * n, 8 * n, 4 * n)
    pure = training_memory(cfg, Workload(batch_size=1, seq_len=8, precision="bfloat16", optimizer="sgd"))
    assert (pure.weights, pure.gradients, pure.optimizer, pure.master_weights) == (2 * n, 2 * n, 2 * n, 0)
    # a master copy's forward is its cast model's: bfloat16 weights and activations
    assert master.activations == activation_memory(cfg, master_w.replace(precision="bfloat16")).total
    # autocast over float32 weights: those weights are the master copy (4Ψ + 4Ψ + 8Ψ), the forward autocast's
    amp_w = Workload(batch_size=1, seq_len=8, precision="mixed_bf16", optimizer="adamw")
    amp = training_memory(cfg, amp_w)
    assert (amp.weights, amp.gradients, amp.optimizer, amp.master_weights) == (4 * n, 4 * n, 8 * n, 0)
    assert amp.activations == activation_memory(cfg, amp_w).total != master.activations


@pytest.mark.parametrize("precision", ["float32", "bfloat16", "mixed_bf16", "mixed_fp16", "bf16_master",
                                       "fp16_master"])
def test_each_precision_has_one_meaning_in_the_parts_and_the_peak(precision):
    """The sum of the parts and the step's peak hold the same weights, state and master copy: the peak's
    parameters, master weights and optimizer state are the parts' weights, master weights and optimizer state."""
    from albert_core.step.peak import step_peak

    cfg = PRESETS["albert-base"]
    t = training_memory(cfg, Workload(batch_size=8, seq_len=512, precision=precision, attention="eager", device="cpu"))
    s = t.at_peak
    assert (s["parameters"], s["master weights"], s["optimizer state"]) == (t.weights, t.master_weights, t.optimizer)
    est = step_peak(cfg, Workload(8, 512, precision, "eager", device="cpu"))
    opt = next(c for c in est.candidates if c.name == "optimizer step").at  # every gradient made
    assert opt["gradients"] == t.gradients + (4 * t.trainable if precision.endswith("master") else 0)
    assert est.peak == t.peak


def test_autocast_sharing_cuts_the_cached_casts():
    """Under autocast the Linear layers save autocast's cached 16-bit copy of each stored weight (one per stored
    weight, activations.py): ALBERT's sharing saves 2 (L - 1)(4H² + 2HI) bytes of them, the master-copy forward
    (the model cast, no cache) none."""
    shared = PRESETS["albert-base"]
    H, I, L = shared.hidden_dim, shared.intermediate_dim, shared.num_layers
    kw = dict(batch_size=8, seq_len=512, attention="eager")
    unshared = shared.replace(sharing="none")
    amp = [training_memory(c, Workload(precision="mixed_bf16", **kw)).activations for c in (shared, unshared)]
    cast = [training_memory(c, Workload(precision="bf16_master", **kw)).activations for c in (shared, unshared)]
    assert amp[1] - amp[0] == 2 * (L - 1) * (4 * H * H + 2 * H * I)
    assert cast[0] == cast[1]


@pytest.mark.parametrize("N", [2, 3, 8])
def test_zero_stages(N):
    cfg = PRESETS["albert-large"]
    n = count_parameters(cfg).total
    kw = dict(batch_size=2, seq_len=128, precision="bf16_master", optimizer="adamw", num_gpus=N)
    dp = training_memory(cfg, Workload(sharding="none", **kw))
    z1 = training_memory(cfg, Workload(sharding="zero1", **kw))
    z2 = training_memory(cfg, Workload(sharding="zero2", **kw))
    z3 = training_memory(cfg, Workload(sharding="zero3", **kw))
    fsdp = training_memory(cfg, Workload(sharding="fsdp", **kw))
    per = -(-n // N)  # ceil(n / N) elements of each partitioned buffer
    assert (dp.weights, dp.gradients, dp.optimizer, dp.master_weights) == (2 * n, 2 * n, 8 * n, 4 * n)
    assert (z1.weights, z1.gradients, z1.optimizer, z1.master_weights) == (2 * n, 2 * n, 8 * per, 4 * per)
    assert (z2.gradients, z2.weights) == (2 * per, 2 * n)
    assert (z3.weights, z3.gradients) == (2 * per, 2 * per)
    assert fsdp.total == z3.total
    assert dp.activations == z1.activations == z2.activations == z3.activations  # ZeRO does not shard activations
    assert dp.total > z1.total > z2.total > z3.total
    for z in (z1, z2, z3):  # the peak's master copy sharded from stage 1 (with the optimizer state)
        assert z.at_peak["master weights"] == 4 * per
        assert z.peak < dp.peak


def test_sharing_cuts_state_not_activations():
    shared = PRESETS["albert-base"]
    unshared = shared.replace(sharing="none")
    a = training_memory(shared, Workload(batch_size=8, seq_len=512, precision="bf16_master"))
    b = training_memory(unshared, Workload(batch_size=8, seq_len=512, precision="bf16_master"))
    for part in ("weights", "gradients", "optimizer", "master_weights"):
        assert getattr(a, part) < getattr(b, part)
    assert a.activations == b.activations


def _tiny():
    return ModelConfig(name="t", family="albert", vocab_size=31, embedding_dim=6, hidden_dim=8, num_layers=2,
                       num_heads=2, intermediate_dim=12, max_position=10, sharing="attention")


def test_parameter_shapes_match_the_reference_model():
    from albert_core.engine.models import reference_model

    cfg = _tiny()
    model = reference_model(cfg, device="meta")
    assert sorted(tuple(p.shape) for p in model.parameters()) == sorted(parameter_shapes(cfg))


@pytest.mark.parametrize("name,cls,kwargs", [
    ("adamw", "AdamW", {}), ("sgd", "SGD", {"momentum": 0.9}), ("adafactor", "Adafactor", {}),
])
def test_optimizer_state_matches_torch(name, cls, kwargs):
    """Run one real step and count the elements of every state tensor torch.optim keeps (not 'step')."""
    import torch

    from albert_core.engine.models import reference_model

    cfg = _tiny()
    model = reference_model(cfg, device="cpu")
    opt = getattr(torch.optim, cls)(model.parameters(), lr=1e-3, **kwargs)
    seq, pooled = model(torch.randint(0, cfg.vocab_size, (2, 5)))
    (seq.sum() + pooled.sum()).backward()
    opt.step()
    elems = sum(v.numel() for st in opt.state.values() for k, v in st.items()
                if torch.is_tensor(v) and k != "step")
    assert elems == optimizer_state_elements(cfg, name)


@pytest.mark.parametrize("bad", [dict(precision="fp8"), dict(optimizer="lion"), dict(sharding="zero4"),
                                 dict(num_gpus=0), dict(seq_len=10_000)])
def test_bad_input(bad):
    kw = dict(batch_size=1, seq_len=8)
    kw.update(bad)
    with pytest.raises(ValueError):
        training_memory(PRESETS["bert-base"], Workload(**kw))


# ---- fine-tuning modes, heads and the step's peak -------------------------------------------------------------
MODES = ["full", "frozen-embeddings", "frozen-layers:2", "lora", "bitfit"]


@pytest.mark.parametrize("name", ["bert-base", "albert-base", "distilbert-base-uncased", "deberta-v3-base"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("precision,optimizer", [("mixed_bf16", "adamw"), ("bf16_master", "adamw"),
                                                ("float32", "adafactor"), ("bfloat16", "sgd")])
def test_modes_count_state_for_the_trainable_tensors_only(name, mode, precision, optimizer):
    from albert_core.choices import LoraSpec
    from albert_core.estimate.finetune import state_elements, tensors, trainable

    cfg = PRESETS[name]
    lora = LoraSpec(r=4, targets=("query", "value") if name == "albert-base" else
                    ("q_lin", "v_lin") if name.startswith("distil") else None)
    kw = dict(mode=mode, head="classification", num_labels=3, lora=lora)
    t = training_memory(cfg, Workload(batch_size=2, seq_len=64, precision=precision, optimizer=optimizer, **kw))
    ts = tensors(cfg, mode, head="classification", num_labels=3, lora=lora if mode == "lora" else None)
    el = state_elements(ts, optimizer)
    wb, sb = {"float32": (4, 4), "mixed_bf16": (4, 4), "bf16_master": (2, 4), "bfloat16": (2, 2)}[precision]
    count = trainable(cfg, mode, head="classification", num_labels=3, lora=lora if mode == "lora" else None)
    assert t.trainable == count.trainable == el["gradients"]
    assert t.parameters == count.total  # base + head + adapters (+ peft's trainable copies)
    assert (t.weights, t.gradients, t.optimizer) == (wb * count.total, wb * el["gradients"], sb * el["optimizer"])
    assert t.master_weights == (4 * count.trainable if precision.endswith("master") else 0)
    if mode != "full":
        full = training_memory(cfg, Workload(batch_size=2, seq_len=64, precision=precision, optimizer=optimizer,
                                             head="classification", num_labels=3))
        assert t.gradients < full.gradients and t.optimizer < full.optimizer
        assert t.peak < full.peak  # less state alive all step long


@pytest.mark.parametrize("name", ["bert-base", "roberta-base", "electra-small-discriminator"])
@pytest.mark.parametrize("precision", ["float32", "mixed_bf16"])
@pytest.mark.parametrize("mode", ["full", "lora"])
def test_the_peak_is_step_peaks_with_the_same_settings(name, precision, mode):
    from albert_core.step.peak import step_peak

    cfg = PRESETS[name]
    kw = dict(batch_size=4, seq_len=128, optimizer="adamw", attention="eager", checkpointing=True, device="cpu",
              mode=mode, head="token", num_labels=5)
    t = training_memory(cfg, Workload(precision=precision, **kw))
    e = step_peak(cfg, Workload(precision=precision, **kw))
    assert (t.peak, t.peak_phase, t.peak_moment, t.at_peak) == (e.peak, e.phase, e.moment, e.at_peak)
    assert sum(t.at_peak.values()) == t.peak
    assert training_memory(cfg, Workload(precision=precision, **kw), with_peak=False).peak == 0


@pytest.mark.parametrize("N", [2, 3, 8])
@pytest.mark.parametrize("mode", ["full", "frozen-embeddings"])
def test_sharding_divides_the_peaks_categories(N, mode):
    """ZeRO Sec. 5: stage 1 the optimizer state, 2 + gradients, 3 + parameters, ceil(elements / N) each; stage 3's
    gathered unit is bert-base's embeddings + pooler (FSDP's root unit), larger than one layer."""
    from albert_core.step.peak import step_peak

    cfg = PRESETS["bert-base"]
    kw = dict(batch_size=2, seq_len=128, precision="float32", optimizer="adamw", attention="eager", mode=mode)
    e = step_peak(cfg, Workload(2, 128, "float32", "eager", device="cuda", optimizer="adamw", mode=mode))
    state, params = e.at_start["optimizer state"], e.at_start["parameters"]
    z = {s: training_memory(cfg, Workload(num_gpus=N, sharding=s,
                                          **kw)) for s in ("none", "zero1", "zero2", "zero3", "fsdp")}
    per = lambda b: 4 * -(-(b // 4) // N)  # noqa: E731  float32 elements, ceil-divided
    assert z["none"].peak == e.peak
    assert z["zero1"].at_peak["optimizer state"] == per(state)
    assert z["zero3"].at_peak["parameters"] == per(params)
    c = count_parameters(cfg)
    assert z["zero3"].at_peak["gathered unit (ZeRO-3)"] == 4 * (c.total - c.all_layers)
    assert z["none"].peak > z["zero1"].peak >= z["zero2"].peak > z["zero3"].peak
    assert z["fsdp"].peak == z["zero3"].peak
    for s in ("zero1", "zero2", "zero3"):
        assert sum(z[s].at_peak.values()) == z[s].peak
    single = training_memory(cfg, Workload(num_gpus=1, sharding="zero3", **kw))
    assert single.peak == z["none"].peak  # one GPU: nothing to partition


def test_modes_bad_input_says_what_to_change():
    with pytest.raises(ValueError, match="peft has no default LoRA targets"):
        training_memory(PRESETS["albert-base"], Workload(batch_size=1, seq_len=8, mode="lora"))
    with pytest.raises(ValueError, match="from 0 to 12"):
        training_memory(PRESETS["bert-base"], Workload(batch_size=1, seq_len=8, mode="frozen-layers:13"))


def test_beyond_the_layer_limit_the_planner_uses_the_sum():
    """A config deeper than PEAK_MAX_LAYERS: no peak (its replay would take seconds per call), planned on the sum."""
    from albert_core.step.fit import step_bytes
    from albert_core.step.training import PEAK_MAX_LAYERS

    kw = dict(batch_size=1, seq_len=64)
    deep = PRESETS["bert-base"].replace(num_layers=PEAK_MAX_LAYERS + 1)
    edge = PRESETS["bert-base"].replace(num_layers=PEAK_MAX_LAYERS)
    t, e = training_memory(deep, Workload(**kw)), training_memory(edge, Workload(**kw))
    assert (t.peak_modelled, t.peak, t.planned) == (False, 0, t.total) and step_bytes(deep, Workload(**kw)) == t.total
    assert e.peak_modelled and e.planned == e.peak > 0 and step_bytes(edge, Workload(**kw)) == e.peak
