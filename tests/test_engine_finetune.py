"""Fine-tuned models on the engine: fake tensors equal real tensors, byte for byte (tests/engine_check.py).

peft's get_peft_model moves each LoRA adapter with Module.to, which fake tensors refused ("_apply(): Couldn't
swap Linear.weight"), and deep-copies a task head for modules_to_save into another fake mode; engine.fake_build
does the move without swapping and the copy in the running mode while the engine builds the model.
Here the peft-built LoRA model (engine.task_model.build) of a seeded random tiny config of every family, in float32 and
bfloat16, with LoRA dropout on, runs all three measurements (saved bytes, the eval forward's peak, the training
step's peak with what is alive at it, by category) on fake and real tensors, and they agree to the byte; then
frozen embeddings, frozen layers and BitFit, and LoRA with a classification head (peft's modules_to_save copy)
under gradient checkpointing.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from engine_check import fake_equals_real

from albert_core.config import ModelConfig
from albert_core.engine import core as engine
from albert_core.engine import task_model
from albert_core.estimate import finetune
from albert_core.workload import Workload
from tests.test_activations import random_config as random_bert_albert
from tests.test_families_activations import random_config as random_other

FAMILIES = ["bert", "albert", "roberta", "distilbert", "electra", "deberta-v2", "modernbert"]
# where peft 0.21.2 has no default (finetune.PEFT_DEFAULT_TARGETS is None): the attention's query and value
TARGETS = {"albert": ("query", "value"), "distilbert": ("q_lin", "v_lin"), "modernbert": ("Wqkv",)}


def _config(family: str, seed: str) -> tuple[ModelConfig, random.Random]:
    rng = random.Random(f"engine-finetune-{family}-{seed}")
    cfg = random_bert_albert(rng, family) if family in ("bert", "albert") else random_other(rng, family)
    if family == "modernbert":
        cfg = cfg.replace(mlp_bias=True)  # BitFit needs a bias to train (the optimizer refuses an empty list)
    return cfg.replace(dropout=0.1), rng


def _run(rng: random.Random, cfg: ModelConfig, dtype: str) -> engine.Run:
    return engine.Run(Workload(rng.randint(1, 2), rng.randint(1, cfg.max_position), dtype,
                               rng.choice(["eager", "sdpa"]), device="cpu", optimizer=rng.choice(["adamw", "adafactor"])))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("family", FAMILIES)
def test_peft_lora_on_fake_tensors_equals_real_tensors(family, dtype):
    cfg, rng = _config(family, f"lora-{dtype}")
    lora = finetune.LoraSpec(r=rng.randint(1, 4), lora_alpha=16, lora_dropout=0.1, targets=TARGETS.get(family))
    run = _run(rng, cfg, dtype)
    att = run.workload.attention
    r = fake_equals_real(lambda: task_model.build(cfg, "lora", lora=lora, device="cpu", attention=att),
                         cfg.vocab_size, run)
    t = finetune.trainable(cfg, "lora", lora=lora)
    assert r.parameters == t.total and r.step is not None
    # only the adapters train: AdamW or Adafactor keep state for lora_A and lora_B alone
    size = 4 if dtype == "float32" else 2
    if run.workload.optimizer == "adamw":
        assert r.step.at_start["optimizer state"] == 2 * size * t.trainable
    assert 0 < r.step.at_start["optimizer state"] <= 2 * size * t.trainable
    assert r.saved is not None and r.saved > 0


@pytest.mark.parametrize("family", FAMILIES)
def test_frozen_modes_bitfit_and_a_lora_head_on_fake_tensors_equal_real_tensors(family):
    cfg, rng = _config(family, "modes")
    k = rng.randint(0, cfg.num_layers - 1)
    for mode in ("frozen-embeddings", f"frozen-layers:{k}", "bitfit"):
        run = _run(rng, cfg, rng.choice(["float32", "mixed_bf16"]))
        a = run.workload.attention
        r = fake_equals_real(lambda mode=mode, a=a: task_model.build(cfg, mode, device="cpu", attention=a),
                             cfg.vocab_size, run)
        assert r.parameters == finetune.trainable(cfg, mode).total, mode
    lora = finetune.LoraSpec(r=2, lora_dropout=0.1, targets=TARGETS.get(family))
    # with gradient checkpointing (transformers' AlbertModel has none: the reference encoder does it for ALBERT)
    run = _run(rng, cfg, "float32")
    run = dataclasses.replace(run, workload=run.workload.replace(checkpointing=family != "albert"))
    r = fake_equals_real(lambda: task_model.build(cfg, "lora", head="classification", num_labels=3, lora=lora,
                                                device="cpu", attention=run.workload.attention), cfg.vocab_size, run)
    assert r.parameters == finetune.trainable(cfg, "lora", head="classification", num_labels=3, lora=lora).total
