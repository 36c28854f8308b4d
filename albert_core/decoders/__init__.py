"""Decoder language models and the embedding models built on them (issue 54): GPT-2, Llama (SmolLM2, Llama-3.2),
Qwen2/Qwen2.5, Qwen3 (Qwen3-Embedding) and Gemma-3 text (EmbeddingGemma), each one module holding what differs
(decoder_family.DecoderFamily); decoder_config.py reads a config.json into a DecoderConfig; decoder_params.py
counts, exactly, what transformers builds; decoder_presets.py holds the published shapes. No torch here."""

from __future__ import annotations

from . import gemma3, gpt2, llama, qwen2, qwen3
from .decoder_family import DecoderFamily

FAMILIES: dict[str, DecoderFamily] = {m.FAMILY.name: m.FAMILY for m in (gpt2, llama, qwen2, qwen3, gemma3)}


def family(model_type: str) -> DecoderFamily:
    if model_type not in FAMILIES:
        raise ValueError(f"model_type must be one of {', '.join(FAMILIES)}, got {model_type!r}")
    return FAMILIES[model_type]


def is_decoder(d: object) -> bool:
    """Whether a config.json dict names a decoder family's model_type."""
    return isinstance(d, dict) and d.get("model_type") in FAMILIES
