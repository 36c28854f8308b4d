"""measure.py: the trackers themselves on hand-checkable modules, refusals, and the CUDA message."""

import subprocess
import sys

import pytest
import torch
from torch import nn

from albert_core.config import ModelConfig
from albert_core.engine.measure import measure_activation_memory, measure_cuda_peak, peak_live_bytes, saved_tensors
from albert_core.presets import PRESETS
from albert_core.workload import Workload


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 8)

    def forward(self, input_ids):
        x = input_ids.float()  # (2, 4) float32: 32 bytes, a new storage
        return torch.relu(self.lin(x))  # addmm saves x; relu saves its (2, 8) result: 64 bytes


def test_saved_tensors_by_hand():
    total, tensors = saved_tensors(Tiny(), torch.ones(2, 4, dtype=torch.long))
    assert total == 2 * 4 * 4 + 2 * 8 * 4  # parameters (the weight addmm saves) excluded
    assert sum(t.nbytes for t in tensors) == total


def test_peak_live_bytes_by_hand():
    # float(): 32 B; addmm: 64 B (x still alive); relu: 64 B while the addmm output is alive -> 160
    assert peak_live_bytes(Tiny(), torch.ones(2, 4, dtype=torch.long)) == 32 + 64 + 64


def test_measurement_breakdown_sums_to_total():
    cfg = ModelConfig(name="t", family="albert", vocab_size=30, embedding_dim=6, hidden_dim=8, num_layers=2,
                      num_heads=2, intermediate_dim=16, max_position=16, dropout=0.1)
    m = measure_activation_memory(cfg, Workload(2, 5, "float32", "eager", device="cpu"))
    assert sum(m.breakdown()["bytes"]) == m.total
    assert m.error == 0.0


def test_too_big_for_real_tensors_is_refused_and_fake_tensors_measure_it():
    with pytest.raises(ValueError, match="lower batch_size or seq_len"):
        measure_activation_memory(PRESETS["bert-large"], Workload(64, 512, "float32", "eager",
                                                                  device="cpu"), fake=False)
    with pytest.raises(ValueError, match="parameters"):
        measure_activation_memory(PRESETS["bert-xlarge"], Workload(1, 8, "float32", "eager", device="cpu"), fake=False)
    # 26.6 GiB saved, no storage
    m = measure_activation_memory(PRESETS["bert-large"], Workload(64, 512, "float32", "eager", device="cpu"))
    assert m.fake and m.total == m.estimate > 12 << 30


def test_hf_albert_checkpointing_points_to_the_reference():
    cfg = PRESETS["albert-base"].replace(num_layers=1, vocab_size=100)
    with pytest.raises(ValueError, match="kind='reference'"):
        measure_activation_memory(cfg, Workload(1, 4, "float32", "eager", True, "cpu"), kind="hf")


def test_bad_kind_and_bad_sizes():
    cfg = PRESETS["albert-base"].replace(num_layers=1, vocab_size=100)
    with pytest.raises(ValueError, match="kind"):
        measure_activation_memory(cfg, Workload(1, 4, "float32", "eager", device="cpu"), kind="tf")
    with pytest.raises(ValueError, match="max_position"):
        measure_activation_memory(cfg, Workload(1, 10_000, "float32", "eager", device="cpu"))
    with pytest.raises(ValueError, match="kind='hf'"):
        measure_activation_memory(cfg, Workload(1, 4, "float32", "eager",
                                                device="cpu"), kind="reference", training=False)


def test_cuda_peak_measures_or_says_clearly_that_there_is_no_cuda():
    cfg = PRESETS["bert-base"].replace(num_layers=1)
    if torch.cuda.is_available():
        r = measure_cuda_peak(cfg, Workload(1, 8, "float32"))
        assert r["peak"] > r["weights"] > 0
    else:
        with pytest.raises(RuntimeError, match="no CUDA device"):
            measure_cuda_peak(cfg, Workload(1, 8, "float32"))


def test_importing_the_memory_modules_leaves_torch_out():
    code = ("import sys, albert_core.estimate.activations, albert_core.step.training, albert_core.step.fit, albert_core.estimate.gpus, "
            "albert_core.engine.measure; assert 'torch' not in sys.modules; assert 'transformers' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
