"""Fine-tuning modes: finetune.trainable against the models PyTorch and peft really build.

Every family, random config.json dicts (test_families_params' strategies), every head and mode; LoRA
through peft's get_peft_model (its own default targets where we ask for none) and its
get_nb_trainable_parameters; the other modes with requires_grad set on the transformers model by the
modules' own attributes (embeddings, encoder.layer[:K], albert_layer_groups[g]).
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_families_params import STRATEGIES

from albert_core.choices import LoraSpec, parse_mode
from albert_core.engine.task_model import build, count_built
from albert_core.estimate.finetune import (
    PEFT_DEFAULT_TARGETS,
    default_targets,
    lora_candidates,
    mode_table,
    parse_targets,
    tensors,
    trainable,
)
from albert_core.estimate.heads import HEADS, head_parameters
from albert_core.formats.hf import from_hf_config
from albert_core.presets import PRESETS

N = 12  # random configs per family and mode


def test_default_targets_are_peft_s():
    """Our copy of peft's mapping, for every model type the families read, equals the installed peft's."""
    from albert_core.estimate.serving import quiet_torchao
    from albert_core.families import model_types

    quiet_torchao()
    from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as M

    assert set(model_types()) == set(PEFT_DEFAULT_TARGETS)
    for t in model_types():
        assert PEFT_DEFAULT_TARGETS[t] == (tuple(M[t]) if t in M else None), t


def check(cfg, mode, head, labels, lora=None):
    t = trainable(cfg, mode, head=head, num_labels=labels, lora=lora)
    model = build(cfg, mode, head=head, num_labels=labels, lora=lora)
    assert (t.trainable, t.total) == count_built(model), (cfg, mode, head, lora, t)
    real = {n: (tuple(p.shape), p.requires_grad) for n, p in model.named_parameters()}
    ours = {x.name: (x.shape, x.trainable) for x in tensors(cfg, mode, head=head, num_labels=labels, lora=lora)}
    assert ours == real, sorted(set(ours.items()) ^ set(real.items()))[:6]  # every tensor: name, shape, trainable
    if mode == "lora":
        assert (t.trainable, t.total) == model.get_nb_trainable_parameters()
        assert t.total - t.adapter - t.saved_copies == head_parameters(cfg, head, labels).total
        lora_numel = sum(p.numel() for n, p in model.named_parameters() if ".lora_" in n)
        biases = sum(p.numel() for n, p in model.named_parameters() if p.requires_grad and n.endswith(".bias")
                     and ".lora_" not in n and "modules_to_save" not in n)
        assert biases == (0 if (lora or LoraSpec()).bias == "none" else t.trainable - t.adapter - t.saved_copies)
        assert t.adapter == lora_numel and sum(t.trainable_by_part.values()) == t.trainable
    else:
        assert t.total == head_parameters(cfg, head, labels).total
        assert sum(t.trainable_by_part.values()) == t.trainable
    return t


@st.composite
def setups(draw, fam):
    d = draw(STRATEGIES[fam]())
    cfg = from_hf_config(d)
    head = draw(st.sampled_from(HEADS))
    mode = draw(st.sampled_from(["full", "frozen-embeddings", "frozen-layers", "bitfit", "lora"]))
    lora = None
    if mode == "frozen-layers":
        mode = f"frozen-layers:{draw(st.integers(0, cfg.num_layers))}"
    elif mode == "lora":
        names = [n for n in lora_candidates(cfg) if n != "pooler"]  # ALBERT's pooler: dropped by some heads
        has_default = PEFT_DEFAULT_TARGETS[cfg.family] is not None
        targets = None if has_default and draw(st.booleans()) else tuple(
            draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True)))
        lora = LoraSpec(r=draw(st.integers(1, 16)), lora_alpha=draw(st.sampled_from([8, 16, 32])),
                        lora_dropout=draw(st.sampled_from([0.0, 0.1])), targets=targets,
                        bias=draw(st.sampled_from(["none", "none", "all", "lora_only"])))
    return cfg, mode, head, draw(st.integers(1, 9)), lora


@pytest.mark.parametrize("family", sorted(STRATEGIES))
def test_trainable_equals_the_built_model(family):
    @settings(max_examples=5 * N, deadline=None)
    @given(setups(family))
    def run(s):
        check(*s)

    run()


TARGETS = {"bert": None, "albert": ("query", "value"), "roberta": None, "distilbert": ("q_lin", "v_lin"),
           "electra": None, "deberta-v2": None, "modernbert": ("Wqkv",),
           "mpnet": ("q", "v")}


@pytest.mark.parametrize("preset", ["bert-base", "albert-base", "xlm-roberta-base", "distilbert-base-uncased",
                                    "electra-small-discriminator", "deberta-v3-base", "ModernBERT-base",
                                    "all-mpnet-base-v2"])
def test_presets_every_mode_and_head(preset):
    cfg = PRESETS[preset]
    for head in HEADS:
        for mode in ("full", "frozen-embeddings", "frozen-layers:2", "bitfit", "lora"):
            check(cfg, mode, head, 3, LoraSpec(targets=TARGETS[cfg.family]))


def test_bert_base_lora_is_r_times_in_plus_out_on_query_and_value():
    cfg = PRESETS["bert-base"]
    t = trainable(cfg, "lora", lora=LoraSpec(r=8, targets=("query", "value")))
    H = cfg.hidden_dim
    assert t.adapter == cfg.num_layers * 2 * 8 * (H + H)  # lora_A r×H + lora_B H×r, two targets per layer
    assert t.trainable == t.adapter and t.frozen == head_parameters(cfg).total
    cls = trainable(cfg, "lora", head="classification", num_labels=2)  # peft's default targets: query, value
    assert cls.targets == ("query", "value")
    assert cls.saved_copies == H * 2 + 2 and cls.trainable == t.adapter + cls.saved_copies


def test_albert_shared_layers_are_adapted_once():
    """One group of one layer: LoRA adds r(in+out) per target once, however many layers run it; peft agrees."""
    base = PRESETS["albert-base"]
    for groups, inner in ((1, 1), (2, 1), (1, 2)):
        cfg = base.replace(num_groups=groups, inner_group_num=inner, num_layers=4)
        t = check(cfg, "lora", "none", 2, LoraSpec(r=4, targets=("query", "value")))
        assert t.adapter == groups * inner * 2 * 4 * (cfg.hidden_dim * 2)
        assert len(t.adapted) == groups * inner * 2


def test_albert_frozen_layers_freeze_whole_groups():
    cfg = PRESETS["albert-base"]  # one group: layer 0 runs it, so freezing layer 0 freezes all 12
    one = trainable(cfg, "frozen-layers:1")
    assert one.trainable_by_part["layers"] == 0
    assert one.trainable == trainable(cfg, "frozen-layers:12").trainable
    two = cfg.replace(num_groups=2, num_layers=4)  # layers 0-1 run group 0, layers 2-3 group 1
    assert trainable(two, "frozen-layers:2").trainable == trainable(two, "frozen-layers:1").trainable
    assert trainable(two, "frozen-layers:3").trainable_by_part["layers"] == 0
    check(two, "frozen-layers:3", "classification", 2)


def test_frozen_embeddings_keep_albert_projection_trainable():
    cfg = PRESETS["albert-base"]
    t = trainable(cfg, "frozen-embeddings")
    E, H = cfg.embedding_dim, cfg.hidden_dim
    assert t.trainable_by_part["other"] == E * H + H + H * H + H  # embedding_hidden_mapping_in and the pooler


def test_errors_say_what_to_change():
    cfg = PRESETS["albert-base"]
    with pytest.raises(ValueError, match="no default LoRA targets for model type 'albert'.*query,value"):
        default_targets(cfg)
    with pytest.raises(ValueError, match="no default LoRA targets"):
        trainable(cfg, "lora")
    with pytest.raises(ValueError, match="match no module.*query"):
        trainable(cfg, "lora", lora=LoraSpec(targets=("q_lin",)))
    with pytest.raises(ValueError, match="LayerNorm"):
        trainable(cfg, "lora", lora=LoraSpec(targets=("LayerNorm",)))
    with pytest.raises(ValueError, match="decoder.*tied"):
        trainable(cfg, "lora", head="mlm", lora=LoraSpec(targets=("decoder",)))
    with pytest.raises(ValueError, match="modules_to_save"):
        trainable(PRESETS["bert-base"], "lora", head="token", lora=LoraSpec(targets=("classifier",)))
    with pytest.raises(ValueError, match="from 0 to 12"):
        trainable(cfg, "frozen-layers:13")
    with pytest.raises(ValueError, match="builds sharing 'all' of family 'bert' unshared"):
        build(PRESETS["bert-base"].replace(sharing="all"), "full")
    with pytest.raises(ValueError, match="rank r"):
        LoraSpec(r=0)
    with pytest.raises(ValueError, match="lora_dropout"):
        LoraSpec(lora_dropout=1.0)
    with pytest.raises(ValueError, match="frozen-layers:K"):
        parse_mode("frozen")
    with pytest.raises(ValueError, match="like 'frozen-layers:4'"):
        parse_mode("frozen-layers:x")
    assert parse_mode("frozen-layers:3") == ("frozen-layers", 3) and parse_mode("lora") == ("lora", 0)
    assert parse_targets(" query, value ") == ("query", "value")


def test_mode_table_and_json():
    cfg = PRESETS["albert-base"]
    df = mode_table(cfg, ("full", "frozen-layers:1", "lora", "bitfit"), head="classification", num_labels=3)
    assert list(df["mode"]) == ["full", "frozen-layers:1", "lora", "bitfit"]
    for row in df.to_dict("records"):
        if row["mode"] == "lora":  # ALBERT: peft has no default targets, and the table says so
            assert row["trainable"] is None and "no default LoRA targets" in row["error"]
            continue
        t = trainable(cfg, row["mode"], head="classification", num_labels=3)
        assert type(row["trainable"]) is int and (row["trainable"], row["total"]) == (t.trainable, t.total)
    j = trainable(PRESETS["bert-base"], "lora", lora=LoraSpec(r=4)).to_json()
    assert j["trainable"] == j["lora_adapter"] and j["lora"]["targets"] == ["query", "value"]
    assert j["total"] == j["trainable"] + j["frozen"]


def test_shared_layouts_adapt_and_freeze_each_stored_tensor_once():
    """Sharing only the explorer models (BERT sharing attention, ...): LoRA adapts each stored copy once, and
    frozen-layers:K freezes what the first K steps run, shared copies included."""
    from albert_core.estimate.params import stored_copies

    bert = PRESETS["bert-base"]
    for sharing in ("none", "attention", "ffn", "all"):
        cfg = bert.replace(sharing=sharing, num_groups=3)
        t = trainable(cfg, "lora", lora=LoraSpec(r=4, targets=("query", "intermediate.dense")))
        H, I = cfg.hidden_dim, cfg.intermediate_dim
        assert t.adapter == 4 * (stored_copies(cfg, "attention") * 2 * H + stored_copies(cfg, "ffn") * (H + I))
        assert t.frozen == head_parameters(cfg).total
        full = trainable(cfg, "frozen-layers:12")
        assert full.trainable_by_part["layers"] == 0 and full.trainable == trainable(cfg, "frozen-layers:12").trainable
        if sharing == "all":  # 12 layers in 3 groups: layer 4 starts the second group
            assert trainable(cfg, "frozen-layers:1").trainable == trainable(cfg, "frozen-layers:4").trainable


def _one_step(model, optimizer, head, vocab):
    """One real forward, backward and optimizer step on the CPU; (gradient elements, state elements)."""
    import torch

    torch.manual_seed(0)
    ids = torch.randint(0, vocab, (2, 6))
    out = model(input_ids=ids)
    loss = out.logits.float().pow(2).mean() if head != "none" else out.last_hidden_state.pow(2).mean()
    if head == "none" and getattr(out, "pooler_output", None) is not None:
        loss = loss + out.pooler_output.pow(2).mean()  # so that every trainable tensor gets a gradient
    loss.backward()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = {"adamw": lambda: torch.optim.AdamW(params), "sgd": lambda: torch.optim.SGD(params, lr=0.1, momentum=0.9),
           "adafactor": lambda: torch.optim.Adafactor(params)}[optimizer]()
    opt.step()
    grads = sum(p.grad.numel() for p in params if p.grad is not None)
    state = sum(v.numel() for st in opt.state.values() for k, v in st.items() if k != "step")
    return grads, state


@pytest.mark.parametrize("optimizer", ["adamw", "sgd", "adafactor"])
@pytest.mark.parametrize("preset", ["bert-base", "albert-base", "deberta-v3-base", "ModernBERT-base"])
def test_gradients_and_optimizer_state_of_the_trainable_tensors(preset, optimizer):
    """Against torch.optim's real state after one step of a small real model, in each mode."""
    from albert_core.estimate.finetune import state_elements

    fam = PRESETS[preset].family
    small = dict(vocab_size=64, hidden_dim=32, num_heads=2, num_layers=2, intermediate_dim=48, max_position=16)
    small["embedding_dim"] = 16 if fam in ("albert", "deberta-v2") else 32
    cfg = PRESETS[preset].replace(**small)
    for mode, head in (("full", "none"), ("frozen-layers:1", "classification"), ("lora", "classification"),
                       ("bitfit", "mlm")):
        lora = LoraSpec(r=2, targets=TARGETS[fam]) if mode == "lora" else None
        model = build(cfg, mode, head=head, num_labels=3, lora=lora, device="cpu")
        ours = state_elements(tensors(cfg, mode, head=head, num_labels=3, lora=lora), optimizer)
        assert (ours["gradients"], ours["optimizer"]) == _one_step(model, optimizer, head, cfg.vocab_size), (mode, head)


@pytest.mark.parametrize("family", sorted(STRATEGIES))
def test_full_fine_tuning_of_the_base_model_equals_its_tensors_by_part(family):
    """trainable(cfg) in full without a head skips the tensor list (closed form less the embedding and other
    modules): it must give what summing tensors(cfg) gives, part by part."""
    @settings(max_examples=N, deadline=None)
    @given(STRATEGIES[family]())
    def run(d):
        cfg = from_hf_config(d)
        listed = {"embeddings": 0, "layers": 0, "other": 0, "head": 0, "adapter": 0}
        for t in tensors(cfg):
            listed[t.part] += t.numel
        fast = trainable(cfg)
        assert fast.trainable_by_part == listed and fast.trainable == fast.model_params == sum(listed.values())
        assert fast.frozen == 0

    run()


def test_a_config_too_deep_to_list_says_what_to_change_and_full_still_counts():
    from albert_core.estimate.finetune import TENSOR_MAX_APPLICATIONS
    from albert_core.estimate.params import count_parameters

    deep = PRESETS["electra-base-discriminator"].replace(num_layers=4096, inner_group_num=1024)  # 4M applications
    assert trainable(deep).trainable == count_parameters(deep).total  # full, no head: any depth
    for mode, head in (("bitfit", "none"), ("full", "classification"), ("lora", "none")):
        with pytest.raises(ValueError, match=r"up to 16,384 layer applications; this config runs 4,194,304 "
                                             r"\(4,096 layers x inner_group_num 1,024\): lower num_layers"):
            trainable(deep, mode, head=head)
    edge = PRESETS["bert-base"].replace(num_layers=TENSOR_MAX_APPLICATIONS)
    assert trainable(edge, "bitfit").trainable > 0  # the bound itself is listed


@pytest.mark.parametrize("name", ["deberta-v3-base", "ModernBERT-base", "distilbert-base-uncased"])
def test_bert_s_target_names_mean_each_family_s_modules(name):
    """issue 29: one LoRA target list for every compared model. query/key/value, which these models' modules never
    are, become the modules of the same meaning (query_proj; q_lin; ModernBERT's fused Wqkv) in the count and in
    the model peft builds; every family's own names stay as given."""
    from albert_core.estimate.finetune import lora_targets
    from albert_core.families import family

    cfg = PRESETS[name].replace(num_layers=2)
    aliases = family(cfg.family).LORA_ALIASES
    linears = set(lora_candidates(cfg))
    assert set(aliases) == {"query", "key", "value"} and not set(aliases) & linears  # never its own module names
    assert all(set(used) <= linears for used in aliases.values())
    mapped = ("query", "value")
    own = tuple(dict.fromkeys(n for t in mapped for n in aliases[t]))
    assert lora_targets(cfg, mapped) == (own, tuple((t, ",".join(aliases[t])) for t in mapped))
    assert lora_targets(cfg, own) == (own, ())  # the family's own names: as given
    given, direct = (trainable(cfg, "lora", head="classification", num_labels=3, lora=LoraSpec(targets=t))
                     for t in (mapped, own))
    assert given.targets == own and (given.trainable, given.adapted) == (direct.trainable, direct.adapted)
    check(cfg, "lora", "classification", 3, LoraSpec(targets=mapped))  # peft's model adapts the same modules


def test_families_with_bert_s_names_keep_them():
    from albert_core.estimate.finetune import lora_targets

    for name in ("bert-base", "albert-base", "roberta-base", "electra-base-discriminator"):
        assert lora_targets(PRESETS[name], ("query", "value")) == (("query", "value"), ())


@pytest.mark.parametrize("family", sorted(STRATEGIES))
def test_layers_are_the_same_at_every_max_position(family):
    """hf_modules.layer_modules and finetune's layer tensors are kept by layers_key, which leaves max_position out
    (the Fit planner asks for a config at a dozen positions): a layer's modules never depend on the positions,
    while the tensors outside the layers (the position table, DeBERTa's rel_embeddings) follow each one."""
    from albert_core.estimate.hf_modules import _layer_modules, layer_modules, named_parameters

    @settings(max_examples=N, deadline=None)
    @given(STRATEGIES[family]().map(from_hf_config), st.integers(2, 5000),
           st.sampled_from(["full", "frozen-layers:1", "bitfit"]))
    def run(cfg, p, mode):
        other = cfg.replace(max_position=p)
        assert other.max_position != cfg.max_position or p == cfg.max_position
        assert layer_modules(cfg) == layer_modules(other) == _layer_modules(other)
        for c in (cfg, other):  # the cached layers inside each config's own list, its own table beside them
            got = [(t.name, t.numel) for t in tensors(c, mode, head="classification")]
            assert got == list(named_parameters(c, "classification").items())

    run()


@pytest.mark.parametrize("family", sorted(STRATEGIES))
def test_element_totals_equal_the_tensor_list_at_every_max_position(family):
    """element_totals (training_memory's counts) keeps the layers' sums by their key, the same at every max_position:
    at each of three positions it equals sum(numel) and state_elements over tensors(), every mode and optimizer."""
    from albert_core.estimate.finetune import element_totals, state_elements

    @settings(max_examples=N, deadline=None)
    @given(setups(family), st.sampled_from(["adamw", "sgd", "adafactor"]), st.integers(1, 300))
    def run(setup, optimizer, grow):
        cfg, mode, head, num_labels, lora = setup
        for p in (cfg.max_position, cfg.max_position + grow, cfg.max_position + 2 * grow):
            c = cfg.replace(max_position=p)
            ts = tensors(c, mode, head=head, num_labels=num_labels, lora=lora)
            el = state_elements(ts, optimizer)
            got = element_totals(c, mode, optimizer, head=head, num_labels=num_labels, lora=lora)
            assert got == (sum(t.numel for t in ts), el["gradients"], el["optimizer"]), (c, mode, head)

    run()
