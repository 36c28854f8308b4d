"""peft LoRA in the backward replay (albert_core/step/backward.py): a targeted nn.Linear's or word-embedding
nn.Embedding's forward, recorded op by op.

peft 0.21.2 tuners/lora/layer.py, Linear.forward (vanilla LoRA, one adapter, not merged):

    result = self.base_layer(x)                        # the frozen Linear: saves its weight for x's gradient only
    x = self._cast_input_dtype(x, lora_A.weight.dtype) # x.to(the adapter's dtype): a copy where it differs
    result = result + lora_B(lora_A(dropout(x))) * scaling
    result = result.to(torch_result_dtype)             # a no-op here: both sides share the result's dtype

The adapter's weights take the model's dtype (the engine casts the built model whole), so under autocast
(float32 weights) a 16-bit input (the attention context, the FFN's activation) is copied to float32 first;
lora_dropout 0 is nn.Identity, else nn.Dropout (CPU: input * noise, MulBackward0 saves the noise); lora_A and
lora_B are bias-free Linears (mm: each saves its input for its own weight's gradient, its weight for the
input's); `* scaling` is MulBackward1 (a Python scalar, nothing saved); the sum is AddBackward0, out of place.

peft 0.21.2 Embedding.forward (vanilla, one adapter, not merged), at the lookups Graph.embedding records (the word,
position and token-type embeddings of the BERT-style families and DeBERTa-v2, ModernBERT's tok_embeddings;
LOOKUPS; DeBERTa's rel_embeddings is read by .weight, so its adapter is never applied: UNREAD):

    result = self.base_layer(x)                        # the frozen lookup: no node
    after_A = F.embedding(x, lora_embedding_A.T)       # EmbeddingBackward0 saves the indices
    adapter_output = (after_A @ lora_embedding_B.T) * scaling
    result = result + adapter_output                   # out of place; .to(result dtype) a no-op

lora_dropout is never applied (peft's Embedding ignores it), nor a bias (peft refuses lora_bias on embeddings).
F.embedding is not autocast: after_A takes the adapter's dtype; the matmul is, so under autocast it casts B.T
(a view: never cached) then after_A to 16 bits (arguments right to left), and the mm saves both; the sum of the
float32 lookup and the 16-bit update is float32 (its gradient cast back: validate_outputs). A's gradient
(embedding_dense_backward's contiguous (num_embeddings, r) for A.T) reaches AccumulateGrad transposed, which
breaks the layout contract: p.grad is a contiguous copy (clone_obey_contract), the gradient then freed (without
that copy one draw, ModernBERT seed 3, is 5.2% under); B's
comes in B's layout (mm_mat2_backward). A tied MLM decoder reads the base table: HF tied decoder.weight to it
before peft wrapped the lookup (base_layer.weight is that Parameter). Measured: 52 random LoRA draws with the
word lookup adapted (tests/test_step_peak.py, every family, alone and beside Linear targets), all equal to the
engine's peak to the byte; bert-base r=8 word_embeddings, query, value 16 × 512 mixed bf16 sdpa classification:2
10,826,533,344 B, equal (before: the lower-bound candidates, 11,715,508,704 B, +8.2%).
No torch here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .graph import Graph, T, _grads_like

LORA_A, LORA_B = ".lora_A.default.weight", ".lora_B.default.weight"
EMBEDDING_A, EMBEDDING_B = ".lora_embedding_A.default", ".lora_embedding_B.default"  # peft's lora.Embedding
LOOKUPS = ("embeddings.word_embeddings", "embeddings.tok_embeddings", "embeddings.position_embeddings",
           "embeddings.token_type_embeddings")  # the lookups the replay adapts (Graph.embedding)


@dataclass(frozen=True)
class Adapter:
    """One adapted module: its rank and lora_dropout."""

    r: int
    dropout: float


def adapters(shapes: dict[str, tuple[int, ...]], dropout: float, suffix: str = LORA_A) -> Callable[[str], Adapter | None]:
    """A graph key (the base model's module path) -> its adapter, from finetune.tensors' names and shapes (peft's
    base_model.model.<path>.lora_A.default.weight, (r, in); `suffix` EMBEDDING_A: lora.Embedding's); None where the
    module is not adapted."""
    paths = {n[: -len(suffix)]: s[0] for n, s in shapes.items() if n.endswith(suffix)}

    def of(key: str) -> Adapter | None:
        r = paths.get(key)
        if r is None:
            r = next((v for p, v in paths.items() if p.endswith("." + key)), None)
        return Adapter(r, dropout) if r is not None else None
    return of


def lora_linear(g: Graph, x: T, key: str, n_in: int, n_out: int, bias: bool, rows: int | None, a: Adapter) -> T:
    """peft lora.Linear.forward on x (module docstring): the base Linear, then the adapter's path added."""
    ctx, g.ctx = g.ctx, None

    def moment(what: str, alive: list[T]) -> None:  # a moment inside, where the layer's locals are known
        if ctx is not None:
            g.point(f"forward: the last layer's LoRA {key.rsplit('.', 1)[-1]} ({what})", [x, *alive, *ctx[0]], ctx[1])

    result = g.linear(x, key, n_in, n_out, bias, rows, wkey=f"{key}.base_layer.weight", bkey=f"{key}.base_layer.bias")
    base_in, casts = g.last_input, g.last_casts
    assert base_in is not None
    moment("base layer", [result, base_in, *casts])
    xa = g.cast(x, g.md)  # _cast_input_dtype: x.to(lora_A.weight.dtype)
    moment("input cast", [result, xa])
    d = g.dropout(xa, a.dropout)  # nn.Identity at 0
    moment("dropout", [result, xa, d])
    h_a = g.linear(d, f"{key}.lora_A.default", n_in, a.r, bias=False, rows=rows, wkey=f"{key}{LORA_A}")
    moment("lora_A", [result, xa, d, h_a, *([g.last_input] if g.last_input is not None else [])])
    h_b = g.linear(h_a, f"{key}.lora_B.default", a.r, n_out, bias=False, rows=rows, wkey=f"{key}{LORA_B}")
    moment("lora_B", [result, xa, h_a, h_b, *([g.last_input] if g.last_input is not None else [])])
    s = g.scalar(h_b)  # * scaling
    moment("scaling", [result, xa, h_b, s])
    out = g.add(result, s)  # result + lora_B(...) * scaling
    moment("sum", [result, xa, s, out])
    g.last_input, g.last_casts = base_in, casts
    return out


def lora_embedding(g: Graph, idx: T, key: str, rows: int, width: int, n: int, a: Adapter) -> T:
    """peft lora.Embedding.forward on idx (module docstring): the base lookup, then the adapter's path added."""
    W = g.param(f"{key}.base_layer.weight", rows * width)
    g.params.setdefault(f"{key}.weight", W)  # a tied MLM decoder reads the same (base) weight
    result = g.op("EmbeddingBackward0", [idx, W], [(n * width, g.md)], [idx], _grads_like)[0]
    A = g.param(f"{key}{EMBEDDING_A}", a.r * rows)
    B = g.param(f"{key}{EMBEDDING_B}", width * a.r)
    if A.fn is not None:  # embedding_dense_backward's (rows, r) gradient of A.T arrives transposed: copied
        A.fn.clone = True
    after_a = g.op("EmbeddingBackward0", [idx, A], [(n * a.r, g.md)], [idx], _grads_like)[0]  # saves the indices
    Bt = g.cast(B, g.amp) if g.amp else B  # autocast's matmul: B.T a view, never cached; cast before after_A
    xa = g.cast(after_a, g.amp) if g.amp else after_a
    saved = ([xa] if Bt.fn is not None else []) + ([Bt] if xa.fn is not None else [])
    h = g.op("MmBackward0", [xa, Bt], [(n * width, g.amp or g.md)], saved, _grads_like)[0]  # mm_mat2_backward: B's layout
    s = g.scalar(h)  # * scaling
    return g.add(result, s)  # result + adapter_output


@dataclass(frozen=True)
class Adapters:
    """Graph.adapt for peft's LoRA model: lora.Linear where `linear` names an adapter, lora.Embedding at the lookups
    Graph.embedding records where `embedding` does (x the indices, n_in/n_out the table's rows/width, rows the
    lookups); None elsewhere (the plain module)."""

    linear: Callable[[str], Adapter | None]
    embedding: Callable[[str], Adapter | None]

    def __call__(self, g: Graph, x: T, key: str, n_in: int, n_out: int, bias: bool, rows: int | None) -> T | None:
        if x.dtype == "int64":  # Graph.embedding
            e = self.embedding(key)
            return lora_embedding(g, x, key, n_in, n_out, rows or 0, e) if e is not None else None
        a = self.linear(key)
        return lora_linear(g, x, key, n_in, n_out, bias, rows, a) if a is not None else None


def adapt(shapes: dict[str, tuple[int, ...]], dropout: float) -> Adapters:
    """Graph.adapt for peft's LoRA model of finetune.tensors' names and shapes."""
    return Adapters(adapters(shapes, dropout), adapters(shapes, dropout, EMBEDDING_A))


# tables the model reads by .weight, never calling the module: peft's lora.Embedding there is never applied
# (BaseTunerLayer.weight returns the base layer's; DebertaV2Encoder.get_rel_embedding), its adapter gets no gradient
UNREAD = ("encoder.rel_embeddings",)


def unread(name: str) -> bool:
    """A lora.Embedding's adapter on a table the forward reads by .weight (UNREAD): built, trainable, never used."""
    return any(f"{t}{suffix}" in name for t in UNREAD for suffix in (EMBEDDING_A, EMBEDDING_B))


def replayed(names: list[str]) -> bool:
    """Whether every lora.Embedding among finetune.tensors' names sits at a lookup the replay adapts (or at a
    table no forward applies it to)."""
    return all(n[: -len(EMBEDDING_A)].endswith(LOOKUPS) or unread(n) for n in names if n.endswith(EMBEDDING_A))


__all__ = ["Adapter", "Adapters", "adapt", "adapters", "lora_embedding", "lora_linear", "replayed", "unread"]
