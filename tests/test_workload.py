"""The Workload crosses the process boundary as plain JSON (the worker's request): to_dict and from_dict round-trip
every field, and a malformed request is refused by name, by the worker's plan too, before any process starts."""

from __future__ import annotations

import json

import pytest

from albert_core.engine import core as engine
from albert_core.engine import worker
from albert_core.estimate.lora import LoraSpec
from albert_core.presets import PRESETS
from albert_core.workload import Workload

CASES = [
    Workload(),
    Workload(2, 16, "float32", "eager", device="cpu", optimizer="sgd", foreach=True),
    Workload(4, 128, "bf16_master", checkpointing=True, mode="lora", head="classification", num_labels=5,
             lora=LoraSpec(r=4, lora_alpha=16, lora_dropout=0.1, targets=("query", "value"), bias="lora_only"),
             num_gpus=8, sharding="zero3"),
    Workload(1, 8, mode="frozen-layers:2", head="token", lora=LoraSpec()),
]


@pytest.mark.parametrize("w", CASES)
def test_a_workload_survives_json(w):
    d = json.loads(json.dumps(w.to_dict()))
    assert Workload.from_dict(d) == w
    assert set(d) == set(Workload.__dataclass_fields__)


@pytest.mark.parametrize("bad, message", [
    ({"batch": 2}, "unknown workload field(s) 'batch'"),
    ({"batch_size": 0}, "batch_size must be a whole number of at least 1, got 0"),
    ({"precision": "fp8"}, "precision must be one of"),
    ({"lora": {"rank": 8}}, "lora's fields are r, lora_alpha, lora_dropout, targets and bias"),
    ({"lora": [8]}, "lora must be an object"),
])
def test_a_malformed_workload_is_refused_by_name(bad, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Workload.from_dict(Workload().to_dict() | bad)
    req = {"config": PRESETS["bert-base"].to_dict(), "source": "hf", "workload": Workload().to_dict() | bad}
    plan = worker.plan(req, 700 << 20)  # nothing starts: both refused, the reason named
    assert not plan["count"] and not plan["measure"]
    assert plan["count_error"].startswith("the request's workload: ") and message in plan["count_error"]
    assert "the request's workload: " in worker.run_points({"points": [], "workload": req["workload"],
                                                           "training": True})["points_error"]
    with pytest.raises(ValueError):
        Workload.from_dict("8x512")


def test_the_run_is_the_workload_and_the_engine_s_own_settings():
    w = Workload(2, 16, "mixed_bf16", "eager", checkpointing=True, device="cpu", optimizer="adafactor")
    run = engine.Run(w, fake=False, seed=3)
    assert (run.batch_size, run.seq_len, run.precision, run.attention, run.checkpointing, run.optimizer) == (
        2, 16, "mixed_bf16", "eager", True, "adafactor")
    # foreach: the workload's, else its device's default (torch.optim: multi-tensor on CUDA, the for-loop on the CPU)
    assert not run.foreach and engine.Run(w.replace(device="cuda")).foreach
    assert not engine.Run(w.replace(device="cuda", foreach=False)).foreach
