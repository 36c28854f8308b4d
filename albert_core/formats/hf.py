"""Interop with Hugging Face config.json dicts, for every family. No torch here.

Each family module (albert_core/families/<name>.py) holds its config.json mapping (HF_KEYS,
HF_DEFAULTS, REQUIRED), the keys it refuses (REFUSED: they change parameters or activations and
are not modelled) and its own keys (from_hf / to_hf); this module is the generic machinery.

Hugging Face's BertModel has no sharing and no factorization; AlbertModel shares whole layers
within `num_hidden_groups` groups of `inner_group_num` layers; no other family shares. Other
sharing modes are beyond them: `to_hf_config` then writes the unshared layout (same activations
and FLOPs, more parameters) and records the real mode under EXPLORER_KEY, so that a round trip
through config.json is exact. `hf_expressible` tells whether HF builds exactly `cfg`'s parameters.
"""

from __future__ import annotations

import re
from typing import Any

from ..config import HIDDEN_ACTS, ConfigError, ModelConfig, coerce_field, default_sharing
from ..decoders import FAMILIES as DECODER_FAMILIES
from ..families import family, model_types
from ..families.base import refused
from ..values import short as _short

EXPLORER_KEY = "albert_explorer"  # our own fields inside a config.json; HF keeps unknown keys as attributes
_EXPLORER_FIELDS = ("name", "sharing", "num_groups", "inner_group_num")


def hf_expressible(cfg: ModelConfig) -> bool:
    """True when Hugging Face's model built from to_hf_config(cfg) has exactly cfg's parameters."""
    owns_all = cfg.sharing == "none" or cfg.num_groups == cfg.num_layers  # every layer its own weights
    if family(cfg.family).STEP.layer == "AlbertLayerGroup":  # AlbertTransformer builds num_hidden_groups groups
        return cfg.sharing == "all" or owns_all
    return owns_all and cfg.inner_group_num == 1


def to_hf_config(cfg: ModelConfig) -> dict[str, Any]:
    """A config.json dict that Hugging Face's config class of the family accepts, plus our own fields."""
    fam = family(cfg.family)
    d: dict[str, Any] = {"model_type": fam.MODEL_TYPES[0]}
    for ours, theirs in fam.HF_KEYS.items():
        d[theirs] = getattr(cfg, ours)
    d.update(fam.to_hf(cfg))
    d[EXPLORER_KEY] = {k: getattr(cfg, k) for k in _EXPLORER_FIELDS}
    return d


def hf_dict(cfg: ModelConfig) -> dict[str, Any]:
    """to_hf_config without our own key: exactly what Hugging Face's config classes are given."""
    return {k: v for k, v in to_hf_config(cfg).items() if k != EXPLORER_KEY}


def hf_built_config(cfg: ModelConfig) -> ModelConfig:
    """The layout Hugging Face builds from to_hf_config(cfg): cfg itself when hf_expressible, else unshared."""
    if hf_expressible(cfg):
        return cfg
    return from_hf_config(hf_dict(cfg)).replace(name=cfg.name)


def _model_type(d: dict[str, Any]) -> str:
    types = model_types()
    model_type = d.get("model_type")
    if isinstance(model_type, str) and model_type in DECODER_FAMILIES:
        raise ConfigError([f"model_type {model_type!r} is a decoder: the sidebar's configs are encoders so far. Its "
                           "exact parameters, KV cache and FLOPs: python -m albert_core params --config config.json "
                           "(and flops; memory measures its training step), the published ones on the tabs \"The "
                           "small decoders\" of Overview, Parameters, Memory and Compute; Verify builds and measures it"])
    if not isinstance(model_type, str) or model_type not in types:
        raise ConfigError([f"model_type must be one of {', '.join(repr(t) for t in types)}, got {_short(model_type)}"])
    return types[model_type]


def outside_families(d: Any) -> str | None:
    """The model_type of a config.json dict that no family models (RoFormer, MobileBERT, ...), else None.

    Such a config can still be built by transformers and measured by the engine (Verify's build process, `verify`).
    """
    t = d.get("model_type") if isinstance(d, dict) else None
    return t if isinstance(t, str) and t.strip() and t not in model_types() else None


def from_hf_config(d: Any) -> ModelConfig:
    """Parse a config.json dict; every problem is reported in one ConfigError naming the key."""
    if not isinstance(d, dict):
        raise ConfigError([f"a config.json must hold a JSON object, got {type(d).__name__}"])
    name = _model_type(d)
    fam = family(name)
    problems = [f"missing field '{k}'" for k in fam.REQUIRED if k not in d]
    problems += refused(d, fam.REFUSED)
    kw: dict[str, Any] = {"family": name}
    for ours, theirs in fam.HF_KEYS.items():
        if theirs not in d and theirs not in fam.HF_DEFAULTS:
            continue  # already reported as missing
        raw = d.get(theirs, fam.HF_DEFAULTS.get(theirs))
        try:
            kw[ours] = coerce_field(ours, raw)
        except ValueError as e:
            problems.append(f"{theirs}: {e}")
            continue
        if ours == "hidden_act" and raw not in HIDDEN_ACTS:  # an activation HF knows but we don't model
            problems.append(f"{theirs}: must be one of {', '.join(HIDDEN_ACTS)}, got {_short(raw)}")
            del kw[ours]
    if not fam.OWN_EMBEDDING_WIDTH and "hidden_dim" in kw:
        kw["embedding_dim"] = kw["hidden_dim"]
    kw.setdefault("sharing", default_sharing(name))
    fam.from_hf(d, kw, problems)
    extra = d.get(EXPLORER_KEY)
    if extra is not None and not isinstance(extra, dict):
        problems.append(f"{EXPLORER_KEY} must be an object, got {type(extra).__name__}")
        extra = None
    if problems:
        raise ConfigError(problems)
    path = d.get("_name_or_path")  # HF writes text; anything else is not a name
    kw["name"] = path[-80:] if isinstance(path, str) and path.strip() else d["model_type"]
    given: dict[str, Any] = extra or {}
    for k in _EXPLORER_FIELDS:
        if k in given:
            try:
                kw[k] = coerce_field(k, given[k])
            except ValueError as e:
                problems.append(f"{EXPLORER_KEY}.{e}")
    if problems:
        raise ConfigError(problems)
    try:
        return ModelConfig(**kw)
    except ConfigError as e:  # said in the file's keys: "num_hidden_layers must be at least 1", not num_layers
        raise ConfigError([_in_file_keys(p, fam.HF_KEYS) for p in e.problems]) from None


def _in_file_keys(problem: str, keys: dict[str, str]) -> str:
    """A ModelConfig problem with each field named as the config.json names it (hidden_dim -> hidden_size)."""
    for ours, theirs in keys.items():
        if ours != theirs:
            problem = re.sub(rf"\b{re.escape(ours)}\b", theirs, problem)
    return problem
