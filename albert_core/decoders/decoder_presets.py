"""Published decoders and the embedding models built on them: the shape of each one's config.json and its base
model's parameter count, from ../shared/reference/decoder-configs.md (AutoModel.from_config, transformers 5.23, no LM
head, tied embeddings once); tests/test_decoders.py builds each and counts it."""

from __future__ import annotations

from dataclasses import dataclass

from .decoder_config import DecoderConfig


@dataclass(frozen=True)
class DecoderPreset:
    cfg: DecoderConfig
    model_id: str  # the Hugging Face model id whose config.json this is
    base_params: int  # the published count of the base model (the reference's)
    note: str = ""
    embedding: bool = False  # an embedding model: trained and served without its LM head


# the config.json columns of the reference's table: model_type, vocab, hidden, layers, heads, kv heads, head_dim,
# intermediate, max_position (every preset's output projection is tied to its token table)
_COLUMNS = ("family", "vocab_size", "hidden_dim", "num_layers", "num_heads", "kv_heads", "head_dim",
            "intermediate_dim", "max_position")


def _p(model_id: str, shape: tuple[object, ...], base: int, note: str = "", embedding: bool = False,
       **kw: object) -> DecoderPreset:
    fields = dict(zip(_COLUMNS, shape, strict=True)) | kw | {"name": model_id.rsplit("/", 1)[-1]}
    return DecoderPreset(DecoderConfig(**fields), model_id, base, note, embedding)  # type: ignore[arg-type]


_ALL = [
    _p("openai-community/gpt2", ("gpt2", 50257, 768, 12, 12, 12, 64, 3072, 1024), 124_439_808),
    _p("HuggingFaceTB/SmolLM2-135M", ("llama", 49152, 576, 30, 9, 3, 64, 1536, 8192), 134_515_008),
    _p("HuggingFaceTB/SmolLM2-360M", ("llama", 49152, 960, 32, 15, 5, 64, 2560, 8192), 361_821_120),
    _p("HuggingFaceTB/SmolLM2-1.7B", ("llama", 49152, 2048, 24, 32, 32, 64, 8192, 8192), 1_711_376_384),
    _p("meta-llama/Llama-3.2-1B", ("llama", 128256, 2048, 16, 32, 8, 64, 8192, 131072), 1_235_814_400),
    _p("meta-llama/Llama-3.2-3B", ("llama", 128256, 3072, 28, 24, 8, 128, 8192, 131072), 3_212_749_824),
    _p("Qwen/Qwen2.5-0.5B", ("qwen2", 151936, 896, 24, 14, 2, 64, 4864, 32768), 494_032_768),
    _p("Qwen/Qwen2.5-1.5B", ("qwen2", 151936, 1536, 28, 12, 2, 128, 8960, 131072), 1_543_714_304),
    _p("Qwen/Qwen3-0.6B", ("qwen3", 151936, 1024, 28, 16, 8, 128, 3072, 40960), 596_049_920,
       "max_position_embeddings 40960 as its config.json says; its model card gives a 32,768-token context"),
    _p("Qwen/Qwen3-Embedding-0.6B", ("qwen3", 151669, 1024, 28, 16, 8, 128, 3072, 32768), 595_776_512,
       "an embedding model: causal attention, last-token pooling (sentence-transformers), no LM head", True),
    _p("google/gemma-3-270m", ("gemma3_text", 262144, 640, 18, 4, 1, 256, 2048, 32768), 268_098_176,
       sliding_window=512, global_every=6),
    _p("google/gemma-3-1b-pt", ("gemma3_text", 262144, 1152, 26, 4, 1, 256, 6912, 32768), 999_885_952,
       sliding_window=512, global_every=6),
    _p("google/embeddinggemma-300m", ("gemma3_text", 262144, 768, 24, 3, 1, 256, 1152, 2048), 302_863_104,
       "an embedding model: bidirectional attention, mean pooling, then two bias-free Dense layers in "
       "sentence-transformers (768×3072 and 3072×768: 4,718,592 more, 307,581,696 in all) that transformers does "
       "not build", True, sliding_window=512, global_every=6, bidirectional=True),
]
DECODER_PRESETS: dict[str, DecoderPreset] = {p.cfg.name: p for p in _ALL}


def trains_as_causal_lm(c: DecoderConfig) -> bool:
    """Whether c trains with its LM head on next-token loss: not an embedding model (one that attends both ways, or a
    preset marked as one, such as Qwen3-Embedding-0.6B, whose config.json alone does not say so)."""
    preset = DECODER_PRESETS.get(c.name)
    return not c.bidirectional and not (preset is not None and preset.cfg == c and preset.embedding)
