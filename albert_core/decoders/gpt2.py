"""GPT-2 (Radford et al. 2019; transformers' GPT2Model): learned positions, LayerNorm before each sublayer, GELU,
and Conv1D (a Linear stored in×out) for every projection; the LM head is the token table (tied)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..families.modules import conv1d, emb, norm
from .decoder_family import DecoderFamily, Placed, final_norm, token_embedding

if TYPE_CHECKING:
    from .decoder_fields import DecoderFields as DecoderConfig


def modules(c: DecoderConfig) -> list[Placed]:
    H, I, L = c.hidden_dim, c.intermediate_dim, c.num_layers
    attention = [norm("ln_1", H), conv1d("attn.c_attn", H, 3 * H), conv1d("attn.c_proj", H, H)]  # q, k, v in one
    ffn = [norm("ln_2", H), conv1d("mlp.c_fc", H, I), conv1d("mlp.c_proj", I, H)]
    return [token_embedding(c, "wte"), Placed("embedding", "embeddings", emb("wpe", c.max_position, H), 1),
            *(Placed("layers", "attention", m, L) for m in attention), *(Placed("layers", "ffn", m, L) for m in ffn),
            final_norm(c, "ln_f", bias=True)]


FAMILY = DecoderFamily(
    name="gpt2", model_class="GPT2Model",
    keys={"vocab_size": "vocab_size", "hidden_dim": "n_embd", "num_layers": "n_layer", "num_heads": "n_head",
          "intermediate_dim": "n_inner", "max_position": "n_positions", "tied": "tie_word_embeddings"},
    defaults={"n_positions": 1024, "n_inner": None, "tie_word_embeddings": True},
    modules=modules, rope=False, head_dim_key=False,
    notes=("positions: a learned table of n_positions rows (wpe), counted in the embedding",
           "every projection is transformers' Conv1D, not an nn.Linear: torchao's int8/int4 (which quantize "
           "nn.Linear) leave them in the base dtype"),
)
