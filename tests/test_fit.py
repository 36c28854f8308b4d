"""Fit planner: the answers bracket the budget exactly; the GPU table's sizes."""

import math
import random

import pytest

from albert_core.estimate.gpus import GPUS
from albert_core.presets import PRESETS
from albert_core.step import fit
from albert_core.step.fit import fit_table, max_batch_size, max_position_that_fits, max_seq_len
from albert_core.step.training import training_memory
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
    assert GPUS["H200 141 GB"] == 143771 << 20  # nvidia-smi: 143771 MiB (the datasheet's 141 GB would be 131.3 GiB)
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


# ---- the search (fit._largest): exact wherever the bytes never shrink, in fewer probes where they are the step's ----

def bisection(size_bytes, budget: int, limit: int, *, doubling: bool) -> tuple[int, int]:
    """The searches before fit._largest (a doubling search, or the whole range, then a binary search): (the
    largest n in 1..limit with size_bytes(n) <= budget, probes)."""
    probes = 0

    def fits(n: int) -> bool:
        nonlocal probes
        probes += 1
        return size_bytes(n) <= budget

    if not fits(1):
        return 0, probes
    lo, hi = 1, 2 if doubling else limit
    if not doubling and fits(hi):
        return hi, probes
    while doubling and hi <= limit and fits(hi):
        lo, hi = hi, hi * 2
    if hi > limit:
        if fits(limit):
            return limit, probes
        hi = limit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo, probes


def counted(f):
    calls = []

    def g(*args):
        calls.append(args[0] if len(args) == 1 else args)
        return f(*args)
    return g, calls


def shapes(a: int, b: int, c: int) -> list:
    """Bytes that never shrink as the size grows, of every shape the searches must handle."""
    return [lambda n: a + b * n + (n * 37 % 512 if b >= 512 else 0),  # affine, bent by rounding, never shrinking
            lambda n: a + b * n + c * n * n,
            lambda n: a + b * math.isqrt(n) * 1000,
            lambda n: a + b * (n // 97) + c * (n // 3),
            lambda n: a]


def test_the_search_is_exact_on_any_bytes_that_never_shrink():
    """Affine with the allocator's jitter, quadratic, concave, stepped, flat: the answer a bisection gives, and never
    more probes than 2 + 2 log2(limit); every probe within 1..limit."""
    rng = random.Random(0)
    for _ in range(3000):
        limit = rng.choice([1, 2, 7, 512, 8192, 1 << 20, 1 << 40])
        f = rng.choice(shapes(rng.randrange(10**9), rng.randrange(10**6), rng.randrange(10**3)))
        budget = rng.randrange(10**12)
        g, calls = counted(f)
        got = fit._largest(g, budget, limit, rng.choice([2, limit]))
        assert got == bisection(f, budget, limit, doubling=True)[0]
        assert all(1 <= n <= limit for n in calls)
        assert len(calls) <= 2 + 2 * math.log2(limit)


def searches(cfg, w: Workload) -> list:
    """The planner's three searches, each with the bytes it searches, its limit and how the search before began."""
    return [(max_batch_size, lambda b: fit.step_bytes(cfg, w.replace(batch_size=b)), fit.MAX_BATCH, True),
            (max_seq_len, lambda s: fit.step_bytes(cfg, w.replace(seq_len=s)), cfg.max_position, False),
            (max_position_that_fits,
             lambda p: fit.step_bytes(cfg.replace(max_position=p), w.replace(seq_len=p)), 1 << 20, True)]


def probed(search, cfg, budget: int, w: Workload, monkeypatch) -> tuple[int, int]:
    """(search's answer, the step's bytes it asked for)."""
    g, calls = counted(fit.step_bytes)
    monkeypatch.setattr(fit, "step_bytes", g)
    try:
        return search(cfg, budget, w), len(calls)
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("name", ["bert-base", "albert-xxlarge", "ModernBERT-base", "deberta-v3-base"])
@pytest.mark.parametrize("kw", [dict(precision="mixed_bf16", optimizer="adamw", attention="eager"),
                                dict(precision="float32", optimizer="sgd", attention="sdpa", checkpointing=True,
                                     num_gpus=4, sharding="zero3")])
def test_the_planners_searches_equal_a_bisection_in_fewer_probes(name, kw, monkeypatch):
    """The three searches on the step's own bytes (every family's peak, sharded, checkpointed) give a bisection's
    answers, in at most as many probes; in all, fewer than two thirds."""
    cfg, budget = PRESETS[name], GPUS["A100 40 GB"]
    w = Workload(batch_size=8, seq_len=min(512, cfg.max_position), **kw)
    old = new = 0
    for search, size_bytes, limit, doubling in searches(cfg, w):
        want, probes = bisection(size_bytes, budget, limit, doubling=doubling)
        got, n = probed(search, cfg, budget, w, monkeypatch)
        assert got == want and n <= probes
        old, new = old + probes, new + n
    assert 3 * new < 2 * old


def test_the_fit_pages_default_plan_in_under_half_the_probes(monkeypatch):
    """The Fit planner's default view (four configs, 8 x 512 tokens, mixed bf16, AdamW, an A100 80 GB): its largest
    batches, longest sequences and longest max_positions, searched as before in 156 probes of the step's peak,
    now in 72, with the same answers."""
    budget, w = GPUS["A100 80 GB"], Workload(batch_size=8, seq_len=512, precision="mixed_bf16", optimizer="adamw")
    old = new = 0
    for name in ("albert-base", "bert-base", "bert-large", "albert-xxlarge"):
        cfg = PRESETS[name]
        for search, size_bytes, limit, doubling in searches(cfg, w):
            want, probes = bisection(size_bytes, budget, limit, doubling=doubling)
            got, n = probed(search, cfg, budget, w, monkeypatch)
            assert got == want
            old, new = old + probes, new + n
    assert old == 156 and new <= 72


def test_beyond_parts_is_what_the_peak_holds_outside_the_parts():
    """TrainingMemory.beyond_parts (the Fit planner's words where a peak is above the sum of the parts): with the
    parts' categories at the peak it adds up to the peak, and under ZeRO-3 / FSDP it holds the gathered unit."""
    from albert_core.step.training import GATHERED, PARTS_AT_PEAK, training_memory

    for sharding in ("none", "zero2", "fsdp"):
        w = Workload(batch_size=8, seq_len=512, precision="mixed_bf16", num_gpus=4, sharding=sharding)
        m = training_memory(PRESETS["albert-base"], w)
        assert sum(m.at_peak[k] for k in PARTS_AT_PEAK) + sum(m.beyond_parts.values()) == m.peak
        assert (GATHERED in m.beyond_parts) == (sharding == "fsdp") and "temporaries" in m.beyond_parts


def test_every_gpu_has_a_compute_capability_and_bfloat16_is_remarked_below_ampere():
    from albert_core.estimate.gpus import BF16_PRECISIONS, COMPUTE_CAPABILITY, FP16_OF, precision_note

    assert set(COMPUTE_CAPABILITY) == set(GPUS)  # a GPU added to one table is added to the other
    for gpu, cc in COMPUTE_CAPABILITY.items():
        for p in ("float32", "float16", "mixed_fp16", "fp16_master", *BF16_PRECISIONS):
            note = precision_note(gpu, p)
            assert (note is not None) == (cc < (8, 0) and p in BF16_PRECISIONS), (gpu, p)
            if note:
                assert FP16_OF[p] in note and gpu in note
    assert precision_note("some other GPU", "mixed_bf16") is None
