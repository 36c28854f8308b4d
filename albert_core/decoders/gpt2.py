"""GPT-2 (Radford et al. 2019; transformers' GPT2Model): learned positions, LayerNorm before each sublayer, GELU,
and Conv1D (a Linear stored in×out) for every projection; the LM head is the token table (tied)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..families.base import ParamGroup, layer_norm, linear
from .decoder_family import DecoderFamily, final_norm, token_embedding

if TYPE_CHECKING:
    from .decoder_fields import DecoderFields as DecoderConfig


def _conv1d(n_in: int, n_out: int) -> tuple[str, int]:
    """transformers' Conv1D(n_out, n_in): weight n_in×n_out (stored transposed) + bias n_out."""
    return f"{n_in}×{n_out} + {n_out}", linear(n_in, n_out)


def groups(c: DecoderConfig) -> list[ParamGroup]:
    H, I, L = c.hidden_dim, c.intermediate_dim, c.num_layers
    rows = [token_embedding(c, "wte"),
            ParamGroup("embedding", "embeddings", "wpe", f"{c.max_position}×{H}", c.max_position * H, 1)]
    rows.append(ParamGroup("layers", "attention", "ln_1", f"2×{H}", layer_norm(H), L))
    for module, (n_in, n_out) in (("attn.c_attn", (H, 3 * H)), ("attn.c_proj", (H, H))):  # q, k, v in one
        shape, n = _conv1d(n_in, n_out)
        rows.append(ParamGroup("layers", "attention", module, shape, n, L))
    rows.append(ParamGroup("layers", "ffn", "ln_2", f"2×{H}", layer_norm(H), L))
    for module, (n_in, n_out) in (("mlp.c_fc", (H, I)), ("mlp.c_proj", (I, H))):
        shape, n = _conv1d(n_in, n_out)
        rows.append(ParamGroup("layers", "ffn", module, shape, n, L))
    return rows + [final_norm(c, "ln_f", bias=True)]


FAMILY = DecoderFamily(
    name="gpt2", model_class="GPT2Model",
    keys={"vocab_size": "vocab_size", "hidden_dim": "n_embd", "num_layers": "n_layer", "num_heads": "n_head",
          "intermediate_dim": "n_inner", "max_position": "n_positions", "tied": "tie_word_embeddings"},
    defaults={"n_positions": 1024, "n_inner": None, "tie_word_embeddings": True},
    groups=groups, rope=False, head_dim_key=False,
    notes=("positions: a learned table of n_positions rows (wpe), counted in the embedding",),
)
