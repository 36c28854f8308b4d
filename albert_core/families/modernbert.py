"""ModernBERT (Warner et al. 2024): pre-LN, rotary positions (no table), gated FFN, no biases by default,
every n-th layer global attention and the others a local window.

Hugging Face: ModernBertConfig / ModernBertModel. Layer: attn_norm (nn.Identity in layer 0), attn.Wqkv
Linear(H, 3H), attn.Wo, mlp_norm, mlp.Wi Linear(H, 2I) (GLU: input and gate), mlp.Wo Linear(I, H);
biases per attention_bias / mlp_bias / norm_bias; embeddings.norm and final_norm.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..layout import stored_copies
from ..replay.symbolic import F32, Replay, Size, Tensor, sdpa_fused, sz
from ..values import MAX_DIM, MAX_LAYERS
from ..values import short as _short
from .base import OwnField, ParamGroup, Refusals, Step, layer_norm, lin_shape, linear
from .modules import Module, Sublayers, emb, lin, norm, stacked_prefix, tied

if TYPE_CHECKING:
    from ..config_fields import ConfigFields

NAME = "modernbert"
MODEL_TYPES = ("modernbert",)
# peft 0.21.2's default LoRA targets for each model type (peft/utils/constants.py,
# TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING); None: peft has none and raises
LORA_TARGETS: dict[str, tuple[str, ...] | None] = {"modernbert": None}
FIELDS = {
    "attention_bias": OwnField("biases in Wqkv and Wo."),
    "mlp_bias": OwnField("biases in the gated FFN."),
    "norm_bias": OwnField("LayerNorms with a bias."),
    "global_attn_every_n_layers": OwnField("every n-th layer attends globally, the others locally.", lo=1, hi=MAX_LAYERS),
    "local_attention": OwnField("local window width in tokens.", lo=1, hi=MAX_DIM, step=16),
}
OWN_EMBEDDING_WIDTH = False
SEGMENT_TABLE = False
HEADS = "the MLM head of ModernBertForMaskedLM is not modelled; count the base model"

HF_KEYS = {
    "vocab_size": "vocab_size", "hidden_dim": "hidden_size", "num_layers": "num_hidden_layers",
    "num_heads": "num_attention_heads", "intermediate_dim": "intermediate_size", "dropout": "mlp_dropout",
    "attention_dropout": "attention_dropout", "max_position": "max_position_embeddings",
    "hidden_act": "hidden_activation", "attention_bias": "attention_bias", "mlp_bias": "mlp_bias",
    "norm_bias": "norm_bias", "local_attention": "local_attention",
    "global_attn_every_n_layers": "global_attn_every_n_layers",
}
HF_DEFAULTS = {"hidden_activation": "gelu", "max_position_embeddings": 8192, "mlp_dropout": 0.0,
               "attention_dropout": 0.0, "attention_bias": False, "mlp_bias": False, "norm_bias": False,
               "local_attention": 128, "global_attn_every_n_layers": 3}
REQUIRED = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
REFUSED: Refusals = {
    "is_decoder": ((False, None), "decoder mode is not modelled; set it to false"),
    "add_cross_attention": ((False, None), "cross-attention layers are not modelled; set it to false"),
}



# LoRA targets given in BERT's names (query, key, value), which this model's modules never have, mean these modules
# (finetune.lora_targets): ModernBertAttention's one fused Wqkv, which holds all three
LORA_ALIASES: dict[str, tuple[str, ...]] = {"query": ("Wqkv",), "key": ("Wqkv",), "value": ("Wqkv",)}

def validate(c: ConfigFields) -> list[str]:
    return []


def groups(c: ConfigFields, n_att: int, n_ffn: int) -> list[ParamGroup]:
    V, H, I = c.vocab_size, c.hidden_dim, c.intermediate_dim
    ab, mb, nb = c.attention_bias, c.mlp_bias, c.norm_bias
    norm = f"{'2×' if nb else ''}{H}"
    return [
        ParamGroup("embedding", "embeddings", "embeddings.tok_embeddings", f"{V}×{H}", V * H, 1),
        ParamGroup("embedding", "embeddings", "embeddings.norm", norm, layer_norm(H, nb), 1),
        # layer 0's attn_norm is nn.Identity (the embedding norm precedes it)
        ParamGroup("layers", "attention", "attn_norm (not in layer 0)", norm, layer_norm(H, nb), n_att - 1),
        ParamGroup("layers", "attention", "attn.Wqkv", lin_shape(H, 3 * H, ab), linear(H, 3 * H, ab), n_att),
        ParamGroup("layers", "attention", "attn.Wo", lin_shape(H, H, ab), linear(H, H, ab), n_att),
        ParamGroup("layers", "ffn", "mlp_norm", norm, layer_norm(H, nb), n_ffn),
        ParamGroup("layers", "ffn", "mlp.Wi (input and gate)", lin_shape(H, 2 * I, mb), linear(H, 2 * I, mb), n_ffn),
        ParamGroup("layers", "ffn", "mlp.Wo", lin_shape(I, H, mb), linear(I, H, mb), n_ffn),
        ParamGroup("layers", "final_norm", "final_norm", norm, layer_norm(H, nb), 1),
    ]


def sizes(c: ConfigFields, n_att: int, n_ffn: int) -> tuple[int, int, int, int]:
    H, I, nb = c.hidden_dim, c.intermediate_dim, c.norm_bias
    att = layer_norm(H, nb) + linear(H, 3 * H, c.attention_bias) + linear(H, H, c.attention_bias)
    ffn = layer_norm(H, nb) + linear(H, 2 * I, c.mlp_bias) + linear(I, H, c.mlp_bias)  # GLU: Shazeer 2020
    all_layers = att * n_att - layer_norm(H, nb) + ffn * n_ffn + layer_norm(H, nb)  # no norm in layer 0; final_norm
    return c.vocab_size * H + layer_norm(H, nb), att + ffn, all_layers, 0  # no pooler


def from_hf(d: dict[str, object], kw: dict[str, Any], problems: list[str]) -> None:
    kw["type_vocab_size"] = 0
    kw["embedding_dim"] = kw.get("hidden_dim", 1)
    emb_drop = d.get("embedding_dropout", 0.0)
    if emb_drop != d.get("mlp_dropout", 0.0):
        problems.append(f"embedding_dropout={_short(emb_drop)} is not supported: it is modelled as equal to "
                        "mlp_dropout (the one hidden dropout); make them equal")
    types = d.get("layer_types")
    if types is not None and "num_layers" in kw and "global_attn_every_n_layers" in kw:
        n = kw["global_attn_every_n_layers"]
        expected = ["sliding_attention" if i % n else "full_attention" for i in range(kw["num_layers"])]
        if types != expected:
            problems.append(f"layer_types is not supported unless every {n}-th layer (from layer 0) is "
                            "full_attention and the others sliding_attention (global_attn_every_n_layers); "
                            "remove the key or make it match")


def to_hf(c: ConfigFields) -> dict[str, object]:
    return {"embedding_dropout": c.dropout, "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0,
            "cls_token_id": 0, "sep_token_id": 0}


def hf_classes(heads: bool) -> tuple[type, type]:
    from transformers import ModernBertConfig, ModernBertModel

    return ModernBertConfig, ModernBertModel


# ---- activation replay (albert_core/replay/symbolic.py): ModernBertModel's ops and what they save -----------------
FIRST_LAYER_DIFFERS = True  # layer 0's attn_norm is nn.Identity


def _layer_types(cfg: ConfigFields) -> set[str]:
    """config.layer_types: layer i attends globally when i % global_attn_every_n_layers == 0, else locally."""
    n, L = cfg.global_attn_every_n_layers, cfg.num_layers
    return {"full_attention"} | ({"sliding_attention"} if n > 1 and L > 1 else set())


def replay_embeddings(r: Replay, cfg: ConfigFields) -> Tensor:
    """ModernBertEmbeddings (tok_embeddings, norm, drop), then what the encoder hands to every layer: the
    rotary cos and sin (one pair per layer type, (1, S, head_dim) in the hidden dtype) that apply_rotary_pos_emb's
    multiplications save, and under sdpa's fused kernel the (B, 1, S, S) sliding-window mask each local layer
    saves (a conversion of the one mask the model builds, in the query dtype)."""
    H = cfg.hidden_dim
    r.index(sz(bs=1), "embeddings: index tensors", "aten::embedding (input_ids)")
    x = r.layer_norm(r.new(sz(bs=H), r.md), H, "embeddings: LayerNorm")
    x = r.dropout(x, cfg.dropout, "embeddings: dropout mask")
    if r.ctx.get("checkpointing"):
        return x  # position_embeddings and attention_mask are keyword arguments: the checkpoint keeps neither
    for t in sorted(_layer_types(cfg)):
        for f in ("cos", "sin"):  # q.float() * cos, rotate_half(q) * sin: MulBackward0 saves cos and sin
            r.save(r.new(sz(s=cfg.head_dim), x.dtype), "rotary cos/sin (all layers of a type)", f"aten::mul ({t} {f})")
    fused = cfg.attention_dropout == 0 or r.device == "cuda"  # CPU sdpa with dropout: the math path saves no mask
    if "sliding_attention" in _layer_types(cfg) and r.ctx.get("attention") == "sdpa" and fused:
        # create_bidirectional_sliding_window_mask is None below the window; the fused kernel saves attn_mask
        n = sum(1 for i in range(cfg.num_layers) if i % cfg.global_attn_every_n_layers)
        for _ in range(n):  # each local layer's sdpa call saves its own conversion of the mask (query dtype)
            r.save(r.new(sz(bss=1), r.amp or x.dtype), "sliding-window mask (B, 1, S, S)",
                   "aten::_scaled_dot_product_*_attention (attn_mask)", min_seq_len=cfg.local_attention // 2)
    return x


def replay_layer(r: Replay, cfg: ConfigFields, x: Tensor, attention: str) -> Tensor:
    """ModernBertEncoderLayer (pre-LN): x + out_drop(Wo(attn(attn_norm(x)))), then + mlp(mlp_norm(.))."""
    H = cfg.hidden_dim
    h = x if r.ctx.get("layer_index") == 0 else r.layer_norm(x, H, "LayerNorms")  # attn_norm (Identity in layer 0)
    ctx = _attention(r, cfg, r.linear(h, H, 3 * H, "layer input (Wqkv projection)"), attention)
    a = r.dropout(r.linear(ctx, H, H, "context (output projection input)"), cfg.attention_dropout,
                  "residual dropout masks")  # out_drop uses attention_dropout
    x = r.add(x, a)
    return r.add(x, _mlp(r, cfg, r.layer_norm(x, H, "LayerNorms")))


def _attention(r: Replay, cfg: ConfigFields, qkv: Tensor, attention: str) -> Tensor:
    """unbind Wqkv's output, apply_rotary_pos_emb to q and k (new tensors: float32 math, cast back), then
    eager_attention_forward (softmax in float32, cast to the query dtype), sdpa's fused kernel, or (CPU sdpa
    with attention dropout) its math path, which upcasts 16-bit q, k, v to float32 copies."""
    A, p, c = cfg.num_heads, cfg.attention_dropout, qkv.dtype
    tok = sz(bs=cfg.hidden_dim)
    q, k = r.new(tok, c), r.new(tok, c)  # q_embed.to(original_dtype), k_embed.to(...)
    if attention == "sdpa" and (p == 0 or r.device == "cuda"):  # v is a view of Wqkv's output: its storage is saved
        return sdpa_fused(r, A, p, q, k, qkv)
    dt = F32 if attention == "sdpa" else c  # math path: float32 (copies of 16-bit inputs); eager: the query dtype
    r.save(r.new(tok, dt), "Q/K/V", "aten::bmm (Q, reshaped copy)")  # torch.matmul on the (B,A,S,D) views
    r.save(r.new(tok, dt), "Q/K/V", "aten::bmm (K^T, reshaped copy)")
    probs = r.unary_saves_result(r.new(sz(bss=A), F32), "aten::_softmax", "attention probabilities (softmax output)")
    if dt != F32:  # eager: softmax(..., dtype=torch.float32).to(query.dtype), a copy
        probs = r.new(probs.size, c)
    probs = r.dropout(probs, p, "attention dropout mask")
    r.save(probs, "attention probabilities (bmm input: dropped or cast)", "aten::bmm (probs)")
    _value(r, A, qkv, tok, F32 if attention == "sdpa" and c != F32 else None)
    return r.new(tok, c)  # transpose(1, 2).contiguous(): a copy, saved by Wo


def _value(r: Replay, A: int, qkv: Tensor, tok: Size, upcast: str | None) -> None:
    """matmul(probs, v) saves v reshaped to (B·A, S, D): a copy, or at B = 1 or A = 1 a view of Wqkv's whole
    (B, S, 3H) output (its dims merge). An upcast (math path, 16-bit) is a contiguous float32 copy."""
    if upcast:
        r.save(r.new(tok, upcast), "Q/K/V", "aten::bmm (V, float32 copy)")
        return
    view = "aten::bmm (V: a view of Wqkv's output)"
    if A == 1:
        r.save(qkv, "Q/K/V", view)
        return
    r.save(qkv, "Q/K/V", view, batch_one=True)
    r.save(r.new(tok, qkv.dtype), "Q/K/V", "aten::bmm (V, reshaped copy)", batch_one=False)


def _mlp(r: Replay, cfg: ConfigFields, x: Tensor) -> Tensor:
    """ModernBertMLP: Wi -> chunk(2) into input and gate (views of one storage) -> act(input) * gate -> drop -> Wo."""
    H, I = cfg.hidden_dim, cfg.intermediate_dim
    wi = r.linear(x, H, 2 * I, "FFN input")
    r.save(wi, "FFN Wi output (input and gate chunks)", "aten::mul (gate: a chunk of Wi's output)")
    half = Tensor(wi.id, sz(bs=I), wi.dtype)  # input and gate: chunk views of Wi's (B, S, 2I) output
    g = r.mul(r.activation(half, cfg.hidden_act), half, "activation function")
    g = r.dropout(g, cfg.dropout, "FFN dropout mask")
    return r.linear(g, I, H, "FFN output projection input")


def replay_pooler(r: Replay, cfg: ConfigFields, y: Tensor) -> None:
    """No pooler; final_norm on the last hidden state."""
    r.layer_norm(y, cfg.hidden_dim, "final LayerNorm")


def weight_copy_elements(cfg: ConfigFields, checkpointing: bool) -> int:
    """Autocast's 16-bit weight copies that Linear layers save: Wqkv, Wo, Wi, Wo of every stored layer."""
    if checkpointing:
        return 0
    H, I = cfg.hidden_dim, cfg.intermediate_dim
    return stored_copies(cfg, "attention") * 4 * H * H + stored_copies(cfg, "ffn") * 3 * H * I

FFN_MATRICES = 3  # gated FFN: Wi is H×2I (input and gate), Wo is I×H (flops.forward_flops)


# The modules Hugging Face builds (transformers modeling_modernbert.py, each module's __init__): albert_core.estimate.hf_modules
BASE_PREFIX = "model"  # ModernBertForMaskedLM.model, ...
POOLER_DROPPED_FOR: tuple[str, ...] = ()  # no pooler


def embedding_modules(c: ConfigFields) -> list[Module]:
    return [emb("embeddings.tok_embeddings", c.vocab_size, c.hidden_dim),
            norm("embeddings.norm", c.hidden_dim, c.norm_bias)]


def layer_prefix(c: ConfigFields, owner: int, j: int) -> str:
    return stacked_prefix("layers.", c, owner, j)


def sublayer_modules(c: ConfigFields, p: str, first: bool) -> Sublayers:
    H, I, nb, ab, mb = c.hidden_dim, c.intermediate_dim, c.norm_bias, c.attention_bias, c.mlp_bias
    attn_norm = [] if first else [norm(f"{p}attn_norm", H, nb)]  # layer 0's attn_norm is nn.Identity
    return ([*attn_norm, lin(f"{p}attn.Wqkv", H, 3 * H, ab), lin(f"{p}attn.Wo", H, H, ab)],
            [norm(f"{p}mlp_norm", H, nb), lin(f"{p}mlp.Wi", H, 2 * I, mb), lin(f"{p}mlp.Wo", I, H, mb)])


def other_modules(c: ConfigFields) -> list[Module]:
    return [norm("final_norm", c.hidden_dim, c.norm_bias)]


def head_modules(c: ConfigFields, head: str, num_labels: int) -> list[Module]:
    H = c.hidden_dim  # ModernBertPredictionHead: dense H -> H (bias = classifier_bias, default False) and a norm
    prediction = [lin("head.dense", H, H, bias=False), norm("head.norm", H, c.norm_bias)]
    if head == "mlm":  # ModernBertForMaskedLM: decoder bias = decoder_bias (default True)
        return [*prediction, tied("decoder", H, c.vocab_size, True)]
    return [*prediction, lin("classifier", H, num_labels)]


# The training step (albert_core.step.peak)
STEP = Step("backward_modernbert")


def buffer_bytes(c: ConfigFields, float_bytes: int) -> int:
    """ModernBertRotaryEmbedding: {type}_inv_freq and its original copy, per layer type (float)."""
    n = c.global_attn_every_n_layers
    types = {"sliding" if n > 1 and i % n else "full" for i in range(c.num_layers)}
    return len(types) * 2 * ((c.head_dim + 1) // 2) * float_bytes  # arange(0, dim, 2): ceil(dim / 2)


if TYPE_CHECKING:  # this module against the contract (mypy): a missing or mistyped name is a type error here
    from . import modernbert as _this
    from .base import Family

    _family: Family = _this
