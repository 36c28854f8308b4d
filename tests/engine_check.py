"""The one place that holds the engine equal to real tensors and the analytical model equal to the engine.

`fake_equals_real(make, vocab, run)`: the three measurements (saved bytes, the eval forward's peak,
the training step's peak and what is alive at it) on fake tensors equal the same run on real CPU
tensors, byte for byte. `estimate_equals_engine(cfg, run, kind)`: albert_core's closed forms and
replay (count_parameters, activation_memory for training and inference) equal the engine's figures.
Test files call these; none keeps its own copy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from albert_core.config import ModelConfig
from albert_core.engine import core as engine
from albert_core.engine.measure import _estimate_config, maker
from albert_core.estimate.activations import activation_memory, family_ops
from albert_core.estimate.params import count_parameters


def fake_equals_real(make: Callable[[], Any], vocab: int, run: engine.Run,
                     what: tuple[str, ...] = engine.MEASURES) -> engine.Result:
    fake = engine.measure(make, vocab, dataclasses.replace(run, fake=True), what)
    real = engine.measure(make, vocab, dataclasses.replace(run, fake=False), what)
    assert fake.parameters == real.parameters and fake.by_module == real.by_module
    assert fake.saved == real.saved, ("saved bytes", fake.saved, real.saved)
    assert [dataclasses.astuple(t) for t in fake.saved_tensors] == [dataclasses.astuple(t) for t in real.saved_tensors]
    assert fake.inference == real.inference, ("inference peak", fake.inference, real.inference)
    if "step" in what:
        assert fake.step == real.step, ("training step", fake.step, real.step)
        assert fake.step is not None and sum(fake.step.at_peak.values()) == fake.step.peak
    return fake


def inference_modelled(cfg: ModelConfig) -> bool:
    return hasattr(family_ops(cfg), "infer_layer")


def estimate_equals_engine(cfg: ModelConfig, run: engine.Run, kind: str = "hf",
                           result: engine.Result | None = None) -> engine.Result:
    """albert_core's count and activation bytes equal what the engine measures (fake tensors unless `result`)."""
    what = ("saved", "inference") if inference_modelled(cfg) else ("saved",)
    r = result or engine.measure(maker(cfg, kind, run.workload.attention), cfg.vocab_size, run, what)
    ecfg = _estimate_config(cfg, kind)
    assert r.parameters == count_parameters(ecfg).total
    w = run.workload
    cpu = w.replace(device="cpu")  # the kernels the engine ran
    assert r.saved == activation_memory(ecfg, cpu).total
    if r.inference is not None and inference_modelled(cfg) and kind == "hf":  # albert_core models HF's code
        assert r.inference == activation_memory(ecfg, cpu.replace(checkpointing=False), training=False).total
    return r
