"""engine/trace.py: the bytes a training forward saves, as one polynomial in B and S from one symbolic run of the real
model, for decoders (Llama, Qwen2, Qwen3, Gemma-3, GPT-2) and encoders alike.

The polynomial must equal the engine's concrete fake run (engine.saved_bytes at integer sizes) wherever the trace
says it holds, and, for every encoder family, the hand-written replay (estimate.activations.activation_memory).
Tiny configs (hidden 64, two layers): a trace takes about a second.
"""

import random

import pytest
import torch
from test_activations import random_config as bert_config
from test_families_activations import random_config as family_config

from albert_core.engine.building import build_auto, tensor_mode
from albert_core.engine.core import saved_bytes
from albert_core.engine.trace import Polynomial, trace_saved, trace_step
from albert_core.estimate.activations import activation_memory
from albert_core.formats.hf import to_hf_config
from albert_core.workload import Workload

SMALL = {"vocab_size": 500, "hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2}
DECODERS = {  # the shapes each family's published configs vary (../shared/reference/decoder-configs.md), small
    "llama": {"model_type": "llama", **SMALL},
    "qwen2": {"model_type": "qwen2", **SMALL},  # q, k and v with a bias
    "qwen3": {"model_type": "qwen3", **SMALL, "head_dim": 32},  # heads x head_dim (128) is not hidden (64)
    "gemma3_text": {"model_type": "gemma3_text", **SMALL, "num_attention_heads": 2, "num_key_value_heads": 1,
                    "head_dim": 32, "sliding_window": 8, "sliding_window_pattern": 2},  # a local layer, a global one
    "gpt2": {"model_type": "gpt2", "vocab_size": 500, "n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 96},
}


def at(batch_size: int, seq_len: int, attention: str) -> Workload:
    """The workload a trace runs at (its hint): float32 on the CPU."""
    return Workload(batch_size, seq_len, "float32", attention, device="cpu")


def concrete(hf: dict, attention: str, batch_size: int, seq_len: int) -> int:
    """engine.saved_bytes of a fake run at integer sizes: what the polynomial must give there."""
    with tensor_mode(True):
        model = build_auto(hf, attention)
        model.train(True)
        total, _ = saved_bytes(model, torch.zeros((batch_size, seq_len), dtype=torch.long))
    return total


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("model_type", sorted(DECODERS))
def test_one_trace_equals_the_engine_at_other_sizes(model_type, attention):
    hf = DECODERS[model_type]
    t = trace_saved(hf, at(3, 37, attention))
    assert t.holds(3, 37) and not t.holds(1, 37)  # its hint, and B = 1 (a case of its own)
    points = [(2, 50), (5, 9)] if model_type != "gemma3_text" else [(2, 50), (5, 12)]  # past the window (8)
    for b, s in points:
        assert t.holds(b, s), (t.guards, t.ranges)
        assert t.saved(b, s) == concrete(hf, attention, b, s), (model_type, attention, b, s, str(t.saved))
    if attention != "eager":
        return
    assert any(j == 2 for _, j, _ in t.saved.terms)  # the attention probabilities, B x heads x S x S, are saved
    one = trace_saved(hf, at(1, 37, attention))  # B = 1: a trace of its own (eager's views merge there)
    assert one.ranges[0] == ("B", 1, 1) and one.holds(1, 64) and not one.holds(2, 64)
    assert one.saved(1, 64) == concrete(hf, attention, 1, 64)


def test_a_window_and_a_table_are_guards_and_the_polynomial_says_where_it_holds():
    gemma = trace_saved(DECODERS["gemma3_text"], at(3, 37, "sdpa"))
    assert "S >= 8" in gemma.guards and not gemma.holds(3, 6)  # under the window, another branch of the code
    bert = trace_saved({"model_type": "bert", "vocab_size": 100, "hidden_size": 32, "intermediate_size": 40,
                        "num_hidden_layers": 1, "num_attention_heads": 2, "max_position_embeddings": 64})
    assert "S <= 64" in bert.guards and bert.holds(2, 64) and not bert.holds(2, 65)


FAMILY_CASES = [("bert", 1), ("albert", 2), ("roberta", 3), ("distilbert", 4), ("electra", 5), ("deberta-v2", 6),
                ("modernbert", 7), ("mpnet", 8)]


@pytest.mark.parametrize("family,seed", FAMILY_CASES)
def test_the_trace_equals_the_hand_written_replay_of_every_encoder_family(family, seed):
    """The replay (a transcription of each family's forward) and the trace (the forward itself) agree: the step
    toward modelled numbers that come from the model (issue 54, point 5)."""
    rng = random.Random(seed)
    if family in ("bert", "albert"):
        cfg = bert_config(rng, family, max_position=48)
    else:
        cfg = family_config(rng, family).replace(max_position=48)
    attention = "sdpa" if family in ("bert", "roberta") else "eager"
    t = trace_saved(to_hf_config(cfg), at(3, 37, attention))
    held = [(b, s) for b, s in ((2, 5), (3, 40), (2, 48)) if t.holds(b, s)]
    assert held, (t.guards, t.ranges)
    for b, s in held:
        w = Workload(b, s, "float32", attention, device="cpu")
        assert t.saved(b, s) == activation_memory(cfg, w).total, (cfg, b, s, str(t.saved), t.guards)


def test_polynomials_read_as_people_write_them_and_stay_exact_at_any_size():
    p = Polynomial(((1, 2, 32), (1, 1, 10_780), (0, 1, 128)))
    assert str(p) == "32·B·S^2 + 10,780·B·S + 128·S"
    assert p(10**6, 10**7) == 32 * 10**6 * 10**14 + 10_780 * 10**13 + 128 * 10**7  # Python ints: no overflow
    assert str(Polynomial(())) == "0" and str(Polynomial(((0, 1, -4), (0, 0, 2)))) == "-4·S + 2"


def concrete_step(hf: dict, attention: str, optimizer: str, batch_size: int, seq_len: int) -> int:
    """The engine's step peak (core.measure, what=("step",)) of a fake run at integer sizes."""
    from albert_core.engine.core import measure
    from albert_core.engine.types import Run

    run = Run(Workload(batch_size, seq_len, "float32", attention, optimizer=optimizer, device="cpu"), fake=True)
    return measure(lambda: build_auto(hf, attention), hf["vocab_size"], run, what=("step",)).step.peak


@pytest.mark.parametrize("model_type,attention,optimizer", [("llama", "sdpa", "adamw"), ("gpt2", "eager", "sgd"),
                                                            ("gemma3_text", "eager", "adamw"),
                                                            ("qwen3", "eager", "adafactor")])
def test_one_trace_of_the_step_gives_its_peak_at_other_sizes(model_type, attention, optimizer):
    """The whole training step (forward, loss, backward, the optimizer's step) traced once: the largest of its live
    totals at (B, S) equals the engine's step peak there."""
    hf = DECODERS[model_type]
    t = trace_step(hf, Workload(3, 37, "float32", attention, optimizer=optimizer, device="cpu"))
    assert t.events > len(t.candidates) >= 1 and t.distinct >= len(t.candidates)
    for b, s in ((2, 50), (4, 12)):
        assert t.holds(b, s), (t.guards, t.ranges)
        assert t.peak(b, s) == concrete_step(hf, attention, optimizer, b, s), (model_type, b, s)
