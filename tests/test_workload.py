"""The Workload crosses the process boundary as plain JSON (the worker's request): to_dict and from_dict round-trip
every field, and a malformed request is refused by name, by the worker's plan too, before any process starts. A link
carries it too: a view's controls give each page's Workload (share.workload_of) and back (controls_of)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as hs

from albert_core.choices import LoraSpec
from albert_core.engine import core as engine
from albert_core.presets import PRESETS
from albert_core.processes import child_request
from albert_core.share import CONTROLS, View, controls_of, decode, encode, workload_of
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
    # across the process boundary (a build process reads the request's JSON): refused by name, nothing built
    req = {"config": PRESETS["bert-base"].to_dict(), "source": "hf", "workload": Workload().to_dict() | bad}
    out = child_request.answer(req)
    assert set(out) == {"count_error", "measure_error"}
    assert out["count_error"].startswith("the request's workload: ") and message in out["count_error"]
    pts = child_request.answer({"points": [], "workload": req["workload"], "training": True})
    assert set(pts) == {"points_error"} and pts["points_error"].startswith("the request's workload: ")
    with pytest.raises(ValueError):
        Workload.from_dict("8x512")


def test_the_run_is_the_workload_and_the_engine_s_own_settings():
    w = Workload(2, 16, "mixed_bf16", "eager", checkpointing=True, device="cpu", optimizer="adafactor")
    run = engine.Run(w, fake=False, seed=3)
    assert run.workload is w and (run.fake, run.seed) == (False, 3)  # the engine reads run.workload.<field>
    # foreach: the workload's, else its device's default (torch.optim: multi-tensor on CUDA, the for-loop on the CPU)
    assert not run.foreach and engine.Run(w.replace(device="cuda")).foreach
    assert not engine.Run(w.replace(device="cuda", foreach=False)).foreach


# ---- the URL carries it: a view's controls <-> the Workload of each page (albert_core.share) -------------


@hs.composite
def page_workloads(draw):
    page = draw(hs.sampled_from(["memory", "fit", "verify"]))
    c = {k: CONTROLS[k] for k in ("batch_size", "seq_len", "verify_batch", "verify_seq_len", "num_gpus",
                                   "frozen_layers", "lora_r", "lora_alpha", "num_labels")}
    verify = page == "verify"
    mode = draw(hs.sampled_from(["full", "frozen-embeddings", "frozen-layers", "lora", "bitfit"]))
    if mode == "frozen-layers":
        mode += f":{draw(hs.integers(c['frozen_layers'].lo, 48))}"
    lora = None
    if mode == "lora":
        lora = LoraSpec(r=draw(hs.integers(1, 64)), lora_alpha=draw(hs.integers(1, 64)),
                        lora_dropout=draw(hs.sampled_from([0.0, 0.05, 0.1])),
                        targets=draw(hs.sampled_from([None, ("query", "value"), ("query_proj", "dense")])))
    b, s = ("verify_batch", "verify_seq_len") if verify else ("batch_size", "seq_len")
    w = Workload(batch_size=draw(hs.integers(1, c[b].hi)), seq_len=draw(hs.integers(1, c[s].hi)),
                 precision=draw(hs.sampled_from(CONTROLS["precision"].choices)),
                 attention=draw(hs.sampled_from(CONTROLS["attention"].choices)),
                 checkpointing=draw(hs.booleans()), device="cpu" if verify else "cuda",
                 optimizer=draw(hs.sampled_from(CONTROLS["optimizer"].choices)), mode=mode,
                 head=draw(hs.sampled_from(CONTROLS["head"].choices)),
                 num_labels=draw(hs.integers(1, c["num_labels"].hi)), lora=lora,
                 **({"num_gpus": draw(hs.integers(1, c["num_gpus"].hi)),
                     "sharding": draw(hs.sampled_from(CONTROLS["sharding"].choices))} if page == "fit" else {}))
    return page, w


@given(page_workloads())
def test_a_link_carries_the_workload_of_each_page(case):
    """controls_of(w) written into a link (share.encode) and read back (decode) gives workload_of the same w: the
    URL holds the page's whole workload, fine-tuning and LoRA included."""
    page, w = case
    view = View(controls={k: c.default for k, c in CONTROLS.items()} | controls_of(w, page))
    back, warnings = decode(encode(view))
    assert warnings == []
    assert workload_of(back.controls, page) == w


def test_each_page_reads_its_own_fields():
    c = {k: v.default for k, v in CONTROLS.items()} | {"batch_size": 4, "verify_batch": 2, "checkpointing": True,
                                                        "training": False, "num_gpus": 8, "sharding": "zero2"}
    memory, fit, verify = (workload_of(c, p) for p in ("memory", "fit", "verify"))
    assert (memory.batch_size, memory.checkpointing, memory.num_gpus, memory.device) == (4, False, 1, "cuda")
    assert (fit.batch_size, fit.checkpointing, fit.num_gpus, fit.sharding) == (4, True, 8, "zero2")
    assert (verify.batch_size, verify.device, verify.num_gpus) == (2, "cpu", 1)
    with pytest.raises(ValueError, match="page must be one of memory, fit, verify"):
        workload_of(c, "compute")


def test_the_forward_of_memorys_controls():
    """share.forward_of: Memory's activation tabs count batch, dtype (as the precision), attention, and
    checkpointing only where Training is on; the rest of a view does not enter."""
    from albert_core.share import forward_of

    w = forward_of({"batch_size": 3, "dtype": "bfloat16", "attention": "eager", "checkpointing": True,
                    "training": True, "optimizer": "sgd", "train_mode": "lora"})
    assert (w.batch_size, w.precision, w.attention, w.checkpointing) == (3, "bfloat16", "eager", True)
    assert (w.optimizer, w.mode, w.device) == (Workload().optimizer, "full", "cuda")
    assert not forward_of({"checkpointing": True, "training": False}).checkpointing
    with pytest.raises(ValueError, match="precision must be one of"):
        forward_of({"dtype": "float64"})


def test_a_forward_keeps_the_same_bytes_whatever_trains_or_steps_it():
    """activation_memory(cfg, w): the optimizer, the fine-tuning and the GPUs do not change what the base model's
    forward keeps; the batch, length, precision, attention, device and checkpointing do."""
    from albert_core.estimate.activations import activation_memory

    cfg = PRESETS["albert-base"].replace(num_layers=2)
    w = Workload(batch_size=2, seq_len=64, precision="bfloat16", attention="eager")
    base = activation_memory(cfg, w).total
    for other in (w.replace(optimizer="sgd"), w.replace(mode="lora"), w.replace(num_gpus=4, sharding="zero3"),
                  w.replace(head="classification", num_labels=5)):
        assert activation_memory(cfg, other).total == base
    for other in (w.replace(batch_size=3), w.replace(seq_len=65), w.replace(precision="float32"),
                  w.replace(attention="sdpa"), w.replace(device="cpu"), w.replace(checkpointing=True)):
        assert activation_memory(cfg, other).total != base, other
    assert activation_memory(cfg, w.replace(precision="bf16_master")).total == base  # its cast model's forward


def test_the_workloads_defaults_are_the_apps():
    """One set of defaults: every Workload field a view's control carries defaults to that control's default (the
    sidebar's, the CLI's flags', a link's left-out key)."""
    w = Workload()
    same = {"batch_size": "batch_size", "seq_len": "seq_len", "precision": "precision", "attention": "attention",
            "checkpointing": "checkpointing", "optimizer": "optimizer", "head": "head", "num_labels": "num_labels",
            "num_gpus": "num_gpus", "sharding": "sharding", "mode": "train_mode"}
    assert {f: getattr(w, f) for f in same} == {f: CONTROLS[c].default for f, c in same.items()}
    assert workload_of({}, "memory") == w  # a view with no controls set
