"""What every family module uses: the ParamGroup row, nn.Linear/nn.LayerNorm sizes, shared key rules.

No torch here: sizes follow the PyTorch modules' definitions (nn.Linear: weight out×in + bias out;
nn.LayerNorm: weight + bias; nn.Embedding: rows×width).
"""

from __future__ import annotations

from typing import Any, NamedTuple


class ParamGroup(NamedTuple):
    component: str  # embedding | layers | pooler | heads
    sublayer: str  # embeddings, attention, ffn, encoder, pooler, mlm_head, nsp_head
    module: str  # name as in Hugging Face's modules
    shape: str  # tensor shape(s), e.g. "30000×128"
    per_copy: int  # parameters in one copy
    copies: int  # copies stored (a shared tensor is stored once per group)

    @property
    def params(self) -> int:
        return self.per_copy * self.copies


def linear(n_in: Any, n_out: Any, bias: bool = True) -> Any:
    """nn.Linear(n_in, n_out): weight n_out×n_in plus bias n_out (works on ints and numpy arrays)."""
    return n_in * n_out + (n_out if bias else 0)


def layer_norm(n: Any, bias: bool = True) -> Any:
    """nn.LayerNorm(n): weight and (unless bias=False) bias."""
    return 2 * n if bias else n


def lin_shape(n_in: Any, n_out: Any, bias: bool = True) -> str:
    return f"{n_in}×{n_out}" + (f" + {n_out}" if bias else "")


def bert_layer_groups(c: Any, n_att: int, n_ffn: int) -> list[ParamGroup]:
    """BertLayer as Hugging Face names it (BERT, RoBERTa, ELECTRA): self-attention, output, FFN."""
    H, I = c.hidden_dim, c.intermediate_dim
    g = [ParamGroup("layers", "attention", f"attention.self.{m}", lin_shape(H, H), linear(H, H), n_att)
         for m in ("query", "key", "value")]
    return g + [
        ParamGroup("layers", "attention", "attention.output.dense", lin_shape(H, H), linear(H, H), n_att),
        ParamGroup("layers", "attention", "attention.output.LayerNorm", f"2×{H}", layer_norm(H), n_att),
        ParamGroup("layers", "ffn", "intermediate.dense", lin_shape(H, I), linear(H, I), n_ffn),
        ParamGroup("layers", "ffn", "output.dense", lin_shape(I, H), linear(I, H), n_ffn),
        ParamGroup("layers", "ffn", "output.LayerNorm", f"2×{H}", layer_norm(H), n_ffn),
    ]


def bert_layer_sizes(c: Any) -> tuple[Any, Any]:
    """(attention, ffn) parameters of one BertLayer: 4 H×H projections + LayerNorm; two Linear + LayerNorm."""
    H, I = c.hidden_dim, c.intermediate_dim
    # Vaswani et al. 2017 Sec. 3.2.2 (Q, K, V, output) and Sec. 3.3 (FFN)
    return 4 * linear(H, H) + layer_norm(H), linear(H, I) + linear(I, H) + layer_norm(H)


def pooler_groups(c: Any) -> list[ParamGroup]:
    H = c.hidden_dim
    return [ParamGroup("pooler", "pooler", "pooler.dense", lin_shape(H, H), linear(H, H), 1)]


# config.json keys that change parameters or activations in BERT-style encoders and are not modelled:
# key -> (values that mean "off", what to change). Absent keys are fine.
BERT_STYLE_REFUSED: dict[str, tuple[tuple[Any, ...], str]] = {
    "is_decoder": ((False, None), "decoder mode (causal attention, a cache) is not modelled; set it to false"),
    "add_cross_attention": ((False, None), "cross-attention layers are not modelled; set it to false"),
    "position_embedding_type": (("absolute", None), "only absolute position embeddings are modelled; "
                                                     "relative_key/relative_key_query add distance tables"),
    "chunk_size_feed_forward": ((0, None), "a chunked FFN changes the activations; set it to 0"),
    "pruned_heads": (({}, None), "pruned attention heads change the parameters; remove the key"),
}
# in any family: what changes storage or adds modules beyond the model
ANY_REFUSED: dict[str, tuple[tuple[Any, ...], str]] = {
    "adapters": ((None,), "adapter modules are not modelled; remove the key"),
    "adapter_config": ((None,), "adapter modules are not modelled; remove the key"),
    "quantization_config": ((None,), "quantized weights are not modelled; remove the key"),
}


def refused(d: dict[str, Any], rules: dict[str, tuple[tuple[Any, ...], str]]) -> list[str]:
    """A message naming each key of d whose value the rules refuse."""
    out = []
    for key, (ok, why) in {**ANY_REFUSED, **rules}.items():
        if key in d and not any(d[key] is v or (type(d[key]) is type(v) and d[key] == v) for v in ok):
            out.append(f"{key}={_show(d[key])} is not supported: {why}")
    return out


def _show(v: Any) -> str:
    from ..config import _short

    return str(v).lower() if isinstance(v, bool) else _short(v)
