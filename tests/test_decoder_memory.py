"""A decoder's training memory (issue 54): the causal LM with its own loss on the engine (engine.building.build_auto,
head 'causal-lm'), fake equal to real, the symbolic trace equal to the engine with the head, and `memory` for a
decoder equal to what `verify` measures, its parts equal to their closed forms, bad flags named."""

from __future__ import annotations

import json

import pytest

from albert_core.cli.main import main
from albert_core.decoders.decoder_config import from_hf
from albert_core.decoders.decoder_loss import loss_saved
from albert_core.decoders.decoder_params import count_decoder
from albert_core.engine.types import Request
from albert_core.estimate.serving import weight_bytes
from albert_core.processes import child_request
from albert_core.units import format_bytes
from albert_core.workload import Workload

TINY = {  # small configs of three families: tied and untied, GQA, Gemma-3's sliding window and four norms a layer
    "llama": {"model_type": "llama", "vocab_size": 300, "hidden_size": 32, "intermediate_size": 64,
              "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "max_position_embeddings": 256, "tie_word_embeddings": False},
    "gpt2": {"model_type": "gpt2", "vocab_size": 300, "n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 256},
    "gemma3_text": {"model_type": "gemma3_text", "vocab_size": 300, "hidden_size": 32, "intermediate_size": 64,
                    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
                    "max_position_embeddings": 256, "sliding_window": 16},
}


def measured(hf: dict, w: Workload, real: bool = False) -> tuple[int, int, dict]:
    out = child_request.run(Request(w, hf_config=hf, real=real))
    return out["measurement"]["total"], out["step"]["peak"], out


@pytest.mark.parametrize("family", sorted(TINY))
def test_the_causal_lm_on_fake_tensors_equals_real_ones_and_saves_its_float32_logits(family):
    hf = TINY[family]
    B, S, V = 2, 24, hf["vocab_size"]
    w = Workload(B, S, "float32", "eager", device="cpu", head="causal-lm")
    fake, real = measured(hf, w), measured(hf, w, real=True)
    assert fake[:2] == real[:2]
    base = measured(hf, w.replace(head="none"))
    # the loss (transformers' ForCausalLMLoss): logits.float(), then cross_entropy, whose log_softmax saves its
    # float32 output of B x S x V; the output projection saves what it reads (B x S x H)
    rows = {r["module"]: r["bytes"] for r in fake[2]["measurement"]["breakdown"]}
    assert rows["(model)"] == loss_saved(from_hf(hf), B, S) >= B * S * V * 4  # the closed form the Memory page draws
    one = measured(hf, w.replace(batch_size=1))[2]  # batch 1: the shifted labels are a view of the padded ones
    assert {r["module"]: r["bytes"] for r in one["measurement"]["breakdown"]}["(model)"] == loss_saved(from_hf(hf), 1, S)
    assert fake[0] - base[0] >= B * S * V * 4
    assert fake[2]["built"] == count_decoder(from_hf(hf), heads=True).total


@pytest.mark.slow
@pytest.mark.parametrize("family", ["gemma3_text"])  # Llama's causal LM: traced with LoRA on it (below)
def test_one_trace_of_the_causal_lm_gives_the_engine_at_other_sizes(family):
    from albert_core.engine.trace import trace_saved, trace_step

    hf = TINY[family]
    w = Workload(3, 37, "mixed_bf16", "eager", device="cpu", head="causal-lm")
    saved, step = trace_saved(hf, w), trace_step(hf, w)
    for B, S in ((2, 50), (5, 23)):
        assert saved.holds(B, S) and step.holds(B, S)
        m, p, _ = measured(hf, w.replace(batch_size=B, seq_len=S))
        assert (saved.saved(B, S), step.peak(B, S)) == (m, p)


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_memory_of_a_decoder_is_what_verify_measures_and_its_parts_their_closed_forms(tmp_path, capsys):
    path = tmp_path / "llama.json"
    path.write_text(json.dumps(TINY["llama"]))
    flags = ["--config", str(path), "--batch-size", "3", "--seq-len", "40", "--precision", "float32", "--json"]
    code, out, err = run_cli(capsys, "memory", *flags, "--serve", "int4", "--group-size", "8", "--quantize-embeddings")
    assert code == 0, err
    mem = json.loads(out)
    b = weight_bytes(from_hf(TINY["llama"]), "int4", dtype="bfloat16", group_size=8, quantize_embeddings=True,
                     head="causal-lm")  # held to torchao's storage in tests/test_serving.py
    assert {k: mem["serving"][k] for k in b.to_json()} == b.to_json()
    assert mem["serving"]["approx"] == count_decoder(from_hf(TINY["llama"]), heads=True).total // 2
    code, out, err = run_cli(capsys, "verify", *flags, "--head", "causal-lm")
    assert code == 0, err
    ver = json.loads(out)
    n = count_decoder(from_hf(TINY["llama"]), heads=True).total
    assert mem["settings"]["head"] == "causal-lm"  # a causal decoder's default
    assert mem["parameters"]["stored"] == mem["parameters"]["built"] == ver["parameters"]["built"] == n
    assert mem["training_peak"]["measured"] == ver["training_peak"]["measured"]
    assert mem["activations"]["total"] == ver["activations"]["measured"]
    t = mem["training_memory"]
    assert (t["weights"], t["gradients"], t["optimizer_state"]) == (4 * n, 4 * n, 2 * 4 * n)  # AdamW: two moments
    code, out, _ = run_cli(capsys, "memory", *flags, "--head", "none")
    base = json.loads(out)
    assert mem["activations"]["head_and_loss"] == mem["activations"]["total"] - base["activations"]["total"]
    assert base["parameters"]["stored"] == count_decoder(from_hf(TINY["llama"])).total
    assert mem["kv_cache"]["total"] == 3 * 40 * 2 * 2 * 2 * 8 * 2  # B x S x 2 (K, V) x layers x kv_heads x head_dim x 2 B
    code, text, _ = run_cli(capsys, "memory", *flags[:-1], "--serve", "int8")
    assert code == 0 and "of which LM head, loss" in text and f"{mem['training_peak']['measured']:,}" in text
    int8 = weight_bytes(from_hf(TINY["llama"]), "int8", dtype="bfloat16", head="causal-lm").weights
    assert f"serving int8, rest in bfloat16, embeddings kept: weights {format_bytes(int8)} ({int8:,} B)" in text
    assert ("a copy of its own" if from_hf(TINY["llama"]).tied else "the embedding tables stay in bfloat16") in text


@pytest.mark.parametrize("argv, said", [
    (["memory", "--preset", "gpt2", "--sharding", "zero2", "--num-gpus", "2"], "--num-gpus, --sharding"),
    (["memory", "--preset", "gpt2", "--train", "bitfit"], "--train bitfit"),
    (["memory", "--preset", "gpt2", "--lora-r", "4", "--lora-alpha", "8"], "only apply with --train lora"),
    (["memory", "--preset", "gpt2", "--head", "mlm"], "causal-lm"),
    (["verify", "--preset", "gpt2", "--head", "classification:2"], "causal-lm"),
    (["memory", "--preset", "bert-base", "--head", "causal-lm"], "an encoder's heads"),
    (["memory", "--preset", "gpt2", "--seq-len", "4096"], "max_position_embeddings (1,024)"),
])
def test_what_a_decoder_does_not_take_yet_is_named(argv, said, capsys):
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and said in err, err


def test_lora_on_a_decoder_fake_equals_real_and_counts_what_peft_builds():
    """peft's LoRA on q_proj and v_proj of a causal LM (the issue's fine-tune): the engine on fake tensors equals real
    ones, its trainable count is the adapters' r x (in + out) per adapted projection, and one symbolic trace of the
    step gives the engine's peak at other sizes."""
    from albert_core.choices import LoraSpec
    from albert_core.engine.trace import trace_step

    hf = TINY["llama"]
    r, H, q, v, L = 4, 32, 4 * 8, 2 * 8, 2  # hidden 32, 4 heads and 2 kv heads of 8
    w = Workload(2, 20, "mixed_bf16", "eager", device="cpu", head="causal-lm", mode="lora",
                 lora=LoraSpec(r=r, targets=("q_proj", "v_proj")))
    fake, real = measured(hf, w), measured(hf, w, real=True)
    assert fake[:2] == real[:2]
    assert fake[2]["trainable_built"] == L * r * ((H + q) + (H + v))
    assert fake[2]["built"] == count_decoder(from_hf(hf), heads=True).total + fake[2]["trainable_built"]
    step = trace_step(hf, w.replace(batch_size=3, seq_len=37))
    for B, S in ((2, 20), (6, 50)):
        assert step.peak(B, S) == measured(hf, w.replace(batch_size=B, seq_len=S))[1]


def test_the_largest_batch_that_fits_a_gpu_is_measured_to_fit_and_the_next_not(tmp_path, capsys):
    """memory --gpu for a decoder: the trace's largest batch fits the GPU and the next one does not, both measured
    by the engine (a budget made small enough for a tiny model: the T4's bytes over a large batch x length)."""
    from albert_core.cli.decoder_memory import largest_batch
    from albert_core.estimate.gpus import GPUS

    dec = from_hf(TINY["llama"])
    w = Workload(1, 64, "float32", "eager", device="cpu", head="causal-lm")
    budget = 3_000_000
    f = largest_batch(dec, w, "tiny", budget)
    best, peaks = f["largest_batch"], {int(b): p for b, p in f["measured_peaks"].items()}
    assert best > 1 and f["fits"] and peaks[best] <= budget < peaks[best + 1]
    assert f["longest"] is None  # batch 1 asked: the trace of batch 2 or more does not hold there
    g = largest_batch(dec, w.replace(batch_size=3), "tiny", budget)["longest"]  # the longest context at batch 3
    lengths = {int(n): p for n, p in g["measured_peaks"].items()}
    assert g["fits"] and lengths[g["seq_len"]] <= budget < lengths[g["seq_len"] + 1]
    assert largest_batch(dec, w, "tiny", 10_000)["largest_batch"] == 0  # not even batch 1: said, not 1
    path = tmp_path / "llama.json"
    path.write_text(json.dumps(TINY["llama"]))
    code, out, err = run_cli(capsys, "memory", "--config", str(path), "--seq-len", "64", "--gpu", "nope")
    assert code == 2 and "--gpu must be one of" in err and repr(next(iter(GPUS))) in err
