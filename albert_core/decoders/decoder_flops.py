"""A decoder's matmul FLOPs, exact Python ints, by component; the convention of albert_core.estimate.flops: 2 per
multiply-add, matmuls only (Kaplan et al. 2020, Sec. 2.1), as torch.utils.flop_counter counts them
(tests/test_decoders.py holds every component's sum to FlopCounterMode on the built model).

Per layer, over B sequences of S tokens, n query heads and k key/value heads of d: q, k, v 2·B·S·H·(n + 2k)·d
(grouped-query attention, Ainslie et al. 2023 Sec. 2); Q·Kᵀ and softmax·V 2·B·n·S²·d each, the full S×S of eager and
SDPA's math path (a causal mask or a sliding window masks scores, it does not skip them); o 2·B·S·n·d·H; the FFN
2·B·S·H·I per matrix, three in a gated one (Shazeer 2020). Training: the backward's two matmuls per forward one,
3× the forward (Kaplan et al. 2020, Sec. 2.1).
"""

from __future__ import annotations

from dataclasses import dataclass

from .decoder_config import DecoderConfig

_FFN_MATRICES = {"gpt2": 2}  # c_fc and c_proj; the others gate, up and down


@dataclass(frozen=True)
class DecoderFlops:
    qkv: int
    attention_scores: int
    attention_values: int
    attention_output: int
    ffn: int
    lm_head: int  # the causal LM's H -> V projection over every position (0: the base model)
    seq_len: int
    batch_size: int

    @property
    def total(self) -> int:
        return (self.qkv + self.attention_scores + self.attention_values + self.attention_output + self.ffn
                + self.lm_head)

    @property
    def per_token(self) -> float:
        return self.total / (self.batch_size * self.seq_len)


def decoder_forward_flops(c: DecoderConfig, seq_len: int, batch_size: int = 1, head: bool = False) -> DecoderFlops:
    if seq_len < 1 or batch_size < 1:
        raise ValueError(f"seq_len and batch_size must be at least 1, got {seq_len} and {batch_size}")
    if seq_len > c.max_position:
        raise ValueError(f"seq_len ({seq_len:,}) is past max_position ({c.max_position:,}): shorten it")
    B, S, H, L, d = batch_size, seq_len, c.hidden_dim, c.num_layers, c.head_dim
    n, k = c.num_heads, c.kv_heads
    return DecoderFlops(
        qkv=L * 2 * B * S * H * (n + 2 * k) * d,
        attention_scores=L * 2 * B * n * S * S * d,
        attention_values=L * 2 * B * n * S * S * d,
        attention_output=L * 2 * B * S * n * d * H,
        ffn=L * _FFN_MATRICES.get(c.family, 3) * 2 * B * S * H * c.intermediate_dim,
        lm_head=2 * B * S * H * c.vocab_size if head else 0,
        seq_len=S, batch_size=B)


def decoder_training_flops(c: DecoderConfig, seq_len: int, batch_size: int = 1, head: bool = False) -> int:
    """Forward and backward: 3× the forward's matmuls."""
    return 3 * decoder_forward_flops(c, seq_len, batch_size, head).total
