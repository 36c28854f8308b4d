"""Serving sizes: the bytes of the weights at rest in float32, bfloat16/float16, int8 and int4 weight-only.

Exact for what torchao 0.18.0 stores (tests/test_serving.py quantizes small real models of every family on
the CPU with quantize_ and sums the storages of each tensor subclass's inner tensors):

  int8         Int8WeightOnlyConfig() on every nn.Linear: Int8Tensor, qdata int8 N×K, a float32 scale and an
               int8 zero point per row (symmetric, the zero point is stored anyway): N·K + 5·N bytes.
  int4         IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(g)), the int4 that builds on
               the CPU: IntxUnpackedToInt8Tensor keeps one int4 value per *byte* (N·K), plus a scale in the
               model's dtype and an int8 zero point per group of g along K: N·K + N·(K/g)·(itemsize + 1).
               g must divide K (torchao asserts it).
  int4-packed  Int4WeightOnlyConfig(group_size=g): Int4Tensor (plain, needs the mslk kernels) or
               Int4TilePackedTo4dTensor (tinygemm, CUDA and bfloat16 only); neither builds on the CPU in 0.18
               (the CPU "opaque" layout is gone), so this is the layout's arithmetic, not a measurement:
               N·K/2 + 2·N·(K/g)·2 bytes (two values per byte; bfloat16 scale and zero point per group).
               Weights whose K is not a multiple of g are skipped (kept in bfloat16), as Int4WeightOnlyConfig does.

Biases, LayerNorms and, unless quantize_embeddings, the nn.Embedding tables stay in the base dtype. No torch
here except inside quantize / storage_bytes (for tests and measurement); torchao is a test dependency only
(requirements-dev.txt).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..config import ModelConfig
from ..decoders.decoder_config import DecoderConfig
from ..families.modules import Module

# torchao's import on a CPU-only machine: it tries its CUDA extension libraries and logs each failure
# (torchao/__init__.py, logger "torchao"), and registering its Enum constants makes torch.utils._pytree warn.
_QUIET = (("torchao", "Failed to load"), ("torchao", "Skipping import of cpp extensions"),
          ("torch.utils._pytree", "is an Enum subclass and is now natively supported"))


class _DropMessages(logging.Filter):
    def __init__(self, starts: tuple[str, ...]) -> None:
        super().__init__()
        self.parts = starts

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        return not any(p in msg for p in self.parts)


def skip_torchao() -> bool:
    """Mark torchao absent in a process that never quantizes (the CLI, the measurement process); call before
    transformers is imported. transformers imports torchao on every model build where it is installed
    (quantizers.auto imports quantizer_torchao, which imports torchao when is_torchao_available()): 0.4 s here,
    and four lines on stderr on a CPU-only machine (two "Failed to load ... torchao/_C_..." and two torch
    `_pytree` warnings for its Enum constants). sys.modules["torchao"] = None is Python's own way to say a
    module is absent: importlib.util.find_spec then returns None, which transformers', peft's and accelerate's
    availability checks read, and `import torchao` raises ImportError. Nothing is changed where torchao is
    imported already; True when it was marked absent."""
    import sys

    if "torchao" in sys.modules:
        return False
    sys.modules["torchao"] = None  # type: ignore[assignment]  # the documented marker of an absent module
    return True


def quiet_torchao() -> None:
    """Keep torchao's library-loading messages (harmless without CUDA) out of the log; call before importing
    torchao or peft (which imports it). Only those messages are dropped; the loggers stay as they are."""
    for name in {n for n, _ in _QUIET}:
        log = logging.getLogger(name)
        if not any(isinstance(f, _DropMessages) for f in log.filters):
            log.addFilter(_DropMessages(tuple(m for n, m in _QUIET if n == name)))


# ---- serving sizes --------------------------------------------------------------------------------------
FORMATS = ("float32", "bfloat16", "float16", "int8", "int4", "int4-packed")
# bits per stored value each format names (the usual rule divides float32's 4 bytes by 32 / bits)
NOMINAL_BITS = {"float32": 32, "bfloat16": 16, "float16": 16, "int8": 8, "int4": 4, "int4-packed": 4}
BASE_DTYPES = ("float32", "bfloat16", "float16")  # what an int8/int4 model keeps its other parameters in
ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2}
INT4_GROUP_SIZES = (32, 64, 128, 256)  # Int4WeightOnlyConfig's documented choices; IntxWeightOnlyConfig takes any
# What each format is in torchao 0.18.0 (torchao/quantization/quant_api.py and quantize_/workflows/), on the CPU:
CONFIGS = {
    "int8": "Int8WeightOnlyConfig() (PerRow) -> Int8Tensor: qdata int8 N×K, scale float32 N×1, zero_point int8 N×1",
    "int4": "IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(g)) -> IntxUnpackedToInt8Tensor: "
            "qdata int8 N×K (one int4 value per byte, unpacked), scale N×K/g in the model's dtype, zero_point int8 N×K/g",
    "int4-packed": "Int4WeightOnlyConfig(group_size=g) -> Int4Tensor (plain) or Int4TilePackedTo4dTensor: two int4 "
                   "values per byte, N×K/2, plus scale and zero point N×K/g in bfloat16 each; not buildable on the CPU "
                   "(plain needs the mslk kernels, tile_packed_to_4d CUDA and bfloat16): arithmetic only",
}


@dataclass(frozen=True)
class ServingBytes:
    """Bytes of the model's parameters at rest in one serving format, exact for what torchao stores."""

    fmt: str
    dtype: str  # the dtype of what is not quantized (and of int4's scales)
    group_size: int  # int4: values per scale and zero point along K; 0 where not used
    quantize_embeddings: bool
    head: str
    data: int  # quantized values (qdata)
    scales: int
    zero_points: int
    kept: int  # parameters left in `dtype`: biases, norms, (embeddings), skipped weights
    quantized_params: int  # parameter elements replaced by quantized tensors
    kept_params: int
    buildable_on_cpu: bool
    config: str  # the torchao config and layout

    @property
    def weights(self) -> int:
        """Total bytes at rest."""
        return self.data + self.scales + self.zero_points + self.kept

    @property
    def params(self) -> int:
        return self.quantized_params + self.kept_params

    def to_json(self) -> dict[str, Any]:
        """Plain numbers for --json and the report; keys name what they hold (bytes unless *_params)."""
        return {"format": self.fmt, "dtype": self.dtype, "group_size": self.group_size,
                "quantize_embeddings": self.quantize_embeddings, "head": self.head, "weights": self.weights,
                "quantized_values": self.data, "scales": self.scales, "zero_points": self.zero_points,
                "kept": self.kept, "quantized_params": self.quantized_params, "kept_params": self.kept_params,
                "buildable_on_cpu": self.buildable_on_cpu, "layout": self.config}


def _check_format(fmt: str, dtype: str, group_size: int) -> None:
    from ..config import require_choice

    require_choice("serving format", fmt, FORMATS)
    require_choice("dtype", dtype, BASE_DTYPES)
    if fmt in ("int4", "int4-packed") and (isinstance(group_size, bool) or not isinstance(group_size, int)
                                           or group_size < 1):
        raise ValueError(f"group_size must be a whole number of at least 1 (torchao offers {INT4_GROUP_SIZES}), "
                         f"got {group_size!r}")
    if fmt == "int4-packed" and dtype != "bfloat16":
        raise ValueError("int4-packed (torchao Int4WeightOnlyConfig) keeps bfloat16 scales and weights: set dtype to bfloat16")


def _group_size_error(group_size: int, bad: list[str], embeddings: bool = False) -> str:
    """What to choose when group_size does not divide some quantized weights' K ("path (K=n)" each); embeddings:
    some of them are embedding tables (quantize_embeddings), which can stay unquantized instead."""
    from math import gcd

    g = 0
    for b in bad:
        g = gcd(g, int(b.rsplit("K=", 1)[1].rstrip(")")))
    return (f"int4: group_size {group_size} must divide the input width K of every quantized weight (torchao asserts "
            f"it); it does not divide {', '.join(bad[:4])}{' ...' if len(bad) > 4 else ''}. Choose a group size that "
            f"divides {g}" + (", or leave the embeddings unquantized" if embeddings else ""))


def weight_bytes(cfg: ModelConfig | DecoderConfig, fmt: str = "float32", *, dtype: str = "float32",
                 group_size: int = 128, quantize_embeddings: bool = False, head: str = "none",
                 num_labels: int = 2) -> ServingBytes:
    """Bytes of cfg's weights at rest in `fmt`, as torchao 0.18 stores them (see CONFIGS).

    float32/bfloat16/float16: every parameter at that size (dtype is ignored). int8, int4: every nn.Linear
    weight quantized (torchao's default filter), and every nn.Embedding too when quantize_embeddings
    (the same config with filter_fn=isinstance(m, nn.Embedding)); biases, LayerNorms and anything not
    quantized stay in `dtype`. int4 needs group_size to divide each quantized weight's K (torchao asserts it);
    int4-packed skips such weights and keeps them in bfloat16 (Int4WeightOnlyConfig logs and skips). A tied
    MLM decoder is a Linear of its own to torchao: its quantized copy is counted beside the embedding table.
    ALBERT's shared layers are one module each and are stored once. Head: as heads.head_parameters.

    A decoder (DecoderConfig): its base model, with head "causal-lm" its output projection too (an nn.Linear H -> V,
    tied or not: quantized, a tied one is a copy beside the token table, as above); GPT-2's Conv1D projections are
    no nn.Linear, so torchao keeps them in `dtype`.
    """
    _check_format(fmt, dtype, group_size)
    mods, head = _modules(cfg, head, num_labels)  # (module, copies): the same sum at any depth
    if fmt in ITEMSIZE:
        n = sum(m.numel * c for m, c in mods)
        return ServingBytes(fmt, fmt, 0, False, head, 0, 0, 0, n * ITEMSIZE[fmt], 0, n, True, f"every parameter in {fmt}")
    size = ITEMSIZE[dtype]
    data = scales = zeros = kept = q_params = k_params = 0
    bad: list[str] = []
    bad_embedding = False
    for m, copies in mods:  # each term per module, times its identical copies
        quantize = m.kind == "linear" or (quantize_embeddings and m.kind == "embedding")
        if not quantize:
            kept += m.numel * size * copies
            k_params += m.numel * copies
            continue
        # nn.Linear weight is out×in = N×K; nn.Embedding's is rows×width = N×K too; groups run along K
        N, K = (m.n_out, m.n_in) if m.kind == "linear" else (m.n_in, m.n_out)
        bias = m.n_out if m.kind == "linear" and m.bias else 0
        kept += bias * size * copies
        k_params += bias * copies
        if fmt == "int8":  # Int8Tensor.from_hp: per-row scale float32 and zero point int8, kept though symmetric
            d, sc, z = N * K, 4 * N, N
        elif K % group_size:
            if fmt == "int4":
                bad.append(f"{m.path} (K={K})")
                bad_embedding = bad_embedding or m.kind == "embedding"
                continue
            kept += N * K * size * copies  # int4-packed: skipped, left in bfloat16
            k_params += N * K * copies
            continue
        elif fmt == "int4":  # IntxUnpackedToInt8Tensor: int8 per value, per-group scale (dtype) + int8 zero point
            groups = N * (K // group_size)
            d, sc, z = N * K, groups * size, groups
        else:  # Int4Tensor: pack_int4 two values per byte; scale and zero point .to(w.dtype) = bfloat16
            groups = N * (K // group_size)
            d, sc, z = N * K // 2, 2 * groups, 2 * groups
        data, scales, zeros = data + d * copies, scales + sc * copies, zeros + z * copies
        q_params += N * K * copies
    if bad:
        raise ValueError(_group_size_error(group_size, bad, bad_embedding))
    return ServingBytes(fmt, dtype, group_size if fmt.startswith("int4") else 0, quantize_embeddings, head, data,
                        scales, zeros, kept, q_params, k_params, fmt != "int4-packed", CONFIGS[fmt])


def _modules(cfg: ModelConfig | DecoderConfig, head: str, num_labels: int) -> tuple[list[tuple[Module, int]], str]:
    """(module, stored copies) of the model with its head, and the head as checked."""
    if isinstance(cfg, DecoderConfig):
        from ..choices import CAUSAL_LM
        from ..decoders.decoder_params import decoder_modules

        if head not in ("none", CAUSAL_LM):
            raise ValueError(f"a decoder's head is {CAUSAL_LM} (its output projection) or none (the base model), "
                             f"got {head!r}")
        return decoder_modules(cfg, head == CAUSAL_LM), head
    from .heads import check_head, check_labels
    from .hf_modules import model_module_counts

    head = check_head(head)
    num_labels = check_labels(num_labels) if head in ("classification", "token") else 1
    return model_module_counts(cfg, head, num_labels), head


def int4_groups(cfg: ModelConfig | DecoderConfig, head: str = "none", num_labels: int = 2,
                quantize_embeddings: bool = False) -> tuple[int, ...]:
    """The group sizes of INT4_GROUP_SIZES that divide the input width K of every weight int4 quantizes (weight_bytes
    refuses the others, as torchao does)."""
    from math import gcd

    g = 0
    for m, _ in _modules(cfg, head, num_labels)[0]:
        if m.kind == "linear" or (quantize_embeddings and m.kind == "embedding"):
            g = gcd(g, m.n_in if m.kind == "linear" else m.n_out)  # K: a Linear's input, an embedding's width
    return tuple(s for s in INT4_GROUP_SIZES if g % s == 0)


def decoder_notes(c: DecoderConfig, fmt: str, head: str, quantize_embeddings: bool, dtype: str) -> list[str]:
    """Where a decoder's int8/int4 bytes part from the ÷ rule (weight_bytes counts them), one sentence each."""
    from ..choices import CAUSAL_LM

    if not fmt.startswith("int"):
        return []
    out = []
    if head == CAUSAL_LM and c.tied:
        out.append(f"the output projection reads the token table (tied): torchao quantizes it as the nn.Linear it is, "
                   f"a copy of its own ({c.vocab_size:,} x {c.hidden_dim:,}) beside the table, which stays in {dtype}"
                   + ("" if quantize_embeddings else " (--quantize-embeddings quantizes it too)"))
    conv = sum(n for m, n in _modules(c, head, 1)[0] if m.kind == "conv1d")  # GPT-2's
    if conv:
        out.append(f"its {conv:,} projections are transformers' Conv1D, not nn.Linear: torchao leaves them in {dtype}")
    if not quantize_embeddings and not (head == CAUSAL_LM and c.tied):
        out.append(f"the embedding tables stay in {dtype} unless --quantize-embeddings")
    return out


def format_table(cfg: ModelConfig | DecoderConfig, formats: tuple[str, ...] = ("float32", "bfloat16", "int8", "int4", "int4-packed"), *,
                 dtype: str = "bfloat16", group_size: int = 128, quantize_embeddings: bool = False, head: str = "none",
                 num_labels: int = 2) -> Any:
    """Tidy DataFrame, one row per format: format, dtype, weights, quantized_values, scales, zero_points, kept,
    approx (parameters × 4 ÷ 1/2/4/8, the usual rule), vs_approx (weights ÷ approx), buildable_on_cpu, layout, error.

    dtype is what int8/int4 keep unquantized (float formats are their own dtype); int4-packed always uses
    bfloat16. A format that cannot be counted as asked (a group size that does not divide K) gets its message.
    """
    import pandas as pd

    cols = ["format", "dtype", "weights", "quantized_values", "scales", "zero_points", "kept", "approx", "vs_approx",
            "buildable_on_cpu", "layout", "error"]
    rows = []
    for fmt in formats:
        dt = "bfloat16" if fmt == "int4-packed" else dtype
        approx = approximate_bytes(cfg, fmt, head=head, num_labels=num_labels)
        try:
            b = weight_bytes(cfg, fmt, dtype=dt, group_size=group_size, quantize_embeddings=quantize_embeddings,
                             head=head, num_labels=num_labels)
        except ValueError as e:
            rows.append(dict.fromkeys(cols) | {"format": fmt, "dtype": dt, "approx": approx, "error": str(e)})
            continue
        rows.append({"format": fmt, "dtype": b.dtype, "weights": b.weights, "quantized_values": b.data, "scales": b.scales,
                     "zero_points": b.zero_points, "kept": b.kept, "approx": approx, "vs_approx": b.weights / approx,
                     "buildable_on_cpu": b.buildable_on_cpu, "layout": b.config, "error": ""})
    df = pd.DataFrame(rows, columns=cols, dtype=object)
    return df.where(df.notna(), None)  # object columns: counts stay Python ints (exact), a missing one None


def approximate_bytes(cfg: ModelConfig | DecoderConfig, fmt: str, *, head: str = "none", num_labels: int = 2) -> int:
    """What accelerate's estimate-memory and most calculators print: parameters × 4 bytes ÷ 1, 2, 4 or 8."""
    mods, head = _modules(cfg, head, num_labels if head in ("classification", "token") else 2)
    n = sum(m.numel * c for m, c in mods)
    return n * 4 // {"float32": 1, "bfloat16": 2, "float16": 2, "int8": 4, "int4": 8, "int4-packed": 8}[fmt]


def quantize(model: Any, fmt: str, *, group_size: int = 128, quantize_embeddings: bool = False) -> Any:
    """Apply torchao's quantize_ for fmt (int8, int4) to a real model in place, as CONFIGS describes; returns it.
    Only the CPU formats; torch and torchao imported here."""
    quiet_torchao()
    import torch
    from torchao.quantization import Int8WeightOnlyConfig, IntxWeightOnlyConfig, quantize_
    from torchao.quantization.granularity import PerGroup

    if fmt not in ("int8", "int4"):
        raise ValueError(f"quantize builds int8 and int4 on the CPU; got {fmt!r} ({CONFIGS.get(fmt, 'not quantized')})")

    def conf() -> Any:
        if fmt == "int8":
            return Int8WeightOnlyConfig()
        return IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(group_size))

    quantize_(model, conf())  # default filter: nn.Linear
    if quantize_embeddings:
        quantize_(model, conf(), filter_fn=lambda m, fqn: isinstance(m, torch.nn.Embedding))
    return model


def storage_bytes(model: Any) -> dict[str, int]:
    """Bytes of every parameter's storage, each storage once: a torchao tensor subclass by its inner tensors
    (tensor_data_names and the optional ones present). Keys: data, scales, zero_points, kept."""
    out = {"data": 0, "scales": 0, "zero_points": 0, "kept": 0}
    seen: set[int] = set()

    def add(key: str, t: Any) -> None:
        s = t.untyped_storage()
        if s.data_ptr() in seen and s.nbytes():
            return
        seen.add(s.data_ptr())
        out[key] += s.nbytes()

    for p in model.parameters():
        names = getattr(p, "tensor_data_names", None)
        if names is None:
            add("kept", p)
            continue
        for n in [*names, *getattr(p, "optional_tensor_data_names", [])]:
            t = getattr(p, n, None)
            if t is not None:
                add({"qdata": "data", "scale": "scales", "zero_point": "zero_points"}.get(n, "kept"), t)
    return out
