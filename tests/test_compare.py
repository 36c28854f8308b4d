"""albert_core.step.compare: the side-by-side table, and the HTML report that carries it."""

from dataclasses import fields

import pytest

from albert_core.config import ModelConfig
from albert_core.estimate.activations import activation_memory
from albert_core.estimate.flops import forward_flops
from albert_core.estimate.params import count_parameters
from albert_core.presets import PRESETS
from albert_core.step.compare import OWN, OWN_HEADER, RESULTS, WORKLOAD, Settings, compare_table
from albert_core.step.training import training_memory
from albert_core.workload import Workload

CFGS = (PRESETS["albert-base"].replace(name="mine", max_position=4096), PRESETS["bert-base"], PRESETS["albert-xxlarge"])
S = Settings(batch_size=2, seq_len=1024, attention="sdpa", precision="float32", optimizer="sgd", num_gpus=2,
             sharding="zero2")


def value(df, item, name):
    (v,) = df[(df["item"] == item) & (df["config"] == name)]["value"]
    return v


def test_every_field_of_modelconfig_is_compared():
    df = compare_table(CFGS, S)
    assert list(dict.fromkeys(df[df["section"] == "field"]["item"])) == [f.name for f in fields(ModelConfig)]
    assert list(dict.fromkeys(df["config"])) == [c.name for c in CFGS]
    for c in CFGS:
        assert value(df, "hidden_dim", c.name) == c.hidden_dim and value(df, "family", c.name) == c.family


def test_results_are_albert_cores_numbers():
    """The own facts at each config's own max_position (one sequence, float32, eager), the workload's at its batch ×
    seq_len (clipped to max_position), precision, attention and optimizer: each table under its own settings."""
    df = compare_table(CFGS, S)
    for c in CFGS:
        p = count_parameters(c)
        a = activation_memory(c, Workload(batch_size=1, seq_len=c.max_position, precision="float32", attention="eager"))
        t = training_memory(c, Workload(batch_size=2, seq_len=min(1024, c.max_position), precision="float32",
                                        optimizer="sgd", num_gpus=2, sharding="zero2", attention="sdpa"))
        assert value(df, "total parameters", c.name) == p.total
        assert value(df, "embedding share", c.name) == pytest.approx(p.embedding_pct)
        assert value(df, "weights", c.name) == 4 * p.total
        assert value(df, "activations at max_position", c.name) == a.total
        assert value(df, "of which attention (seq_len²)", c.name) == a.quadratic
        assert value(df, "forward FLOPs per sequence at max_position", c.name) == forward_flops(c, c.max_position).total
        assert value(df, "activations per GPU (saved for backward)", c.name) == t.activations
        assert value(df, "training memory per GPU (sum of parts)", c.name) == t.total
        assert value(df, "training step's peak per GPU", c.name) == t.peak
        assert value(df, "the peak is", c.name) == t.peak_is
        assert value(df, "trainable parameters", c.name) == p.total  # full fine-tuning of the base model
        assert value(df, "forward FLOPs per sequence", c.name) == forward_flops(c, min(1024, c.max_position)).total
    assert {i for i, _ in RESULTS} <= set(df["item"])


def test_no_row_mixes_the_two_tables_settings():
    """issue 29 item 2: the own-max_position rows and the workload rows are two sections (two tables); the own facts
    do not move with the workload, the workload's do; each header says its settings, once."""
    df = compare_table(CFGS, S)
    assert set(df["section"]) == {"field", "own", "workload"}
    assert set(df[df["section"] == "own"]["item"]) == {i for i, _ in OWN}
    assert set(df[df["section"] == "workload"]["item"]) == {i for i, _ in WORKLOAD}
    other = compare_table(CFGS, Settings(batch_size=8, seq_len=256, precision="mixed_bf16"))
    own = df["section"].isin(("field", "own"))
    assert df[own]["value"].tolist() == other[own]["value"].tolist()  # the workload does not reach the first table
    changed = df[~own]["value"].tolist() != other[~own]["value"].tolist()
    assert changed
    assert "own max_position" in OWN_HEADER and "float32" in OWN_HEADER
    head = S.header(CFGS)
    assert "batch 2 × 1,024 tokens, float32, sdpa attention, sgd" in head
    assert "bert-base: 512" in head and "albert-xxlarge: 512" in head and "mine" not in head  # clipped, and said
    assert "at its max_position" not in Settings(seq_len=512).header(CFGS)


def test_deltas_are_against_the_first_config():
    df = compare_table(CFGS, S)
    first, other = CFGS[0], CFGS[2]
    row = df[(df["item"] == "total parameters") & (df["config"] == other.name)].iloc[0]
    d = count_parameters(other).total - count_parameters(first).total
    assert row["delta"] == d and row["rel_delta"] == pytest.approx(d / count_parameters(first).total)
    assert isinstance(row["delta"], int)  # exact
    firsts = df[df["config"] == first.name]
    assert not firsts["differs"].any()
    hd = df[(df["item"] == "hidden_dim")].set_index("config")["differs"]
    assert list(hd) == [False, False, True]  # albert-base and bert-base share H = 768; xxlarge does not
    fam = df[(df["item"] == "family") & (df["config"] == "bert-base")].iloc[0]
    assert fam["differs"] and fam["delta"] is None  # text: highlighted, no delta


def test_empty_comparison_is_refused():
    with pytest.raises(ValueError, match="at least one config"):
        compare_table(())


def test_the_mode_and_head_reach_the_results():
    """LoRA on query,value with a classification head: trainable parameters and the peak are training_memory's
    with the same settings; ALBERT with peft's (missing) default targets has no numbers, not wrong ones."""
    from albert_core.choices import LoraSpec

    lora = LoraSpec(r=4, targets=("query", "value"))
    s = Settings(batch_size=2, seq_len=128, mode="lora", head="classification", num_labels=3, lora=lora)
    cfgs = [PRESETS["bert-base"], PRESETS["albert-base"]]
    df = compare_table(cfgs, s)
    for c in cfgs:
        t = training_memory(c, Workload(batch_size=2, seq_len=128, precision="mixed_bf16", optimizer="adamw",
                                        attention="eager", mode="lora", head="classification", num_labels=3, lora=lora))
        assert value(df, "trainable parameters", c.name) == t.trainable < count_parameters(c).total
        assert value(df, "training step's peak per GPU", c.name) == t.peak
    default = compare_table(cfgs, Settings(mode="lora"))
    assert value(default, "trainable parameters", "albert-base") is None  # peft has no default for albert
    assert value(default, "trainable parameters", "bert-base") > 0
    deep = Settings(mode="frozen-layers:24")  # clipped to bert-base's 12 layers: the encoder frozen, the pooler trains
    assert value(compare_table([PRESETS["bert-base"]], deep), "trainable parameters", "bert-base") == \
        count_parameters(PRESETS["bert-base"]).pooler
    assert "LoRA r=4 alpha=8 dropout 0 on query,value, head classification:3" in s.describe()


def test_another_familys_own_field_is_not_applicable_not_its_default():
    """A new user's review: bert-large showed local_attention 128 and position_buckets -1, values it does not have."""
    from albert_core.families import field_applies
    from albert_core.step.compare import compare_table
    from ui.comparison import NOT_ITS_FIELD, cell

    cfgs = (PRESETS["bert-large"], PRESETS["deberta-v3-base"], PRESETS["ModernBERT-base"])
    df = compare_table(cfgs)
    rows = df[(df["section"] == "field") & (df["item"] == "position_buckets")]
    assert rows["value"].tolist() == [None, 256, None] and rows["differs"].tolist() == [False, True, False]
    local = df[(df["section"] == "field") & (df["item"] == "local_attention")]["value"].tolist()
    assert local[:2] == [None, None] and local[2] == PRESETS["ModernBERT-base"].local_attention
    assert not field_applies("bert", "position_buckets") and field_applies("bert", "hidden_dim")
    assert cell("", None, None, None) == NOT_ITS_FIELD == "n/a" and cell("bytes", None, None, None) == "not modelled"
