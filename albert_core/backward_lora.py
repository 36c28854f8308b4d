"""peft LoRA in the backward replay (albert_core/backward.py): a targeted nn.Linear's forward, recorded op by op.

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
No torch here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .backward import Adapt, Graph, T

LORA_A, LORA_B = ".lora_A.default.weight", ".lora_B.default.weight"
EMBEDDING_A = ".lora_embedding_A.default"  # peft's lora.Embedding (not replayed)


@dataclass(frozen=True)
class Adapter:
    """One adapted module: its rank and lora_dropout."""

    r: int
    dropout: float


def adapters(shapes: dict[str, tuple[int, ...]], dropout: float) -> Callable[[str], Adapter | None]:
    """A graph key (the base model's module path) -> its adapter, from finetune.tensors' names and shapes (peft's
    base_model.model.<path>.lora_A.default.weight, (r, in)); None where the module is not adapted."""
    paths = {n[: -len(LORA_A)]: s[0] for n, s in shapes.items() if n.endswith(LORA_A)}

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


def adapt(shapes: dict[str, tuple[int, ...]], dropout: float) -> Adapt:
    """Graph.adapt for peft's LoRA model of finetune.tensors' names and shapes."""
    of = adapters(shapes, dropout)

    def f(g: Graph, x: T, key: str, n_in: int, n_out: int, bias: bool, rows: int | None) -> T | None:
        a = of(key)
        return lora_linear(g, x, key, n_in, n_out, bias, rows, a) if a is not None else None
    return f


__all__ = ["Adapter", "adapt", "adapters", "lora_linear"]
