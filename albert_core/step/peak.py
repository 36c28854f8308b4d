"""The training step's peak, modelled: what is alive at the step's highest moment, and in which phase.

The step is engine.step_peak's (albert_core/engine/core.py): training step 2 of cfg's model (forward, loss =
last_hidden_state.float().mean() (+ the pooled output's), backward, optimizer.step() with torch.optim's
single-tensor CPU implementations), the live storages counted by category. Closed forms and albert_core's
activation replay only; no torch.

What is alive all step long (at_start, exact): the parameters (finetune.tensors: every stored tensor once,
in the step's dtype: float32 under autocast), the buffers (position_ids and token_type_ids int64 rows of
max_position_embeddings; ModernBERT's rotary inv_freq and its original copy per layer type, float), the
optimizer state of the trainable tensors (finetune.state_elements; AdamW's float32 `step` counters are
host-side and left out, as the engine does) and input_ids (B·S int64).

The candidates for the peak; the estimate is the largest:

* replayed (albert_core/step/backward.py; BERT, ALBERT, RoBERTa, DistilBERT, ELECTRA, MPNet (its own encoder:
  step/mpnet_forward.py; eager only, no checkpointing, as transformers builds it); eager or CPU sdpa (flash,
  or the math path with attention dropout); any dtype, checkpointing, fine-tuning mode (peft's LoRA on
  Linear targets and on the word embeddings too: backward_lora.py replays lora.Linear and lora.Embedding op by
  op; bert-base r=8 word_embeddings, query, value 16 × 512 mixed bf16 sdpa classification:2 equal to the engine,
  10,826,533,344 B, before 11,715,508,704 B, +8.2%), head none/classification/token/MLM
  (the family's own head, its decoder tied to the word embeddings), a layer left to train, ALBERT's and
  ELECTRA's trainable E -> H projection ahead of frozen layers, or every layer frozen (a linear probe)): the
  forward's moments (the embeddings' LayerNorm and dropout, the last layer's ops one by one (its Linears with
  their autocast casts, the attention's matmuls, softmax and dropout, sdpa's math path, the activation's ops,
  the LayerNorms with their statistics), the pooler, the head, the loss: every saved tensor and the tensors
  Python still holds) and the backward
  replayed op by op on the recorded autograd graph (torch/csrc/autograd/engine.cpp's order, each
  backward formula's allocations, saved tensors released as their node runs, checkpointing's
  recomputation; a checkpointed node's recomputed inputs die as its apply returns, before validate_outputs'
  sum_to). Equal to the engine's peak to the byte on the tests' random configs and real sizes (ALBERT too, its
  shared layers' gradients summed in InputBuffers, AddmmBackward0 handing the bias's on first: albert-base 2 × 64
  mixed bf16 eager 243,385,352 B, before +1,536 B; 101 of ALBERT's seeds 50-150, before 98, up to +0.16%).
  DeBERTa-v2 (albert_core/step/backward_deberta.py, its disentangled attention's ops and moments): the same
  (deberta-v3-base 16 × 512 mixed bf16 equal to the byte, before 2.82% low); with checkpointing equal
  on the random configs (autocast's cast of a weight used twice in one layer, share_att_key, made once).
  DeBERTa-v2's MLM head (legacy: BERT's, H -> E; deberta-v3-base 8 × 512 mixed bf16 10,802,864,068 B, equal).
  ModernBERT likewise (albert_core/step/backward_modernbert.py; head none/classification/token/MLM; LoRA through the
  same hook: ModernBERT-base r=8 Wqkv 16 × 512 mixed bf16 classification:2 5,315,697,184 B, equal;
  ModernBERT-large 1 × 8,192 float32 equal, before 5.3% low; ModernBERT-base MLM 8 × 512 mixed bf16
  5,927,222,404 B, equal), with checkpointing too (each layer a checkpointed region, recomputed up to mlp.Wo's
  mm: ModernBERT-base 4 × 2,048 mixed bf16 sdpa AdamW 2,763,691,520 B in the forward, equal, before
  3,173,012,992 B (+14.8%, in the backward); eager 4,944,326,152 B, equal; 130 random checkpointed configs
  equal to the byte), and every layer frozen (a linear probe: the last layer of each attention type, global
  and sliding-window, records its moments op by op; ModernBERT-base 16 × 512 mixed bf16 frozen-layers:22
  classification:2 equal: sdpa 830,517,784 B, eager 1,262,268,952 B, before 874,226,200 B, +5.3% and -30.7%). DeBERTa-v2's LoRA through
  the same peft lora.Linear hook (deberta-v3-base r=8 query_proj, value_proj 16 × 512 mixed bf16 equal to
  the byte, before 7.4% high; on random configs equal, a position projection no term reads through its adapter too).
* otherwise (CUDA), moments of the step
  (lower bounds for the full model):
  - forward end: every saved activation (activations.activation_memory, device="cpu") and the encoder's
    output (B, S, H) while loss_of reads it, plus its float32 copy (`.float()`) where it is 16-bit.
  - backward start: every saved activation and the float32 gradient of the output (MeanBackward0 divides
    the expanded gradient: one (B, S, H) float32 tensor).
  - checkpointing (HF's per-layer torch.utils.checkpoint, use_reentrant=False): the moment layer j's
    recompute has finished, for the first and the last layer application j: the gradients of every layer
    above j and of the pooler, the embeddings' saved tensors, the checkpointed inputs of layers 0..j, one
    layer's recomputed saves (recompute_memory) and the gradient flowing into layer j's output.
  - end of backward: the parameters, every gradient and, while the word-embedding gradient is made (the
    last backward op), the (B, S, E) gradient of the embedding output.
* optimizer step (exact): every gradient stays alive through optimizer.step(); per tensor, in the order
  named_parameters() yields them, the temporaries torch/optim allocates:
  AdamW (_single_tensor_adam, not capturable): denom = exp_avg_sq.sqrt() / bias_correction2_sqrt: the sqrt
  and the quotient (2n), while the previous tensor's `denom` (a local rebound only when the next quotient
  is made) is still alive: n_prev + 2n at the peak.
  SGD with momentum (_single_tensor_sgd, weight_decay 0, step 2): buf.mul_().add_(), param.add_(): none.
  Adafactor (_single_tensor_adafactor): param.norm(2) (0-d, freed after .item()); a matrix n×m: row_mean
  (n×1), col_mean (1×m), var_estimate = row_var @ col_var (n×m), row_var.mean(dim=-2) (1×1), update.norm (0-d);
  a vector: grad * grad (n) and variance.clone() (n). Locals survive into the next tensor's iteration
  until rebound (row_mean, col_mean, grad_squared; the previous update until `update =` is rebound), which
  the replay below follows op by op.

What is modelled exactly and what is not: at_start and the optimizer-step candidate are exact for every
family, mode and head the tests cover (ALBERT frozen-layers: 12 bytes over, not found). Where the replay
runs (activations_exact True), the whole peak is exact (tests/test_step_peak.py: 50 random configs per
replayed family; bert-base 8 × 512 float32, xlm-roberta-base 16 × 512 mixed bf16, albert-xxlarge 8 × 512:
equal to the byte, before this replay 0.48%, 0.82% and 2.27% low; deberta-v3-base 16 × 512 mixed bf16 and
deberta-v3-large 4 × 512 float32 equal, before 2.82% and 0.24% low; ModernBERT-base 8 × 512 mixed bf16 and
ModernBERT-large 1 × 8,192 float32 equal, before 1.07% and 5.31% low). Elsewhere the activation-side
candidates leave out the backward's transient working set: tiny configs up to 25% low. LoRA and the MLM head
are replayed for the five BERT-style families (bert-base and xlm-roberta-base LoRA r = 8 16 × 512 mixed bf16
classification: equal to the engine, before 7-9% off). Where every layer is frozen (and the
layers' input needs no gradient: a linear probe) the peak lies inside a frozen layer's forward, where nothing is
saved and only Python's locals and each op's outputs are alive: bert_forward._bert_layer's moments follow that
working set op by op in transformers' order (eager attention's matmul and `* scaling` alive together, softmax's
input and output, CPU dropout's input, noise and product, the attention weights held by the layer's `_`, sdpa's
math path with its float32 copies), the same in every frozen layer before the first trained one (and covered by
a trained layer's moments, each a superset, when one trains: frozen-layers:L-1 on 135 tiny configs, the engine's
peak never in a frozen lower layer's forward, all equal but two checkpointed ones +0.05% and +0.04%, as before). Replayed for the five BERT-style families: bert-base
16 x 512 mixed bf16 frozen-layers:12 classification:2 equal to the engine (1,235,469,336 B with sdpa, 832,816,152 B
eager; before, the lower-bound candidates, 639,009,816 B: -48% and -23%); on tiny random configs equal to the byte
(tests/test_step_peak.py: 36 linear-probe draws among BERT's, RoBERTa's, DistilBERT's and ELECTRA's 200; ALBERT's
E -> H projection always trains). ModernBERT too (backward_modernbert: the last global and the last sliding-window
layer record their moments, a sliding layer's mask making its working set the larger; ModernBERT-base 16 × 512
mixed bf16 frozen-layers:22 classification:2 equal to the engine, 830,517,784 B with sdpa, 1,262,268,952 B eager,
before 874,226,200 B: +5.3% and -30.7%; 46 linear-probe draws among its 200 seeds equal to the byte, 16 of them
checkpointed, where enable_input_require_grads makes the frozen layers record a graph and the peak is in the
backward). DeBERTa-v2 too (backward_deberta.py): where a relative term (c2p, p2c) reads
encoder.rel_embeddings, those embeddings and their LayerNorm train with every layer frozen, so each layer's
attention and everything after it record as in a trained step (deberta-v3-base 16 x 512 mixed bf16
frozen-layers:12 classification:2 9,814,502,494 B, equal to the engine, the peak at the last layer's output
LayerNorm; before 940,694,552 B, -90.4%); without one the frozen forward's working set, _attention's and _layer's
moments op by op (q/k/v with transpose_for_scores' copies, key / scale, the c2p/p2c bmm, index, gather and term,
masked_fill with ~mask, softmax, dropout, the context; make_log_bucket_position's (S, S) temporaries in the
encoder). Tiny random configs: 127 linear-probe draws of 600 seeds, 30 of them without a relative term, all equal
to the byte (before -25.7% to +1.6% with the replay forced on, -90% with the lower bounds).

CUDA (not measured here; the engine runs on the CPU):
* the caching allocator rounds every block up to a multiple of 512 bytes (c10/cuda/CUDACachingAllocator.cpp,
  kMinBlockSize = 512, round_size) and keeps freed blocks cached: cuda_rounded() applies the rounding to
  each storage; reserved memory (fragmentation, 2 MiB/20 MiB segments) is not modelled.
* torch.optim defaults to foreach on CUDA (_default_to_fused_or_foreach): _multi_tensor_adam makes the
  sqrt over a whole dtype/device group at once (torch._foreach_sqrt(exp_avg_sqs), then divided in place), so
  its temporaries are one state-sized copy of every trainable tensor, not of one; Adafactor's multi-tensor
  step likewise (foreach_temporaries). device="cuda" uses these; on the CPU's foreach path (engine.Run
  foreach=True, which allocates the same tensors) they equal the engine's optimizer step to the byte
  (tests/test_step_peak.py). fused=True (torch._fused_adamw_) makes none.
* dropout masks are 1-byte bools (at::native_dropout) instead of the CPU's float noise: replay/symbolic.py's
  device="cuda" models that for the saved activations; LayerNorm statistics in float32.
* the step counters stay on the host (AdamW/Adafactor `step`), as here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import NamedTuple

from ..choices import MASTER, LoraSpec, parse_mode
from ..config import ModelConfig
from ..estimate.activations import Term, activation_memory, check_inputs, recompute_memory
from ..estimate.finetune import Tensor, state_elements, tensors
from ..families import family
from ..families.base import unread_parameter
from ..replay.symbolic import BYTES, split_dtype
from ..workload import Workload
from . import backward, backward_deberta, backward_lora, backward_modernbert
from .optimizer_step import cuda_rounded, foreach_adamw_temporaries, foreach_temporaries, optimizer_temporaries

CATEGORIES = ("parameters", "master weights", "buffers", "gradients", "optimizer state", "saved activations",
              "temporaries", "input")
_POOLED = ("bert", "albert", "roberta")  # AutoModel returns a pooler output (BertPooler: dense + tanh)


@dataclass(frozen=True)
class Candidate:
    """One moment of the step: its phase and the bytes alive then, by engine category."""

    name: str
    phase: str  # forward | backward | optimizer step
    at: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.at.values())


@dataclass(frozen=True)
class StepPeakEstimate:
    """The modelled peak of one training step (engine.step_peak's definition), bytes, exact ints."""

    config: str
    batch_size: int
    seq_len: int
    dtype: str
    optimizer: str
    attention: str
    checkpointing: bool
    mode: str
    head: str
    peak: int  # the largest candidate
    phase: str  # its phase
    moment: str  # its name (what happens then)
    at_peak: dict[str, int]  # CATEGORIES -> bytes alive at the peak (sums to peak)
    at_start: dict[str, int]  # CATEGORIES -> bytes alive when the step starts
    candidates: tuple[Candidate, ...] = field(repr=False)
    activations_exact: bool = True  # True where the step is replayed op by op (backward.py) or a prefix-frozen bound
    saved: int | None = None  # bytes every saved activation takes at once, where the replay counted them
    replayed: bool = False  # the forward's last moments and the backward replayed op by op (CPU kernels); else
    # their candidates are lower bounds (CUDA; LoRA on an embedding other than the word lookup)



def _categories(**kw: int) -> dict[str, int]:
    out = dict.fromkeys(CATEGORIES, 0)
    for k, v in kw.items():
        out[k.replace("_", " ")] = v
    return out


# ---- the parameters in named_parameters() order ------------------------------------------------------------
def _module_order(cfg: ModelConfig, ts: list[Tensor]) -> list[Tensor]:
    """finetune.tensors in the order the built model's named_parameters() yields them (its modules' __init__
    order): RobertaEmbeddings defines position_embeddings after LayerNorm; AlbertTransformer defines
    embedding_hidden_mapping_in before its groups and ElectraModel embeddings_project before the encoder."""
    def moved(pattern: str, anchor: str) -> list[Tensor]:
        move = [t for t in ts if re.search(pattern, t.name)]
        rest = [t for t in ts if not re.search(pattern, t.name)]
        last = max((i for i, t in enumerate(rest) if re.search(anchor, t.name)), default=-1)
        return rest[:last + 1] + move + rest[last + 1:]

    for pattern, anchor in family(cfg.family).STEP.parameter_order:
        ts = moved(pattern, anchor)
    return ts


def _bytes_per(dtype: str) -> int:
    md, _ = split_dtype(dtype)
    return BYTES[md]


def buffer_bytes(cfg: ModelConfig, dtype: str = "float32") -> int:
    """Bytes of the base model's buffers (transformers 5.23's register_buffer / nn.Buffer), in the step's dtype."""
    return family(cfg.family).buffer_bytes(cfg, _bytes_per(dtype))


# ---- layers and their gradients -------------------------------------------------------------------------------
_LAYER = re.compile(r"(?:^|\.)(?:layer|layers)\.(\d+)\.")
_GROUP = re.compile(r"(?:^|\.)albert_layer_groups\.(\d+)\.")


def _applications_using(cfg: ModelConfig, name: str) -> list[int] | None:
    """Layer steps (0..num_layers-1) whose forward uses tensor `name`, or None outside the layers."""
    m = _GROUP.search(name)
    if m:  # AlbertTransformer: layer i runs group int(i / (L / G))
        g, L, G = int(m.group(1)), cfg.num_layers, cfg.num_groups
        return [i for i in range(L) if int(i / (L / G)) == g]
    m = _LAYER.search(name)
    return [int(m.group(1))] if m else None


def _unused(cfg: ModelConfig, name: str) -> bool:
    """A built tensor the forward never reads: no gradient, so torch.optim keeps no state for it (it skips
    p.grad is None). DeBERTa-v2 with relative_attention but neither c2p nor p2c builds encoder.rel_embeddings
    and its LayerNorm (DebertaV2Encoder.__init__) that DisentangledSelfAttention never uses; without
    relative_attention the LayerNorm (norm_rel_ebd) is built and never used."""
    unread = unread_parameter(family(cfg.family))
    if unread is None:
        return False
    if backward_lora.unread(name):  # peft's lora.Embedding on rel_embeddings: the encoder reads .weight
        return True
    return bool(unread(cfg, name))


def _is_pooler(cfg: ModelConfig, name: str) -> bool:
    base = family(cfg.family).BASE_PREFIX
    return name.startswith(("pooler.", f"{base}.pooler.", "base_model.model.pooler.",
                            f"base_model.model.{base}.pooler."))


def _grads_above(cfg: ModelConfig, ts: Sequence[Tensor], step: int, nbytes: int) -> int:
    """Gradient bytes that exist once every layer step above `step` and the pooler have run backward."""
    total = 0
    for t in ts:
        if not t.trainable:
            continue
        apps = _applications_using(cfg, t.name)
        if (apps and max(apps) > step) or (apps is None and _is_pooler(cfg, t.name)):  # []: a group no step runs
            total += t.numel * nbytes
    return total


# ---- the estimate --------------------------------------------------------------------------------------------
def step_peak(cfg: ModelConfig, w: Workload) -> StepPeakEstimate:
    """The peak of one training step of cfg under w (engine.step_peak's step), by category and phase (module
    docstring); w's GPUs and sharding aside (training.training_memory applies ZeRO to these candidates).

    w.precision: float32, bfloat16/float16 (the model cast), mixed_bf16/mixed_fp16 (torch.autocast, float32
    weights) or bf16_master/fp16_master (the model cast, its optimizer over float32 master copies), as the engine
    runs them. w.device "cpu" is the engine's; "cuda" changes the saved activations
    (replay/symbolic.py) and the optimizer step (foreach, each temporary rounded as the caching allocator does); see
    the module docstring for what else differs on CUDA.
    w.foreach: torch.optim's multi-tensor step (engine.Run.foreach); None: the device's default (CUDA: True).
    """
    batch_size, seq_len, attention, checkpointing, device = (w.batch_size, w.seq_len, w.attention, w.checkpointing,
                                                             w.device)
    optimizer, mode, head, lora, foreach = w.optimizer, w.mode, w.head, w.lora, w.foreach
    precision, dtype = w.precision, w.forward_dtype  # a master run's forward and backward: the cast model's
    check_inputs(cfg, w)
    name, k = parse_mode(mode)
    B, S = batch_size, seq_len
    wb = _bytes_per(dtype)  # parameters and gradients in the weights' dtype
    sb = 4 if precision in MASTER else wb  # optimizer state: zeros_like its parameter (a master copy: float32)
    ts, requires, el, start = _at_start(cfg, w, wb, sb)
    G = el["gradients"] * wb
    persist = dict(start)
    cands: list[Candidate] = []

    recorder = family(cfg.family).STEP.recorder
    modern = recorder == "backward_modernbert" and backward_modernbert.modelled(name, head)  # a linear probe too
    replayed = device == "cpu" and (modern or backward.modelled(cfg, attention, checkpointing, name, head)) \
        and backward_lora.replayed([t.name for t in ts])  # peft's lora.Embedding: the word lookup's only
    if replayed:  # the forward's last moments and the backward, op by op (albert_core/step/backward.py)
        adapt = backward_lora.adapt({t.name: t.shape for t in ts}, (lora or LoraSpec()).lora_dropout) \
            if name == "lora" else None
        trainable = backward.trainable_by_name({t.name: t.trainable for t in ts})
        if modern:  # backward_modernbert.py
            pk, saved = backward_modernbert.peak(cfg, w, persist, trainable, adapt)
        elif recorder == "backward_deberta":  # backward_deberta.py (its MLM head: the legacy one, bert_forward._mlm_head)
            pk, saved = backward_deberta.deberta_peak(cfg, w, persist, trainable, adapt,
                                                      backward.trainable_by_name(requires))
        else:
            pk, saved = backward.bert_style_peak(cfg, w, persist, trainable, adapt)
        phase = "forward" if pk.where.startswith("forward") else "backward"
        cands.append(Candidate(pk.where if phase == "forward" else f"backward: {pk.where}", phase, pk.at))
    else:
        saved = None
        cands += _bound_candidates(cfg, ts, persist, w, wb, G)
    temps = _temporaries(cfg, Setup.of(w), sb, device == "cuda" if foreach is None else foreach, device == "cuda")
    # a master step first gives each master the float32 copy of its gradient (apex's model_grads_to_master_grads;
    # the 16-bit gradients live on to the next zero_grad)
    G32 = 4 * el["gradients"] if precision in MASTER else 0
    cands.append(Candidate("optimizer step", "optimizer step" if temps or G32 else "backward",
                           {**persist, "gradients": G + G32, "temporaries": temps}))
    best = max(cands, key=lambda c: c.total)
    exact = replayed or (name in ("full", "frozen-embeddings", "frozen-layers") and head == "none")
    return StepPeakEstimate(cfg.name, B, S, precision, optimizer, attention, checkpointing, mode, head, best.total,
                            best.phase, best.name, dict(best.at), start, tuple(cands), exact, saved, replayed)


def _at_start(cfg: ModelConfig, w: Workload, wb: int, sb: int) -> tuple[tuple[Tensor, ...], Mapping[str, bool],
                                                                       Mapping[str, int], dict[str, int]]:
    """(the tensors in named_parameters() order, one the loss never reaches not trained; requires_grad as built; the
    trainable tensors' gradient and optimizer-state elements; what is alive as the step starts, by category), with
    wb bytes a weight's and a gradient's element, sb an optimizer state's."""
    ts, requires, el = _tensor_state(cfg, Setup.of(w))
    # a float32 copy of every parameter built with requires_grad (engine.step_peak's masters), reached or not
    M = 4 * sum(t.numel for t in ts if requires[t.name]) if w.master else 0
    start = _categories(parameters=sum(t.numel for t in ts) * wb, master_weights=M,
                        buffers=buffer_bytes(cfg, w.forward_dtype), optimizer_state=el["optimizer"] * sb,
                        input=w.batch_size * w.seq_len * BYTES["int64"])
    return ts, requires, el, start


class Setup(NamedTuple):
    """What of a Workload decides the model's tensors and their optimizer state: its fine-tuning and optimizer."""

    mode: str
    head: str
    num_labels: int
    lora: LoraSpec | None
    optimizer: str

    @classmethod
    def of(cls, w: Workload) -> Setup:
        return cls(w.mode, w.head, w.num_labels, w.lora, w.optimizer)


# The tensors depend on the model and its fine-tuning only, not on the batch, the length or the precision: a search
# over batch sizes (step/fit.py: 14 steps per config) or a sweep over lengths builds them once. Fit planner's
# default view, 160 step peaks: cProfile put _at_start at 51% of step_peak with them built every time; returned
# read-only (a tuple, mapping proxies), since every caller shares them.
@lru_cache(maxsize=256)
def _tensor_state(cfg: ModelConfig, setup: Setup) -> tuple[tuple[Tensor, ...], Mapping[str, bool], Mapping[str, int]]:
    """_at_start's tensors, requires_grad as built and state elements (its docstring), for one model and setup."""
    ts = _module_order(cfg, tensors(cfg, setup.mode, head=setup.head, num_labels=setup.num_labels, lora=setup.lora))
    requires = {t.name: t.trainable for t in ts}  # requires_grad as built (an unused tensor too)
    ts = [Tensor(t.name, t.shape, False, t.part) if t.trainable and _unused(cfg, t.name) else t for t in ts]
    return tuple(ts), MappingProxyType(requires), MappingProxyType(state_elements(ts, setup.optimizer))


@lru_cache(maxsize=256)
def _temporaries(cfg: ModelConfig, setup: Setup, nbytes: int, foreach: bool, cuda: bool) -> int:
    """optimizer_temporaries of _tensor_state's tensors, elements of nbytes, torch.optim's foreach path or not."""
    ts = _tensor_state(cfg, setup)[0]
    return optimizer_temporaries(list(ts), setup.optimizer, nbytes, foreach=foreach, cuda=cuda)


def _bound_candidates(cfg: ModelConfig, ts: Sequence[Tensor], persist: dict[str, int], w: Workload, wb: int,
                      G: int) -> list[Candidate]:
    """Where the replay does not reach: moments of the step whose bytes are lower bounds (module docstring)."""
    B, S, dtype, checkpointing = w.batch_size, w.seq_len, w.forward_dtype, w.checkpointing
    (name, k), head = parse_mode(w.mode), w.head
    cands: list[Candidate] = []
    am = activation_memory(cfg, w)
    A = am.total - _frozen_saves(cfg, name, k, am.terms, B, S)
    _, amp = split_dtype(dtype)
    H = cfg.hidden_dim
    out_dt = _output_dtype(cfg, dtype)
    out = B * S * H * BYTES[out_dt]
    pooled_saves_out = cfg.family in _POOLED and not amp and head == "none"  # the pooler's dense saves a view of it
    f32_copy = B * S * H * 4 if out_dt != "float32" else 0
    cands.append(Candidate("forward end: every saved activation and the output", "forward",
                           {**persist, "saved activations": A,
                            "temporaries": (0 if pooled_saves_out else out) + f32_copy}))
    cands.append(Candidate("backward start: every saved activation and the output's float32 gradient", "backward",
                           {**persist, "saved activations": A, "temporaries": B * S * H * 4}))
    if checkpointing:
        cands += _checkpoint_candidates(cfg, ts, persist, am.terms, w, wb, out_dt)
    emb_trainable = any(t.trainable and t.name.endswith(("word_embeddings.weight", "tok_embeddings.weight"))
                        for t in ts)
    E = cfg.embedding_dim
    cands.append(Candidate("end of backward: every gradient, the word-embedding gradient being made", "backward",
                           {**persist, "gradients": G,
                            "temporaries": B * S * E * wb if emb_trainable and G else 0}))
    return cands


def _frozen_saves(cfg: ModelConfig, mode: str, k: int, terms: tuple[Term, ...], B: int, S: int) -> int:
    """Saved bytes a frozen prefix does not save: autograd records no op whose inputs and parameters all
    need no gradient (torch/csrc/autograd: compute_requires_grad), so with the embeddings frozen (input_ids
    are integers) their saves vanish, and with the first layers frozen too, those layers' saves; the first
    trainable op still saves what its own weight's gradient needs (a Linear its input)."""
    if mode not in ("frozen-embeddings", "frozen-layers"):
        return 0
    if family(cfg.family).STEP.embeddings_scope_trains:  # ALBERT's E -> H mapping trains: it saves its input,
        return 0  # which the replay counts under the embeddings' scope; not modelled, the full forward's saves kept
    first = k if mode == "frozen-layers" else 0  # layer steps before the first trainable one save nothing
    drop = 0
    for t in terms:
        if t.scope == "embeddings":
            drop += t.at(B, S)
        elif t.scope == "layer":
            drop += t.each(B, S) * first * cfg.inner_group_num
        elif t.scope == "layer (first)" and first:
            drop += t.each(B, S)
        elif t.scope == "layer (others)" and first > 1:
            drop += t.each(B, S) * (first * cfg.inner_group_num - 1)
    return drop


def _output_dtype(cfg: ModelConfig, dtype: str) -> str:
    """dtype of the encoder's last hidden state: the weights' dtype (its last op is a LayerNorm, which CPU autocast
    leaves in the input's dtype; the residual adds promote to float32 under autocast)."""
    md, _ = split_dtype(dtype)
    return md


def _checkpoint_candidates(cfg: ModelConfig, ts: Sequence[Tensor], persist: dict[str, int], terms: tuple[Term, ...],
                           w: Workload, wb: int, out_dt: str) -> list[Candidate]:
    """The moments layer j's recompute has finished (first and last layer application; see the docstring)."""
    B, S, dtype = w.batch_size, w.seq_len, w.forward_dtype
    emb = ckpt = 0
    for t in terms:
        v = t.at(B, S)
        if t.scope == "embeddings":
            emb += v
        elif t.scope.startswith("layer"):
            ckpt += v // t.count  # one checkpointed layer input
    r = recompute_memory(cfg, w)
    _, amp = split_dtype(dtype)
    if amp is None:
        r -= ckpt  # the layer's first op saves its input: the checkpointed storage, already counted
    L = cfg.num_layers
    grad_out = B * S * cfg.hidden_dim * BYTES[out_dt]
    out = []
    for j in sorted({0, L - 1}):
        out.append(Candidate(f"backward: layer {j}'s recompute done", "backward",
                             {**persist, "gradients": _grads_above(cfg, ts, j, wb),
                              "saved activations": emb + (j + 1) * ckpt * cfg.inner_group_num + r,
                              "temporaries": grad_out}))
    return out


__all__ = ["CATEGORIES", "Candidate", "StepPeakEstimate", "buffer_bytes", "cuda_rounded", "foreach_adamw_temporaries", "foreach_temporaries",
           "optimizer_temporaries", "step_peak"]
