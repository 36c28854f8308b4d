"""A decoder's KV cache: the bytes transformers' DynamicCache holds (cache_utils.DynamicLayer and
DynamicSlidingWindowLayer, 5.23) after a prompt and after each generated token, as PyTorch holds them (storages, not
the views the cache keeps). tests/test_decoders.py runs the real model and sums the cache's storages.

Per layer and token, K and V each hold kv_heads × head_dim elements (grouped-query attention: Ainslie et al. 2023,
Sec. 2). A global layer holds every token. A local layer (Gemma-3's sliding window W) keeps a view of the last W - 1
tokens of the tensor torch.cat made: after the prompt alone that tensor is the whole prompt; after each generated
token it is at most W tokens (the W - 1 kept and the new one).
"""

from __future__ import annotations

from dataclasses import dataclass

from .decoder_config import DecoderConfig

# bytes per element of the cache in a model cast to the dtype (serving casts; under autocast Qwen3's and Gemma-3's
# k_norm gives float32 keys beside 16-bit values, which this does not model)
CACHE_DTYPES = {"float32": 4, "bfloat16": 2, "float16": 2}


@dataclass(frozen=True)
class KVCache:
    cfg: DecoderConfig
    batch_size: int
    prompt: int  # tokens of the prompt (prefill)
    generated: int  # tokens generated after it
    dtype: str
    global_layers: int
    local_layers: int
    global_tokens: int  # tokens each global layer holds
    local_tokens: int  # tokens of storage each local layer holds

    @property
    def token_bytes(self) -> int:
        """K and V of one token in one layer: 2 × kv_heads × head_dim × bytes."""
        return 2 * self.cfg.kv_heads * self.cfg.head_dim * CACHE_DTYPES[self.dtype]

    @property
    def total(self) -> int:
        return self.batch_size * self.token_bytes * (self.global_layers * self.global_tokens
                                                     + self.local_layers * self.local_tokens)

    @property
    def per_token_all_layers(self) -> int:
        """What one more token of context costs while every layer still holds it: 2 × L × kv_heads × head_dim × bytes."""
        return self.token_bytes * self.cfg.num_layers


def has_cache(c: DecoderConfig) -> bool:
    """Whether the model generates with a cache: an encoder-style (bidirectional) one reads its input at once."""
    return not c.bidirectional


def kv_cache(c: DecoderConfig, batch_size: int, prompt: int, generated: int = 0, dtype: str = "bfloat16") -> KVCache:
    """The cache after a prompt of `prompt` tokens and `generated` tokens more, one at a time."""
    if dtype not in CACHE_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(CACHE_DTYPES)} (the model cast to it), got {dtype!r}")
    if batch_size < 1 or prompt < 1 or generated < 0:
        raise ValueError(f"batch_size and prompt must be at least 1 and generated at least 0, got {batch_size}, "
                         f"{prompt}, {generated}")
    if not has_cache(c):
        raise ValueError(f"{c.name} attends both ways (use_bidirectional_attention): it reads its input at once and "
                         "keeps no KV cache")
    total = prompt + generated
    if total > c.max_position:
        raise ValueError(f"prompt + generated ({total:,}) is past max_position ({c.max_position:,}): shorten them")
    n_global = sum(c.is_global(i) for i in range(c.num_layers))
    W = c.sliding_window
    local = prompt if generated == 0 else min(total, W)  # the cat's storage: the prompt, then at most W - 1 + 1
    return KVCache(c, batch_size, prompt, generated, dtype, n_global, c.num_layers - n_global, total, local)
