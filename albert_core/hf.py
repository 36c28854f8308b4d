"""Interop with Hugging Face config.json dicts (model_type "bert" and "albert"). No torch here.

Hugging Face's BertModel has no sharing and no factorization; AlbertModel shares whole layers
within `num_hidden_groups` groups of `inner_group_num` layers. Sharing only attention or only
the FFN is beyond both: `to_hf_config` then writes the unshared layout (same activations and
FLOPs, more parameters) and records the real mode under EXPLORER_KEY, so that a round trip
through config.json is exact. `hf_expressible` tells whether HF builds exactly `cfg`'s parameters.
"""

from __future__ import annotations

from typing import Any

from .config import ConfigError, ModelConfig, coerce_field

EXPLORER_KEY = "albert_explorer"  # our own fields inside a config.json; HF keeps unknown keys as attributes

# ModelConfig field -> config.json key, shared by both model types
_COMMON = {
    "vocab_size": "vocab_size",
    "hidden_dim": "hidden_size",
    "num_layers": "num_hidden_layers",
    "num_heads": "num_attention_heads",
    "intermediate_dim": "intermediate_size",
    "dropout": "hidden_dropout_prob",
    "attention_dropout": "attention_probs_dropout_prob",
    "max_position": "max_position_embeddings",
    "type_vocab_size": "type_vocab_size",
    "hidden_act": "hidden_act",
}
_ALBERT_ONLY = {"embedding_dim": "embedding_size", "num_groups": "num_hidden_groups", "inner_group_num": "inner_group_num"}
# defaults Hugging Face uses when a config.json leaves a key out (BertConfig / AlbertConfig)
_HF_DEFAULTS = {
    "bert": {"type_vocab_size": 2, "max_position_embeddings": 512, "hidden_act": "gelu",
             "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1},
    "albert": {"type_vocab_size": 2, "max_position_embeddings": 512, "hidden_act": "gelu_new",
               "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
               "num_hidden_groups": 1, "inner_group_num": 1, "embedding_size": 128},
}
_REQUIRED = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")


def hf_expressible(cfg: ModelConfig) -> bool:
    """True when Hugging Face's BertModel/AlbertModel built from to_hf_config(cfg) has exactly cfg's parameters."""
    owns_all = cfg.sharing == "none" or cfg.num_groups == cfg.num_layers  # every layer its own weights
    if cfg.family == "bert":
        return owns_all and cfg.inner_group_num == 1
    return cfg.sharing == "all" or owns_all


def to_hf_config(cfg: ModelConfig) -> dict[str, Any]:
    """A config.json dict that Hugging Face's BertConfig/AlbertConfig accepts, plus our own fields."""
    d: dict[str, Any] = {"model_type": cfg.family}
    for ours, theirs in _COMMON.items():
        d[theirs] = getattr(cfg, ours)
    if cfg.family == "albert":
        d["embedding_size"] = cfg.embedding_dim
        # only whole-layer sharing maps onto HF groups; other modes get one group per layer
        d["num_hidden_groups"] = cfg.num_groups if cfg.sharing == "all" else cfg.num_layers
        d["inner_group_num"] = cfg.inner_group_num
    d[EXPLORER_KEY] = {"name": cfg.name, "sharing": cfg.sharing, "num_groups": cfg.num_groups,
                       "inner_group_num": cfg.inner_group_num}
    return d


def hf_dict(cfg: ModelConfig) -> dict[str, Any]:
    """to_hf_config without our own key: exactly what Hugging Face's config classes are given."""
    return {k: v for k, v in to_hf_config(cfg).items() if k != EXPLORER_KEY}


def hf_built_config(cfg: ModelConfig) -> ModelConfig:
    """The layout Hugging Face builds from to_hf_config(cfg): cfg itself when hf_expressible, else unshared."""
    if hf_expressible(cfg):
        return cfg
    return from_hf_config(hf_dict(cfg)).replace(name=cfg.name)


def from_hf_config(d: Any) -> ModelConfig:
    """Parse a config.json dict; every problem is reported in one ConfigError naming the field."""
    if not isinstance(d, dict):
        raise ConfigError([f"a config.json must hold a JSON object, got {type(d).__name__}"])
    model_type = d.get("model_type")
    if model_type not in ("bert", "albert"):
        raise ConfigError([f"model_type must be 'bert' or 'albert', got {model_type!r}"])
    defaults = _HF_DEFAULTS[model_type]
    problems = [f"missing field '{k}'" for k in _REQUIRED if k not in d]
    mapping = dict(_COMMON, **(_ALBERT_ONLY if model_type == "albert" else {}))
    kw: dict[str, Any] = {"family": model_type}
    for ours, theirs in mapping.items():
        if theirs not in d and theirs not in defaults:
            continue  # already reported as missing
        try:
            kw[ours] = coerce_field(ours, d.get(theirs, defaults.get(theirs)))
        except ValueError as e:
            problems.append(f"{theirs}: {e}")
    extra = d.get(EXPLORER_KEY)
    if extra is not None and not isinstance(extra, dict):
        problems.append(f"{EXPLORER_KEY} must be an object, got {type(extra).__name__}")
        extra = None
    if problems:
        raise ConfigError(problems)
    if model_type == "bert":
        kw.update(embedding_dim=kw["hidden_dim"], sharing="none", num_groups=1, inner_group_num=1)
    else:
        # HF: one group per layer means nothing is shared; fewer groups share whole layers
        unshared = kw["num_groups"] == kw["num_layers"] and kw["num_groups"] > 1
        kw["sharing"] = "none" if unshared else "all"
        if unshared:
            kw["num_groups"] = 1
    path = d.get("_name_or_path")  # HF writes text; anything else is not a name
    kw["name"] = path[-80:] if isinstance(path, str) and path.strip() else model_type
    if extra:
        for k in ("name", "sharing", "num_groups", "inner_group_num"):
            if k in extra:
                try:
                    kw[k] = coerce_field(k, extra[k])
                except ValueError as e:
                    problems.append(f"{EXPLORER_KEY}.{e}")
        if problems:
            raise ConfigError(problems)
    return ModelConfig(**kw)
