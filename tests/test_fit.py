"""Fit planner: the answers bracket the budget exactly; the GPU table's sizes."""

import pytest

from albert_core.estimate.fit import fit_table, max_batch_size, max_position_that_fits, max_seq_len
from albert_core.estimate.gpus import GPUS
from albert_core.estimate.training import training_memory
from albert_core.presets import PRESETS
from albert_core.workload import Workload

GIB = 1 << 30


@pytest.mark.parametrize("name", ["bert-base", "albert-xxlarge", "bert-large"])
@pytest.mark.parametrize("budget", [16 * GIB, 40 * GIB, 141 * 10**9])
def test_max_batch_brackets_the_budget(name, budget):
    cfg = PRESETS[name]
    kw = dict(precision="mixed_bf16", optimizer="adamw", attention="eager")
    b = max_batch_size(cfg, budget, Workload(seq_len=512, **kw))
    if b > 0:
        assert training_memory(cfg, Workload(batch_size=b, seq_len=512, **kw)).peak <= budget
    assert training_memory(cfg, Workload(batch_size=b + 1, seq_len=512, **kw)).peak > budget


@pytest.mark.parametrize("name", ["bert-base", "albert-xxlarge"])
def test_max_seq_len_brackets_the_budget(name):
    cfg = PRESETS[name].replace(max_position=8192)
    kw = dict(precision="bfloat16", optimizer="sgd", attention="eager")
    for budget in (4 * GIB, 24 * GIB):
        s = max_seq_len(cfg, budget, Workload(batch_size=4, **kw))
        assert 0 < s < cfg.max_position
        assert training_memory(cfg, Workload(batch_size=4, seq_len=s, **kw)).peak <= budget
        assert training_memory(cfg, Workload(batch_size=4, seq_len=s + 1, **kw)).peak > budget


def test_edges():
    cfg = PRESETS["bert-base"]
    assert max_seq_len(cfg, 10**15, Workload(batch_size=1)) == cfg.max_position
    assert max_seq_len(cfg, 10**6, Workload(batch_size=1)) == 0
    assert max_batch_size(cfg, 10**6, Workload(seq_len=8)) == 0
    with pytest.raises(ValueError):
        max_batch_size(cfg, -5, Workload(seq_len=8))
    with pytest.raises(ValueError):
        max_batch_size(cfg, 16 * GIB, Workload(seq_len=8), overhead_bytes=-1)


def test_gpu_sizes():
    assert GPUS["A100 80 GB"] == 80 * GIB  # nvidia-smi: 81920 MiB
    assert GPUS["A100 40 GB"] == 40 * GIB
    assert GPUS["H200 141 GB"] == 141 * 10**9  # datasheet decimal GB
    assert GPUS["H100 80 GB"] == 81559 << 20
    assert list(GPUS) == ["T4 16 GB", "L4 24 GB", "A10 24 GB", "A100 40 GB", "A100 80 GB", "H100 80 GB",
                          "H200 141 GB"]


def test_fit_table():
    cfgs = {n: PRESETS[n] for n in ("bert-base", "albert-xxlarge")}
    df = fit_table(cfgs, Workload(batch_size=8, seq_len=512), custom_budget=12 * GIB)
    assert len(df) == 2 * (len(GPUS) + 1)
    for _, r in df.iterrows():
        assert r["fits"] == (r["needed_bytes"] <= r["gpu_bytes"])
        assert r["fits"] == (r["max_batch_size"] >= 8)
    for name in cfgs:  # more memory never fits less
        sub = df[df["config"] == name].sort_values("gpu_bytes")
        assert list(sub["max_batch_size"]) == sorted(sub["max_batch_size"])


@pytest.mark.parametrize("name", ["albert-base", "bert-base", "albert-xxlarge"])
@pytest.mark.parametrize("gpu", ["T4 16 GB", "A100 40 GB"])
def test_max_position_that_fits_is_the_boundary(name, gpu):
    """The position table grows with P: fits at P, not at P + 1."""
    cfg, budget = PRESETS[name], GPUS[gpu]
    kw = dict(precision="float32", optimizer="adamw", attention="eager")
    p = max_position_that_fits(cfg, budget, Workload(batch_size=8, **kw))
    assert p > 0
    assert training_memory(cfg.replace(max_position=p), Workload(batch_size=8, seq_len=p, **kw)).peak <= budget
    assert training_memory(cfg.replace(max_position=p + 1), Workload(batch_size=8, seq_len=p + 1, **kw)).peak > budget


def test_max_position_that_fits_edges():
    cfg = PRESETS["albert-base"]
    assert max_position_that_fits(cfg, 1000, Workload(batch_size=1)) == 0  # not even the weights fit
    assert max_position_that_fits(cfg, 10**15, Workload(batch_size=1), cap=4096) == 4096  # capped
    with pytest.raises(ValueError, match="budget_bytes"):
        max_position_that_fits(cfg, -5, Workload(batch_size=1))


@pytest.mark.parametrize("name,mode,sharding", [
    ("bert-base", "lora", "none"), ("roberta-base", "frozen-embeddings", "zero2"),
    ("albert-base", "frozen-layers:1", "none"), ("deberta-v3-base", "bitfit", "zero3"),
    ("bert-large", "full", "zero1")])
def test_the_fit_flips_exactly_at_the_searched_batch(name, mode, sharding):
    """peak(b) <= budget < peak(b + 1) for the searched b, in every mode, and fit_table's decision with it."""
    cfg = PRESETS[name]
    kw = dict(precision="mixed_bf16", optimizer="adamw", attention="sdpa", mode=mode, num_gpus=4, sharding=sharding,
              head="classification", checkpointing=name == "bert-large")
    budget = 24 * 10**9
    b = max_batch_size(cfg, budget, Workload(seq_len=512, **kw))
    assert b > 0
    peak = [training_memory(cfg, Workload(batch_size=x, seq_len=512, **kw)).peak for x in (b, b + 1)]
    assert peak[0] <= budget < peak[1]
    for batch in (b, b + 1):  # the table's fits is the same comparison, at the table's batch
        row = fit_table(cfg, Workload(batch_size=batch, seq_len=512, **kw), gpus={"g": budget}).iloc[0]
        assert bool(row["fits"]) == (batch == b) and int(row["max_batch_size"]) == b
        assert row["needed_bytes"] == training_memory(cfg, Workload(batch_size=batch, seq_len=512, **kw)).peak
        assert row["needed_bytes"] != row["sum_of_parts"]  # the table says which it compares


def test_the_planner_uses_the_peak_not_the_sum():
    """bert-base 8 x 512 float32: the peak and the sum differ, and the fit follows the peak on a budget between."""
    cfg = PRESETS["bert-base"]
    kw = dict(precision="float32", optimizer="adamw", attention="eager")
    t = training_memory(cfg, Workload(batch_size=8, seq_len=512, **kw))
    lo, hi = sorted((t.peak, t.total))
    assert lo < hi
    row = fit_table(cfg, Workload(batch_size=8, seq_len=512, **kw), gpus={"between": (lo + hi) // 2}).iloc[0]
    assert bool(row["fits"]) == (t.peak < t.total)
