"""ModelConfig: the one configuration type that flows through albert_core, the URL, config.json and the pages (charts get DataFrames).

Its fields, their defaults and what follows from them (head_dim, factorized, ...) are ConfigFields
(albert_core/config_fields.py, below the families, which read a config through it); ModelConfig adds the
validation that reads every family's rules (albert_core/families/<name>.validate and FIELDS) when a config is made,
and the conversions from and to dicts.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from functools import cache
from typing import Any

from .config_fields import ConfigFields
from .families import family, family_fields, own_fields
from .names import FAMILIES as FAMILIES  # re-exported: config.FAMILIES
from .values import MAX_DIM as MAX_DIM  # re-exported: config.MAX_DIM, ...
from .values import MAX_LAYERS as MAX_LAYERS
from .values import MAX_VOCAB as MAX_VOCAB
from .values import Kind, coerce
from .values import num as _num
from .values import short as _short

SHARING_MODES = ("none", "attention", "ffn", "all")
# activations Hugging Face's ACT2FN maps that a BERT/ALBERT config.json may name
HIDDEN_ACTS = ("gelu", "gelu_new", "relu", "gelu_python", "gelu_fast", "quick_gelu", "silu", "tanh")
MAX_NAME_LEN = 80


class ConfigError(ValueError):
    """A configuration that cannot be built; the message lists every problem and what to change."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


@dataclass(frozen=True)
class ModelConfig(ConfigFields):
    """The fields (albert_core/config_fields.py), validated when made: a config that cannot be built raises
    ConfigError with every problem and what to change."""

    def __post_init__(self) -> None:
        problems = validate(self)
        if problems:
            raise ConfigError(problems)

    def replace(self, **changes: Any) -> ModelConfig:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelConfig:
        """Build from a dict of ModelConfig fields; unknown keys and wrong types are explained."""
        if not isinstance(d, dict):
            raise ConfigError([f"expected an object of ModelConfig fields, got {type(d).__name__}"])
        known = {f.name: f for f in fields(cls)}
        problems = [f"unknown field '{k}'" for k in d if k not in known]
        if "sharing" not in d and isinstance(d.get("family", cls.family), str):
            d = {**d, "sharing": default_sharing(d.get("family", cls.family))}  # the family's own default
        kwargs: dict[str, Any] = {}
        for k, v in d.items():
            if k in known:
                try:
                    kwargs[k] = coerce_field(k, v)
                except ValueError as e:
                    problems.append(str(e))
        if problems:
            raise ConfigError(problems)
        return cls(**kwargs)


_INT_FIELDS = {f.name for f in fields(ModelConfig) if f.type == "int"}
_FLOAT_FIELDS = {f.name for f in fields(ModelConfig) if f.type == "float"}
_STR_FIELDS = {f.name for f in fields(ModelConfig) if f.type == "str"}
_BOOL_FIELDS = {f.name for f in fields(ModelConfig) if f.type == "bool"}
_KINDS: dict[object, Kind] = {"int": "int", "float": "float", "bool": "bool", "str": "str"}  # annotation text
FIELD_KINDS: dict[str, Kind] = {f.name: _KINDS[f.type] for f in fields(ModelConfig)}  # a new type must be added
FIELD_DEFAULTS = {f.name: f.default for f in fields(ModelConfig)}
FIELD_NAMES = tuple(f.name for f in fields(ModelConfig))


def coerce_field(name: str, value: object) -> int | float | bool | str:
    """Convert a raw value (JSON or query-string text) to the field's type, or raise ValueError naming it."""
    if name not in FIELD_KINDS:
        raise ValueError(f"unknown field '{name}'")
    return coerce(name, value, FIELD_KINDS[name])


def default_sharing(family: str) -> str:
    """Sharing a family uses when none is given: ALBERT shares all layers, every other family none."""
    return "all" if family == "albert" else "none"  # a family name: ALBERT's own default, the app's lens


def require_choice(name: str, value: object, choices: tuple[str, ...] | list[str]) -> None:
    """ValueError naming the argument and its allowed values when value is not one of them."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {_short(value)}")


def validate(c: ModelConfig) -> list[str]:
    """Every problem with a config, each saying what to change. Empty when the config is valid."""
    p = _type_problems(c)
    if p:  # types are wrong: the range checks below would only add noise
        return p
    ok = _range_problems(c, p)
    if {"hidden_dim", "num_heads"} <= ok and c.hidden_dim % c.num_heads:
        p.append(
            f"num_heads ({c.num_heads}) must divide hidden_dim ({c.hidden_dim}): "
            f"try {_divisor_near(c.hidden_dim, c.num_heads)} heads"
        )
    if c.family not in FAMILIES:
        p.append(f"family must be one of {', '.join(FAMILIES)}, got {_short(c.family)}")
    else:
        p += _family_problems(c, {"embedding_dim", "hidden_dim"} <= ok)
    p += _sharing_problems(c, {"num_layers", "num_groups"} <= ok)
    return p + _choice_problems(c)


# whole-number field -> (lowest, highest) allowed, checked in this order
_RANGES = (
    ("vocab_size", 1, MAX_VOCAB), ("embedding_dim", 1, MAX_DIM), ("hidden_dim", 1, MAX_DIM),
    ("num_layers", 1, MAX_LAYERS), ("num_heads", 1, MAX_DIM), ("intermediate_dim", 1, MAX_DIM * 8),
    ("max_position", 1, MAX_DIM),
    ("type_vocab_size", 0, MAX_DIM),  # a family without a segment table says 0 (_family_problems)
    ("num_groups", 1, MAX_LAYERS), ("inner_group_num", 1, 1024),
)  # then the families' own whole-number fields, with the bounds each family gives them (base.OwnField)


@cache
def int_ranges() -> dict[str, tuple[int, int, bool]]:
    """Whole-number field -> (lowest, highest, whether -1 is allowed too as "not set"), in the order validate checks
    them: the common fields (_RANGES), then each family's own (base.OwnField). estimate.sweeps vectorizes the same."""
    out = {name: (lo, hi, False) for name, lo, hi in _RANGES}
    out.update({name: (o.lo, o.hi, o.unset) for name, o in own_fields().items() if o.lo is not None})
    return out


def _range_problems(c: ModelConfig, p: list[str]) -> set[str]:
    """Append to p each number out of its range; return the whole-number fields that are in range."""
    ok: set[str] = set()
    for name, (lo, hi, unset) in int_ranges().items():
        v = getattr(c, name)
        if unset and v == -1:  # Hugging Face's "not set" (DeBERTa's spans)
            ok.add(name)
        elif v < lo:
            p.append(f"{name} must be {'-1 (not set) or ' if unset else ''}at least {lo}, got {_num(v)}")
        elif v > hi:
            p.append(f"{name} must be at most {hi:,}, got {_num(v)}")
        else:
            ok.add(name)
    for name in ("dropout", "attention_dropout"):
        x = getattr(c, name)
        if not 0.0 <= x < 1.0:
            p.append(f"{name} must be at least 0 and below 1, got {x}")
    return ok


def _sharing_problems(c: ModelConfig, counts_ok: bool) -> list[str]:
    """The sharing mode, and groups that split the layers evenly (when both counts are in range)."""
    if c.sharing not in SHARING_MODES:
        return [f"sharing must be one of {', '.join(SHARING_MODES)}, got {_short(c.sharing)}"]
    if c.sharing != "none" and counts_ok:
        if c.num_groups > c.num_layers:
            return [f"num_groups ({c.num_groups}) must be at most num_layers ({c.num_layers})"]
        if c.num_layers % c.num_groups:
            return [f"num_groups ({c.num_groups}) must divide num_layers ({c.num_layers}) so groups are even"]
    return []


def _choice_problems(c: ModelConfig) -> list[str]:
    """The text fields: the activation, the families' own choices (DeBERTa's), the name."""
    p: list[str] = []
    if c.hidden_act not in HIDDEN_ACTS:
        p.append(f"hidden_act must be one of {', '.join(HIDDEN_ACTS)}, got {_short(c.hidden_act)}")
    for name, o in own_fields().items():
        if o.choices and getattr(c, name) not in o.choices:
            p.append(f"{name} must be one of {', '.join(repr(x) for x in o.choices)}, got {_short(getattr(c, name))}")
    if len(c.name) > MAX_NAME_LEN:
        p.append(f"name must be at most {MAX_NAME_LEN} characters, got {len(c.name)}")
    elif not c.name.strip():
        p.append("name must not be empty")
    return p


def _type_problems(c: ModelConfig) -> list[str]:
    p: list[str] = []
    for name in _INT_FIELDS:
        v = getattr(c, name)
        if not isinstance(v, int) or isinstance(v, bool):
            p.append(f"{name} must be a whole number, got {_short(v)}")
    for name in _FLOAT_FIELDS:
        v = getattr(c, name)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            p.append(f"{name} must be a number between 0 and 1, got {_short(v)}")
    for name in _STR_FIELDS:
        if not isinstance(getattr(c, name), str):
            p.append(f"{name} must be text, got {_short(getattr(c, name))}")
    for name in _BOOL_FIELDS:
        if not isinstance(getattr(c, name), bool):
            p.append(f"{name} must be true or false, got {_short(getattr(c, name))}")
    return p


def _family_problems(c: ModelConfig, widths_ok: bool) -> list[str]:
    """The family's own rules: its width rule, its segment table, and the other families' fields left alone."""
    fam = family(c.family)
    p: list[str] = []
    if widths_ok and not fam.OWN_EMBEDDING_WIDTH and c.embedding_dim != c.hidden_dim:
        p.append(
            f"for family '{c.family}', embedding_dim ({c.embedding_dim}) must equal hidden_dim ({c.hidden_dim}); "
            "choose family 'albert' to factorize the embedding"
        )
    if fam.SEGMENT_TABLE and c.type_vocab_size < 1:
        p.append(f"type_vocab_size must be at least 1 for family '{c.family}' (it has a segment table), "
                 f"got {c.type_vocab_size}")
    elif fam.SEGMENT_TABLE is False and c.type_vocab_size != 0:
        p.append(f"type_vocab_size must be 0 for family '{c.family}' (it has no segment table), "
                 f"got {c.type_vocab_size}")
    for name, owners in family_fields().items():
        if c.family not in owners and getattr(c, name) != FIELD_DEFAULTS[name]:
            p.append(f"{name} is a field of {' and '.join(owners)}; for family '{c.family}' leave it at "
                     f"{FIELD_DEFAULTS[name]!r}, got {_short(getattr(c, name))}")
    return p + fam.validate(c)


def _divisor_near(n: int, k: int) -> int:
    """The divisor of n closest to k (ties to the smaller), for the error message."""
    best = 1
    for d in range(1, min(n, 4 * k + 64) + 1):
        if n % d == 0 and abs(d - k) < abs(best - k):
            best = d
    return best
