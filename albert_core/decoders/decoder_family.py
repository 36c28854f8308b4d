"""What every decoder family module is and uses (issue 54): the DecoderFamily record, the modules of a Llama-style
layer, and the rules every decoder's config.json is checked by.

A family lists its base model's modules (`Placed`: where each sits, the `families.modules.Module` it is, its stored
copies); the parameter rows (`DecoderFamily.groups`) and the serving bytes (estimate.serving.weight_bytes) are both
read from that one list. No torch here: sizes follow the PyTorch modules (nn.Linear: weight out×in + bias out;
nn.Embedding: rows×width; RMSNorm: one weight of its width; nn.LayerNorm: weight + bias; transformers' Conv1D:
weight in×out + bias out).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from ..families.base import ParamGroup, Refusals, lin_shape
from ..families.modules import Module, emb, lin, norm

if TYPE_CHECKING:
    from .decoder_fields import DecoderFields as DecoderConfig


@dataclass(frozen=True)
class DecoderFamily:
    """What differs between decoder families; each family module (gpt2.py, llama.py, ...) defines one, FAMILY."""

    name: str  # the config.json model_type it reads and writes
    model_class: str  # the base model transformers builds (AutoModel.from_config)
    # DecoderConfig field -> config.json key (the keys every message names)
    keys: dict[str, str]
    # config.json key -> transformers' default for this model_type (5.23), where the published configs may omit it
    defaults: dict[str, object]
    modules: Callable[[DecoderConfig], list[Placed]]  # the base model's modules, as transformers names them
    rope: bool = True  # rotary positions (rotate_half pairs a head's halves: head_dim must be even); GPT-2: learned
    head_dim_key: bool = True  # head_dim may be set apart from hidden / heads (Qwen3, Gemma-3, Llama's optional key)
    heads_divide_hidden: bool = True  # the config class refuses a hidden size the query heads do not divide
    refused: Refusals = field(default_factory=dict)  # config.json keys whose other values are not modelled
    local_layers: bool = False  # sliding-window layers between global ones (global_every, layer_types)
    notes: tuple[str, ...] = ()  # what `params` says beside this family's numbers

    def groups(self, c: DecoderConfig) -> list[ParamGroup]:
        """The base model's parameter rows, one per module (decoder_params.count_decoder sums them)."""
        return [p.group() for p in self.modules(c)]


class Placed(NamedTuple):
    """One module of a decoder's base model: where it sits (component, sublayer), what it is, its stored copies."""

    component: str  # embedding | layers | final_norm | head
    sublayer: str  # embeddings, attention, ffn, final_norm, lm_head
    module: Module
    copies: int

    def group(self) -> ParamGroup:
        m = self.module
        if m.kind == "embedding":
            shape = f"{m.n_in}×{m.n_out}"
        elif m.kind == "norm":
            shape = f"2×{m.n_out}" if m.bias else f"{m.n_out}"
        else:  # nn.Linear, transformers' Conv1D: n_in×n_out (+ bias)
            shape = lin_shape(m.n_in, m.n_out, m.bias)
        return ParamGroup(self.component, self.sublayer, m.path, shape, m.numel, self.copies)


def rms_norm(path: str, n: int) -> Module:
    """RMSNorm(n) in Llama, Qwen and Gemma: one weight of n, no bias (Zhang and Sennrich 2019, eq. 4)."""
    return norm(path, n, bias=False)


def attention_modules(c: DecoderConfig, q_bias: bool, o_bias: bool, qk_norm: bool) -> list[Placed]:
    """self_attn of Llama/Qwen/Gemma: q_proj H -> heads·d, k_proj and v_proj H -> kv_heads·d (grouped-query attention,
    Ainslie et al. 2023 Sec. 2), o_proj heads·d -> H; Qwen3 and Gemma-3 add an RMSNorm of d on q and on k."""
    H, L, d = c.hidden_dim, c.num_layers, c.head_dim
    q, kv = c.num_heads * d, c.kv_heads * d
    mods = [lin("self_attn.q_proj", H, q, q_bias), lin("self_attn.k_proj", H, kv, q_bias),
            lin("self_attn.v_proj", H, kv, q_bias), lin("self_attn.o_proj", q, H, o_bias)]
    if qk_norm:
        mods += [rms_norm(f"self_attn.{n}_norm", d) for n in ("q", "k")]
    return [Placed("layers", "attention", m, L) for m in mods]


def gated_mlp_modules(c: DecoderConfig, bias: bool) -> list[Placed]:
    """mlp of Llama/Qwen/Gemma: gate_proj and up_proj H -> I, down_proj I -> H (SwiGLU or GeGLU, Shazeer 2020)."""
    H, I, L = c.hidden_dim, c.intermediate_dim, c.num_layers
    mods = [lin("mlp.gate_proj", H, I, bias), lin("mlp.up_proj", H, I, bias), lin("mlp.down_proj", I, H, bias)]
    return [Placed("layers", "ffn", m, L) for m in mods]


def norm_modules(c: DecoderConfig, names: tuple[str, ...], sublayer: str) -> list[Placed]:
    """One RMSNorm of H per layer for each name (input_layernorm, post_attention_layernorm, ...)."""
    return [Placed("layers", sublayer, rms_norm(n, c.hidden_dim), c.num_layers) for n in names]


def token_embedding(c: DecoderConfig, module: str = "embed_tokens") -> Placed:
    """The token table V×H (nn.Embedding), which a tied output projection reads too."""
    return Placed("embedding", "embeddings", emb(module, c.vocab_size, c.hidden_dim), 1)


def final_norm(c: DecoderConfig, module: str = "norm", bias: bool = False) -> Placed:
    """The norm after the last layer (norm, ln_f): the output projection reads its output."""
    H = c.hidden_dim
    return Placed("final_norm", "final_norm", norm(module, H) if bias else rms_norm(module, H), 1)


def lm_head_module(c: DecoderConfig) -> Placed:
    """The causal LM's output projection H -> V (nn.Linear, no bias): tied, its weight is the token table (no stored
    copy of its own, as named_parameters() and sum(numel) count it); untied, a V×H matrix of its own."""
    return Placed("head", "lm_head", Module("lm_head", "linear", c.hidden_dim, c.vocab_size, bias=False, tied=c.tied),
                  1)
