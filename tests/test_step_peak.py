"""step.step_peak (the training step's peak, modelled) against the engine's measurement of the same step.

Random tiny configs from the generators of test_activations.py (BERT, ALBERT) and
test_families_activations.py (the other five families). The tiny draws run the engine on real CPU tensors
(engine.Run(fake=False): the same dispatch mode and categories, with storage): at these sizes that is 8-30 times
faster than fake tensors, whose equality with real ones tests/test_engine.py holds on 140 configs and
tests/test_engine_finetune.py on the fine-tuned builds; the real sizes run on fake tensors, which no real tensor
here could hold:

* the replayed families (BERT, ALBERT, RoBERTa, DistilBERT, ELECTRA: albert_core/step/backward.py; DeBERTa-v2:
  backward_deberta.py; ModernBERT: backward_modernbert.py; each replays the forward's last moments and the
  backward op by op): 50 random configs per family, each with its dtype, optimizer, checkpointing (not ALBERT:
  HF's AlbertModel cannot; ModernBERT draws it in 19 of 50), fine-tuning mode (full, frozen embeddings, frozen
  layers with a layer left to train or, for ALBERT and ELECTRA, every layer frozen behind their trainable
  E -> H projection, BitFit (ModernBERT: only with a bias); for BERT, RoBERTa, DistilBERT, ELECTRA (E = H) and
  ModernBERT every layer frozen (frozen-layers:L, a linear probe whose peak lies inside a frozen layer's forward)
  about three cases in ten where something trains (36 of the first four's 200 seeds, 10 of them checkpointed;
  ModernBERT 10 of 50, 4 checkpointed: its final_norm trains even without a head), the same draw for
  DeBERTa-v2 (something the forward reads trains: its headless AutoModel without a relative term trains nothing;
  with one, the trained rel_embeddings reach every layer, which then records as a trained one: 9 of 50 seeds,
  one without a relative term, all equal to the byte; 127 of 600 seeds, 30 without, all equal), and for the five
  BERT-style families peft's LoRA one case in four: rank, alpha, dropout, one to three Linear targets, bias
  mode), task head (none, sequence or token classification, and MLM for the BERT-style five) and attention
  (eager or sdpa: CPU flash, or its math path with attention dropout) drawn: the peak within 1% of the
  engine's (measured: all 350 equal to the byte, the linear probes and the checkpointed ones too; ALBERT's
  seeds 50-150 too, 98 of 101 before AddmmBackward0 handed the bias's gradient on first, and seed 20, +0.06%
  before; of seeds 50-299 of the other six, every draw more than 0.1% off is in FOUND, now equal) and in the same
  phase, what is alive at the start equal to the byte;
* where the optimizer step holds the peak (a large vocabulary, batch 1, one or two tokens), the peak equals
  the engine's to the byte for AdamW and Adafactor in every dtype, within 1% for SGD: 3 configs per family,
  with torch.optim's for-loop step (the CPU's default) and its foreach step (CUDA's default, which
  device="cuda" models; run here on the CPU's foreach path);
* LoRA on real tensors (peft's model, every family): equal to the byte where replayed;
* peft's lora.Embedding on the word embeddings (backward_lora.lora_embedding), in half the LoRA draws (alone or
  beside the Linear targets): 52 of the 350 seeds, every family, all equal to the byte; on the position and
  token-type tables too in a third of the LoRA draws (29 of the 350 seeds), and on every table the model builds
  (DeBERTa's rel_embeddings too, whose adapter the encoder never applies) in 3 draws per family;
* draws past the 50 seeds (FOUND) that each exposed a gap, now equal to the byte;
* real sizes (bert-base 8 × 512 ..., ModernBERT-base 8 × 512 mixed bf16, 4 × 2,048 mixed bf16 with
  checkpointing, ModernBERT-large 1 × 8,192, bert-base 16 × 512 mixed bf16 LoRA r=8 on word_embeddings, query,
  value classification:2 (10,826,533,344 B), and the linear probes bert-base 16 × 512 mixed bf16
  frozen-layers:12 classification:2 with sdpa and eager, ModernBERT-base 16 × 512 mixed bf16 frozen-layers:22
  classification:2 with sdpa and eager (830,517,784 B and 1,262,268,952 B), deberta-v3-base 16 × 512 mixed bf16
  frozen-layers:12 classification:2, eager): equal to the engine's peak.
"""

from __future__ import annotations

import dataclasses
import random
import re

import pytest

from albert_core.config import ModelConfig
from albert_core.engine import core as engine
from albert_core.engine import task_model
from albert_core.engine.measure import default_kind, maker
from albert_core.estimate import finetune
from albert_core.estimate.hf_modules import model_modules
from albert_core.presets import PRESETS
from albert_core.step.backward_lora import EMBEDDING_A
from albert_core.step.peak import _unused, optimizer_temporaries, step_peak
from albert_core.workload import Workload
from tests.test_activations import random_config as random_bert_albert
from tests.test_families_activations import random_config as random_other

FAMILIES = ["bert", "albert", "roberta", "distilbert", "electra", "deberta-v2", "modernbert", "mpnet"]
# the random draws choose among the five dtypes they were drawn with (adding a choice would redraw every seed);
# the master-copy precisions have their own draws (test_master_step_peak_equals_the_engine)
DTYPES = ["float32", "bfloat16", "float16", "mixed_bf16", "mixed_fp16"]
OPTIMIZERS = list(engine.OPTIMIZERS)


def _config(family: str, rng: random.Random) -> ModelConfig:
    return random_bert_albert(rng, family) if family in ("bert", "albert") else random_other(rng, family)


def _make(cfg: ModelConfig, run: engine.Run, mode: str, head: str, labels: int, lora):
    """The model the engine builds for a draw: the base model as the source that expresses it, else the task model."""
    w = run.workload
    if (mode, head) == ("full", "none"):
        return maker(cfg, default_kind(cfg, w.checkpointing), w.attention)
    return _built(cfg, mode, w.attention, head, labels, lora)


def _measure(cfg: ModelConfig, run: engine.Run, make=None) -> engine.StepPeak:
    kind = default_kind(cfg, run.workload.checkpointing)
    step = engine.measure(make or maker(cfg, kind, run.workload.attention), cfg.vocab_size, run, what=("step",)).step
    assert step is not None
    return step


def _estimate(cfg: ModelConfig, run: engine.Run, **kw):
    """albert_core's step for the engine's run (on the CPU), kw: the Workload's other fields."""
    return step_peak(cfg, run.workload.replace(**kw))


def _optimizer_bound(family: str, seed: int) -> tuple[ModelConfig, int]:
    rng = random.Random(f"opt-{family}-{seed}")
    cfg = _config(family, rng)
    return cfg.replace(vocab_size=rng.randint(300, 900)), rng.randint(1, 2)


@pytest.mark.parametrize("foreach", [False, True], ids=["for-loop", "foreach"])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("family", FAMILIES)
def test_optimizer_step_peak_equals_the_engine(family, seed, foreach):
    """foreach: torch.optim's multi-tensor step, CUDA's default, run on the CPU's foreach path."""
    cfg, S = _optimizer_bound(family, seed)
    for i, dtype in enumerate(engine.DTYPES):  # every dtype (the master copies too), the optimizers in turn
        opt = OPTIMIZERS[(i + seed) % 3]
        run = engine.Run(Workload(1, S, dtype, "eager", device="cpu", optimizer=opt, foreach=foreach), fake=False)
        m, e = _measure(cfg, run), _estimate(cfg, run, foreach=foreach)
        assert e.at_start == m.at_start, (cfg, dtype, opt)  # parameters, buffers, optimizer state, input
        if opt == "sgd":
            assert e.peak <= m.peak <= 1.01 * e.peak, (cfg, dtype)
            continue
        assert (e.peak, e.phase) == (m.peak, m.phase), (cfg, dtype, opt)
        assert e.at_peak == m.at_peak, (cfg, dtype, opt)


REPLAYED = ["bert", "albert", "roberta", "distilbert", "electra", "deberta-v2", "modernbert", "mpnet"]
# every family's MLM head (bert_forward._mlm_head; ModernBERT's backward_modernbert._head), peft's lora.Linear
# (backward_lora.py, through backward_deberta/_modernbert.py) and checkpointing (not ALBERT's) are replayed


def _built(cfg: ModelConfig, mode: str, attention: str, head: str = "none", num_labels: int = 2,
           lora: finetune.LoraSpec | None = None):
    def make():
        if mode == "lora":  # peft's model, its attention set before the adapters wrap it
            return task_model.build(cfg, mode, device="cpu", head=head, num_labels=num_labels, lora=lora,
                                  attention=attention)
        model = task_model.build(cfg, mode, device="cpu", head=head, num_labels=num_labels)
        model.set_attn_implementation(attention)  # AutoModel's default is sdpa: set it as asked
        model.set_attn_implementation(attention)
        return model
    return make


def _frozen_layers(cfg: ModelConfig, rng: random.Random) -> str:
    """frozen-layers:K with at least one layer left to train (ALBERT: a group is frozen by any of its layers)."""
    for k in sorted({rng.randint(0, cfg.num_layers - 1), 0}, reverse=True):
        mode = f"frozen-layers:{k}"
        if any(t.trainable and t.part == "layers" for t in finetune.tensors(cfg, mode)):
            return mode
    raise AssertionError("frozen-layers:0 trains every layer")


def _property_case(family: str, seed: int):
    rng = random.Random(f"step-{family}-{seed}")
    cfg = _config(family, rng)
    projection = family == "albert" or (family == "electra" and cfg.embedding_dim != cfg.hidden_dim)
    B, S = rng.randint(1, 3), rng.randint(1, cfg.max_position)
    mode = rng.choice(["full", "full", "frozen-embeddings", "frozen-layers", "bitfit"])
    if mode == "frozen-layers":
        mode = _frozen_layers(cfg, rng)
        if projection and random.Random(f"step-frozen-{family}-{seed}").random() < 0.5:
            mode = f"frozen-layers:{cfg.num_layers}"  # every layer frozen, the E -> H projection trains
    attention = "sdpa" if rng.random() < 0.4 else "eager"  # CPU sdpa: the flash kernel, or with dropout the math path
    checkpointing = family not in ("albert", "mpnet") and rng.random() < 0.3  # HF's models that can checkpoint
    run = engine.Run(Workload(B, S, rng.choice(DTYPES), attention, checkpointing=checkpointing, device="cpu",
                              optimizer=rng.choice(OPTIMIZERS)), fake=False)  # TINY: real tensors (module docstring)
    head = rng.choice(["none", "none", "classification", "token"])
    if family == "modernbert":  # BitFit needs a bias
        mode = "full" if mode == "bitfit" and not (cfg.attention_bias or cfg.mlp_bias or cfg.norm_bias) else mode
    labels = rng.randint(1, 5)
    # the MLM head, every layer frozen and LoRA, each from its own stream: the rest of the draw unchanged
    if random.Random(f"step-mlm-{family}-{seed}").random() < 0.15:
        head = "mlm"
    if not projection and random.Random(f"step-allfrozen-{family}-{seed}").random() < 0.3:
        every = f"frozen-layers:{cfg.num_layers}"  # a linear probe: the peak inside a frozen layer's forward
        if any(t.trainable and not _unused(cfg, t.name) for t in finetune.tensors(cfg, every, head=head,
                                                                                   num_labels=labels)):
            mode = every  # (DistilBERT's and ELECTRA's AutoModel would train nothing: no pooler; ModernBERT's final_norm)
    lora = _lora_draw(cfg, head, random.Random(f"step-lora-{family}-{seed}"),
                      random.Random(f"step-loraemb-{family}-{seed}"), random.Random(f"step-loraother-{family}-{seed}"))
    return cfg, run, ("lora" if lora is not None else mode), head, labels, lora


def _other_tables(cfg: ModelConfig) -> list[str]:
    """The embedding tables beside the word lookup that cfg's model builds (peft targets them by name)."""
    names = {m.path.rsplit(".", 1)[-1] for m in model_modules(cfg) if m.kind == "embedding"}
    return sorted(names & {"position_embeddings", "token_type_embeddings", "rel_embeddings"})


def _lora_draw(cfg: ModelConfig, head: str, rng: random.Random, emb: random.Random,
               other: random.Random) -> finetune.LoraSpec | None:
    """One case in four is peft's LoRA: rank, alpha, dropout, one to three Linear targets (peft's default for the
    model type or not), a bias mode; for half of them (`emb`, its own stream) peft's lora.Embedding on the word
    embeddings too, alone or beside the Linear targets; for a third (`other`) on one or two of the other tables
    too (position, token type, DeBERTa's rel_embeddings, which the encoder reads by .weight: an adapter never
    applied); None for the others (and where no adapter lands inside the layers or at the word lookup)."""
    if rng.random() >= 0.25:
        return None
    names = finetune.lora_candidates(cfg)
    lora = finetune.LoraSpec(r=rng.randint(1, 6), lora_alpha=rng.choice([1, 8, 16, 32]),
                             lora_dropout=rng.choice([0.0, 0.0, 0.05, 0.1]),
                             targets=tuple(rng.sample(names, rng.randint(1, min(3, len(names))))),
                             bias=rng.choice(["none", "none", "all", "lora_only"]))
    word, u = ("tok_embeddings" if cfg.family == "modernbert" else "word_embeddings"), emb.random()
    if u < 0.5:  # the lookup's adapter alone (u < 0.25) or with the Linear ones
        lora = dataclasses.replace(lora, targets=(word,) if u < 0.25 else (word, *(lora.targets or ())))
    tables = _other_tables(cfg)
    if tables and other.random() < 0.33:
        extra = other.sample(tables, other.randint(1, min(2, len(tables))))
        lora = dataclasses.replace(lora, targets=(*(lora.targets or ()), *extra))
    try:
        ts = finetune.tensors(cfg, "lora", head=head, lora=lora)
    except ValueError:  # e.g. only the pooler targeted, which a token model does not build
        return None
    in_layers = any(t.part == "adapter" and (re.search(r"\.(layer|layers|albert_layer_groups)\.\d+\.", t.name)
                                             or t.name.endswith(EMBEDDING_A)) for t in ts)
    return lora if in_layers else None  # else every layer is frozen (the all-frozen draw covers that forward)


# the draws of the 350 whose modelled peak is not equal to the byte, and their bounds: none (ALBERT seed 20, token
# head, Adafactor, mixed bf16, sdpa, 2 x 3 tokens, was +48 B, +0.059%, until AddmmBackward0 handed its gradients on
# bias first: test_albert_shared_bias_gradient_summed_before_the_weights)
RESIDUALS: dict[tuple[str, int], float] = {}


@pytest.mark.parametrize("seed", range(50))
@pytest.mark.parametrize("family", REPLAYED)
def test_step_peak_equals_the_engine(family, seed):
    cfg, run, mode, head, labels, lora = _property_case(family, seed)
    make = _make(cfg, run, mode, head, labels, lora)
    m, e = _measure(cfg, run, make), _estimate(cfg, run, mode=mode, head=head, num_labels=labels, lora=lora)
    assert e.activations_exact
    assert e.at_start == m.at_start, (cfg, run, mode, head, lora)
    off = RESIDUALS.get((family, seed), 0.0)  # equal to the byte, but for the draws named there
    assert abs(e.peak - m.peak) <= off * m.peak, (cfg, run, mode, head, lora, e.peak, m.peak, e.moment)
    assert not off or e.peak != m.peak, f"{family} seed {seed} is now equal to the byte: take it out of RESIDUALS"
    assert e.phase == m.phase, (cfg, run, mode, head, lora, e.moment)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("family", REPLAYED)
def test_master_step_peak_equals_the_engine(family, seed):
    """16-bit weights with float32 master copies (bf16_master, fp16_master): the property draws with the master
    precision of their 16-bit dtype; the masters, their float32 gradients at the optimizer step and float32 state
    equal the engine's, and so does the peak."""
    cfg, run, mode, head, labels, lora = _property_case(family, seed)
    run = dataclasses.replace(run, workload=run.workload.replace(precision=("bf16_master", "fp16_master")[seed % 2]))
    make = _make(cfg, run, mode, head, labels, lora)
    m, e = _measure(cfg, run, make), _estimate(cfg, run, mode=mode, head=head, num_labels=labels, lora=lora)
    assert e.at_start == m.at_start and e.at_start["master weights"] > 0, (cfg, run, mode, head, lora)
    assert (e.peak, e.phase) == (m.peak, m.phase), (cfg, run, mode, head, lora, e.peak, m.peak, e.moment)
    assert e.at_peak["master weights"] == m.at_peak["master weights"]
    if e.phase == "optimizer step":  # elsewhere the replay may name a storage otherwise (the peak still equal)
        assert e.at_peak == m.at_peak, (cfg, run, mode, head, lora)


# draws past the 50 seeds above that each found a gap in the replay (all now equal to the byte): DeBERTa's
# share_att_key weight cast once per checkpointed layer (80, 95: +2.9%, +1.9%), LoRA on a position projection no
# term reads (66, 210: -1.1%, -1.0%), pos_dropout's noise where rel_embeddings train but the loss never reads them
# (11), or where they are frozen (261: +2.9%); a checkpointed node's recomputed inputs dying before validate_outputs'
# sum_to of the bias gradient (RoBERTa 217: +0.86%); a held inputs_embeds leaf at the loss (DistilBERT 277: -2.5%);
# a frozen MLM decoder's bias cast (DistilBERT 281, LoRA); ModernBERT's sliding-window mask arithmetic, |q - kv|
# over (S, S) int64 (253: -1.9%, a linear probe); ALBERT's shared bias gradient summed before the weight's (56, 87
# mixed bf16, 95 float16, its AccumulateGrad's InputBuffer: +0.11%, +0.07%, +0.16%; 98 of seeds 50-150 equal before)
FOUND = [("deberta-v2", 80), ("deberta-v2", 95), ("deberta-v2", 66), ("deberta-v2", 210), ("deberta-v2", 11),
         ("deberta-v2", 261), ("roberta", 217), ("distilbert", 277), ("distilbert", 281), ("modernbert", 253),
         ("albert", 56), ("albert", 87), ("albert", 95)]


@pytest.mark.parametrize(("family", "seed"), FOUND)
def test_step_peak_found_draws_equal_the_engine(family, seed):
    cfg, run, mode, head, labels, lora = _property_case(family, seed)
    make = _make(cfg, run, mode, head, labels, lora)
    m, e = _measure(cfg, run, make), _estimate(cfg, run, mode=mode, head=head, num_labels=labels, lora=lora)
    assert (e.peak, e.phase) == (m.peak, m.phase), (cfg, run, mode, head, lora, e.moment)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("family", REPLAYED)
def test_lora_on_every_table_equals_the_engine(family, seed):
    """peft's lora.Embedding on every table the model builds (word, position, token type; DeBERTa's
    rel_embeddings, read by .weight: its adapter trains nothing) beside one attention Linear, a random run."""
    rng = random.Random(f"tables-{family}-{seed}")
    cfg = _config(family, rng)
    run = engine.Run(Workload(batch_size=rng.randint(1, 3), seq_len=rng.randint(1, cfg.max_position),
                              precision=rng.choice(DTYPES), optimizer=rng.choice(OPTIMIZERS),
                              attention=rng.choice(["eager", "sdpa"]),
                              checkpointing=family not in ("albert", "mpnet") and rng.random() < 0.3, device="cpu"),
                     fake=False)
    head = rng.choice(["none", "classification", "token"])
    word = "tok_embeddings" if family == "modernbert" else "word_embeddings"
    lora = finetune.LoraSpec(r=rng.randint(1, 6), lora_alpha=16, lora_dropout=rng.choice([0.0, 0.1]),
                             targets=(word, *_other_tables(cfg), finetune.lora_candidates(cfg)[0]))
    m = _measure(cfg, run, _built(cfg, "lora", run.workload.attention, head, 2, lora))
    e = _estimate(cfg, run, mode="lora", head=head, num_labels=2, lora=lora)
    assert e.replayed and e.activations_exact
    assert (e.peak, e.phase) == (m.peak, m.phase), (cfg, run, head, lora, e.moment)


@pytest.mark.parametrize("family", REPLAYED)
def test_lora_state_and_optimizer_step_equal_the_engine(family):
    rng = random.Random(f"lora-{family}")
    cfg = _config(family, rng).replace(vocab_size=rng.randint(300, 900))
    lora = finetune.LoraSpec(r=rng.randint(1, 4), lora_dropout=0.1, targets=finetune.lora_candidates(cfg)[:2])
    run = engine.Run(Workload(1, 2, "float32", "eager", device="cpu", optimizer="adafactor"), fake=False)
    m = _measure(cfg, run, make=lambda: task_model.build(cfg, "lora", lora=lora, device="cpu", attention="eager"))
    e = _estimate(cfg, run, mode="lora", lora=lora)
    assert e.at_start == m.at_start
    opt = next(c for c in e.candidates if c.name == "optimizer step")
    assert opt.total <= m.peak  # a moment of the step: never above the peak
    # peft's lora.Linear replayed op by op (backward_lora.py): to the byte on real tensors
    assert (e.peak, e.phase) == (m.peak, m.phase), (e.peak, m.peak, e.moment)


def test_optimizer_temporaries_follow_torch_optim():
    ts = [finetune.Tensor("a", (3, 5), True, "layers"), finetune.Tensor("b", (7,), True, "layers"),
          finetune.Tensor("c", (2, 2), False, "layers")]
    assert optimizer_temporaries(ts, "sgd", 4) == 0
    assert optimizer_temporaries(ts, "adamw", 4) == 4 * max(2 * 15, 15 + 2 * 7)  # previous denom + sqrt + quotient
    # Adafactor, b (a vector) after a: row_mean 3 + col_mean 5 + a's update 15 + grad_squared 7 + variance.clone() 7
    assert optimizer_temporaries(ts, "adafactor", 2) == 2 * (3 + 5 + 15 + 7 + 7)
    # foreach (CUDA's default): AdamW's sqrt of every state at once; Adafactor by groups, matrices first here:
    # a's var_estimates (15) with its row_var_means (1), then b's clones (7) while a's updates are still bound
    assert optimizer_temporaries(ts, "adamw", 4, foreach=True) == 4 * (15 + 7)
    assert optimizer_temporaries(ts, "adafactor", 4, foreach=True) == 4 * (15 + 7)
    assert optimizer_temporaries(ts, "sgd", 4, foreach=True) == 0
    # a vector first: its clones (7) stay bound while the matrix group's var_estimates (15) and
    # row_var_means (1) are made; on CUDA each tensor is rounded up to 512 bytes
    assert optimizer_temporaries([ts[1], ts[0]], "adafactor", 4, foreach=True) == 4 * (7 + 15 + 1)
    assert optimizer_temporaries([ts[1], ts[0]], "adafactor", 4, foreach=True, cuda=True) == 512 * 3


@pytest.mark.parametrize("name, batch, seq, dtype, opt, ckpt", [
    ("bert-base", 8, 512, "float32", "adamw", False),
    ("bert-base", 8, 512, "float32", "adafactor", False),
    ("bert-base", 8, 512, "bfloat16", "sgd", False),
    ("xlm-roberta-base", 16, 512, "mixed_bf16", "adamw", False),
    ("albert-xxlarge", 8, 512, "float32", "adamw", False),
    ("bert-base", 8, 512, "mixed_bf16", "adamw", True),
    ("ModernBERT-base", 8, 512, "mixed_bf16", "adamw", False),
    ("ModernBERT-base", 4, 2048, "mixed_bf16", "adamw", True),
    ("ModernBERT-large", 1, 8192, "float32", "adamw", False),
])
def test_real_sizes_equal_the_engine(name, batch, seq, dtype, opt, ckpt):
    cfg = PRESETS[name]
    run = engine.Run(Workload(batch, seq, dtype, "eager", checkpointing=ckpt, device="cpu", optimizer=opt))
    m, e = _measure(cfg, run), _estimate(cfg, run)
    assert (e.peak, e.phase) == (m.peak, m.phase), (e.peak, m.peak, m.phase, e.moment)


_SMALL_ALBERT = PRESETS["albert-base"].replace(hidden_dim=64, num_heads=4, intermediate_dim=128, num_layers=2,
                                               vocab_size=40, embedding_dim=8, max_position=16)


@pytest.mark.parametrize(("cfg", "run", "peak"), [
    (PRESETS["albert-base"], engine.Run(Workload(2, 64, "mixed_bf16", "eager", device="cpu")), 243_385_352),
    (_SMALL_ALBERT, engine.Run(Workload(1, 4, "float32", "eager", device="cpu"), fake=False), 699_656),
    (_SMALL_ALBERT.replace(num_layers=3), engine.Run(Workload(1, 8, "mixed_bf16", "eager", device="cpu"),
                                                     fake=False), 686_600),
], ids=["albert-base 2x64 mixed_bf16 (Verify's default)", "small float32", "small mixed_bf16"])
def test_albert_shared_bias_gradient_summed_before_the_weights(cfg, run, peak):
    """ALBERT's shared layer: each application's gradient of a shared weight or bias waits in an InputBuffer (its
    autocast cast's ToCopyBackward0, or its AccumulateGrad, ready once every application's has come), where the
    engine's dispatch mode makes InputBuffer::accumulate add out of place (old + new). addmm(bias, x, W^T)'s
    AddmmBackward0 hands its gradients on in that order, so a bias's sum is made (its addends freed) before the
    weight's, at the peak. Handed on as (x, W, bias), the replay was one bias vector over: albert-base 2 x 64 mixed
    bf16 eager AdamW (the Verify view's default) 243,386,888 B, +1,536 B; these small ones +256 B and +128 B. The
    sums are temporaries until the last, which AccumulateGrad steals: what is alive equal by category too."""
    m, e = _measure(cfg, run), _estimate(cfg, run)
    assert (e.peak, e.phase, e.moment) == (m.peak, m.phase, "backward: AddmmBackward0") and m.peak == peak, \
        (e.peak, m.peak, e.moment)
    assert e.at_peak == m.at_peak


@pytest.mark.parametrize(("name", "attention", "peak"), [
    ("bert-base", "sdpa", 1_235_469_336), ("bert-base", "eager", 832_816_152),
    ("ModernBERT-base", "sdpa", 830_517_784), ("ModernBERT-base", "eager", 1_262_268_952)])
def test_linear_probe_real_size_equals_the_engine(name, attention, peak):
    """Every layer frozen, the head and classifier trained (16 x 512 mixed bf16, frozen-layers:L,
    classification:2): the peak inside a frozen layer's attention, replayed op by op. bert-base: sdpa's CPU math
    path (the float32 (B, A, S, S) probabilities, their dropout noise and product); before, the lower-bound
    candidates 639,009,816 B (-48%, -23%). ModernBERT-base: a sliding-window layer (sdpa: its rotary, the float32
    q.float() copies; eager: the float32 softmax of (B, A, S, S) scores; backward_modernbert: the last layer of
    each attention type records its moments); before 874,226,200 B (+5.3%, -30.7%). Equal to the engine's peak,
    which is the one measured when this was written."""
    cfg = PRESETS[name]
    run = engine.Run(Workload(16, 512, "mixed_bf16", attention, device="cpu", optimizer="adamw"))
    mode, head = f"frozen-layers:{cfg.num_layers}", "classification"
    m = _measure(cfg, run, _built(cfg, mode, attention, head, 2))
    e = _estimate(cfg, run, mode=mode, head=head, num_labels=2)
    assert e.activations_exact
    assert (e.peak, e.phase) == (m.peak, m.phase) == (peak, "forward"), (e.peak, m.peak, m.phase, e.moment)


def test_deberta_real_size_equals_the_engine():
    """Replayed (albert_core/step/backward_deberta.py): equal to the byte (before the replay a lower bound)."""
    cfg = PRESETS["deberta-v3-base"]
    run = engine.Run(Workload(4, 512, "float32", "eager", device="cpu"))
    m, e = _measure(cfg, run), _estimate(cfg, run)
    assert (e.peak, e.phase) == (m.peak, m.phase), (e.peak, m.peak, m.phase, e.moment)


def test_deberta_linear_probe_real_size_equals_the_engine():
    """Every layer frozen, the relative embeddings, their LayerNorm, the pooler and classifier trained
    (deberta-v3-base 16 x 512 mixed bf16, frozen-layers:12, classification:2; eager: DeBERTa-v2 has no sdpa): the
    relative embeddings reach every layer's c2p/p2c terms, so the frozen layers' ops record and save as in a
    trained step, the peak at the last layer's output LayerNorm. Equal to the engine's peak (9,814,502,494 B);
    before, the lower-bound candidates: 940,694,552 B (-90.4%)."""
    cfg = PRESETS["deberta-v3-base"]
    run = engine.Run(Workload(16, 512, "mixed_bf16", "eager", device="cpu", optimizer="adamw"))
    mode, head = f"frozen-layers:{cfg.num_layers}", "classification"
    m = _measure(cfg, run, _built(cfg, mode, "eager", head, 2))
    e = _estimate(cfg, run, mode=mode, head=head, num_labels=2)
    assert e.activations_exact
    assert (e.peak, e.phase) == (m.peak, m.phase), (e.peak, m.peak, m.phase, e.moment)


def test_lora_embedding_real_size_equals_the_engine():
    """peft's lora.Embedding on the word embeddings beside lora.Linear on query and value (bert-base 16 x 512 mixed
    bf16 sdpa, r=8, classification:2), replayed op by op (backward_lora.lora_embedding): equal to the engine's
    peak, 10,826,533,344 B in the last layer's attention; before, the lower-bound candidates: 11,715,508,704 B
    (+8.2%, in the forward's end)."""
    cfg = PRESETS["bert-base"]
    run = engine.Run(Workload(16, 512, "mixed_bf16", "sdpa", device="cpu", optimizer="adamw"))
    lora = finetune.LoraSpec(r=8, targets=("word_embeddings", "query", "value"))
    m = _measure(cfg, run, _built(cfg, "lora", "sdpa", "classification", 2, lora))
    e = _estimate(cfg, run, mode="lora", head="classification", num_labels=2, lora=lora)
    assert e.activations_exact
    assert (e.peak, e.phase) == (m.peak, m.phase) == (10_826_533_344, "forward"), (e.peak, m.peak, m.phase, e.moment)


def test_bert_with_inner_layer_groups_is_not_claimed_replayed():
    """BERT with inner_group_num > 1 (the reference encoder's layout): the BERT-style recorder runs one layer a layer
    step, so the step is not replayed (it was, one layer short: 7,482,376 B against the engine's 12,471,304 B, -40%);
    the lower-bound candidates take it, near the engine's peak."""
    cfg = PRESETS["bert-base"].replace(num_layers=2, inner_group_num=2, hidden_dim=64, num_heads=4, intermediate_dim=128,
                                       vocab_size=500, max_position=128, embedding_dim=64)
    assert default_kind(cfg) == "reference"
    run = engine.Run(Workload(2, 128, "float32", "eager", device="cpu"), fake=False)
    measured = _measure(cfg, run)
    est = step_peak(cfg, Workload(2, 128, "float32", "eager", device="cpu"))
    assert not est.replayed
    assert abs(est.peak - measured.peak) / measured.peak < 0.05, (est.peak, measured.peak)


def test_the_tensors_at_the_step_start_are_built_once_per_model_and_setup_and_shared_read_only():
    """step._tensor_state builds the tensors of a model and its fine-tuning once (a batch search asks for the same
    model 14 times per config): a peak from the cache equals one computed afresh, a workload that differs in the
    batch, length or precision alone reuses the entry, one with another optimizer or mode does not, and what every
    caller shares cannot be changed by one of them."""
    from albert_core.step import peak as step

    cfg = PRESETS["albert-base"]
    w = Workload(4, 128, "mixed_bf16", "sdpa", optimizer="adamw")
    step._tensor_state.cache_clear()
    step._temporaries.cache_clear()
    first = step_peak(cfg, w)
    again = [step_peak(cfg, w.replace(batch_size=b, seq_len=s)) for b, s in ((1, 64), (16, 512))]
    again.append(step_peak(cfg, w.replace(precision="float32")))
    info = step._tensor_state.cache_info()
    assert (info.misses, info.currsize) == (1, 1) and info.hits >= 3, info
    step_peak(cfg, w.replace(optimizer="sgd"))
    step_peak(cfg, w.replace(mode="frozen-embeddings"))
    assert step._tensor_state.cache_info().misses == 3
    for wi, cached in zip((w.replace(batch_size=1, seq_len=64), w.replace(batch_size=16, seq_len=512),
                           w.replace(precision="float32")), again, strict=True):
        step._tensor_state.cache_clear()
        step._temporaries.cache_clear()
        assert step_peak(cfg, wi) == cached
    assert first.peak < again[1].peak  # the entries are shared, not the numbers
    ts, requires, elements = step._tensor_state(cfg, step.Setup.of(w))
    assert isinstance(ts, tuple) and ts
    with pytest.raises(TypeError):
        requires[ts[0].name] = False  # type: ignore[index]
    with pytest.raises(TypeError):
        elements["gradients"] = 0  # type: ignore[index]
