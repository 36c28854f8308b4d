"""Model families: one small module each, holding everything that differs between them.

A family module defines (see bert.py for the smallest complete one):
  NAME, MODEL_TYPES          the family's name and the config.json model_types read as it (first is written)
  FIELDS                     ModelConfig fields of this family beyond the common ones (others stay default)
  OWN_EMBEDDING_WIDTH        whether embedding_dim may differ from hidden_dim
  SEGMENT_TABLE              True: type_vocab_size >= 1; False: it must be 0; None: either
  HEADS                      None when count_parameters(heads=True) is modelled, else why not
  validate(c)                the family's own rules, each message saying what to change
  sizes(c, n_att, n_ffn)     (embedding, per_layer, all_layers, pooler): the closed form, plain arithmetic
  groups(c, n_att, n_ffn)    the ParamGroup rows of the breakdown, module names as Hugging Face names them
  HF_KEYS, HF_DEFAULTS, REFUSED, from_hf(d, kw, problems), to_hf(c), hf_classes(heads)
                             the config.json mapping and the Hugging Face classes that build it
  replay_embeddings/_layer/_pooler, weight_copy_elements (and infer_* where the inference peak is modelled)
                             the ops its training forward runs, for albert_core.activations' replay
Adding a family: a new module here and its name in NAMES (and in config.FAMILIES' order).
"""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

NAMES = ("bert", "albert", "roberta", "distilbert", "electra", "deberta-v2", "modernbert")


@cache
def family(name: str) -> ModuleType:
    """The module of family `name` (imported on first use)."""
    if name not in NAMES:
        raise ValueError(f"family must be one of {', '.join(NAMES)}, got {name!r}")
    return importlib.import_module(f"{__name__}.{name.replace('-', '_')}")


@cache
def family_fields() -> dict[str, tuple[str, ...]]:
    """Family-specific ModelConfig field -> the families that use it."""
    owners: dict[str, list[str]] = {}
    for n in NAMES:
        for f in family(n).FIELDS:
            owners.setdefault(f, []).append(n)
    return {f: tuple(o) for f, o in owners.items()}


@cache
def model_types() -> dict[str, str]:
    """config.json model_type -> family name."""
    return {t: n for n in NAMES for t in family(n).MODEL_TYPES}
