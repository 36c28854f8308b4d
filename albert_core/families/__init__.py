"""Model families: one small module each, holding what differs between them (a family whose forward the replay cannot
express with the shared ops adds its own replay module too: MPNet's step/mpnet_forward.py).

A family module is a `base.Family` (the contract, with typed signatures; bert.py is the smallest complete one):
NAME, MODEL_TYPES, LORA_TARGETS (peft's default LoRA targets), FIELDS (its own ModelConfig fields, each a
base.OwnField: bounds or choices and help, read by config.validate, the sweeps and the sidebar), OWN_EMBEDDING_WIDTH, SEGMENT_TABLE, HEADS, HF_KEYS, HF_DEFAULTS, REQUIRED, REFUSED;
validate, sizes (the closed form), groups (the breakdown), from_hf/to_hf/hf_classes (config.json and the Hugging
Face classes), replay_embeddings/_layer/_pooler and weight_copy_elements (the activation replay), and its module
layout as Hugging Face names it (BASE_PREFIX, POOLER_DROPPED_FOR, embedding_modules, layer_prefix, sublayer_modules,
other_modules, head_modules; modules.py's Module, put together by albert_core.estimate.hf_modules), and what the
training step asks of it (STEP, a base.Step; buffer_bytes). Optional parts: `base.Heads` (heads_groups, heads_size:
where HEADS is None) and `base.Inference` (infer_*, cast_sizes: where the inference peak is modelled), and the
single names listed in base.py. Adding a family: a new module here, and its name in albert_core/names.py. Each module
ends with a TYPE_CHECKING block where the type checker (mypy, scripts/test.sh) holds it to the contract and to the
optional parts it defines (tests/test_family_contract.py holds those blocks complete).
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import cast

from ..names import FAMILIES as NAMES
from .base import Family, OwnField, hf_attentions

__all__ = ["NAMES", "Family", "OwnField", "attention_run", "family", "family_fields", "model_types", "own_fields"]


@cache
def family(name: str) -> Family:
    """The module of family `name` (imported on first use)."""
    if name not in NAMES:
        raise ValueError(f"family must be one of {', '.join(NAMES)}, got {name!r}")
    # each module's own TYPE_CHECKING block holds it to Family; importlib only knows it is a module
    return cast(Family, importlib.import_module(f"{__name__}.{name.replace('-', '_')}"))


def attention_run(family_name: str, attention: str) -> str:
    """The attention Hugging Face runs for `attention` ("eager", "sdpa"): a family without an sdpa path
    (HF_ATTENTIONS, e.g. DebertaV2Model's own attention) runs eager (albert_core/engine/models.py builds it so)."""
    return attention if attention in hf_attentions(family(family_name)) else "eager"


@cache
def family_fields() -> dict[str, tuple[str, ...]]:
    """Family-specific ModelConfig field -> the families that use it."""
    owners: dict[str, list[str]] = {}
    for n in NAMES:
        for f in family(n).FIELDS:
            owners.setdefault(f, []).append(n)
    return {f: tuple(o) for f, o in owners.items()}


def field_applies(family_name: str, field: str) -> bool:
    """Whether a ModelConfig field means anything for a family: every shared field does; a family's own field
    (DeBERTa's position_buckets, ModernBERT's local_attention, ...) only for the families that own it."""
    owners = family_fields().get(field)
    return owners is None or family_name in owners


@cache
def own_fields() -> dict[str, OwnField]:
    """Family-specific ModelConfig field -> its rules and help (base.OwnField), as its first owner gives them."""
    out: dict[str, OwnField] = {}
    for n in NAMES:
        for f, o in family(n).FIELDS.items():
            out.setdefault(f, o)
    return out


@cache
def model_types() -> dict[str, str]:
    """config.json model_type -> family name."""
    return {t: n for n in NAMES for t in family(n).MODEL_TYPES}
