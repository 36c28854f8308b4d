"""ModelConfig: the one configuration type that flows through core, sweeps, charts, URL and config.json.

Field names follow the source texts (embedding_dim, hidden_dim, num_layers, num_heads,
intermediate_dim, dropout, max_position). Layer layout follows Hugging Face's ALBERT:
the encoder applies `num_layers` times a group of `inner_group_num` layers, and the
layers are split evenly into `num_groups` groups, each owning its parameters.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

FAMILIES = ("bert", "albert")
SHARING_MODES = ("none", "attention", "ffn", "all")
# activations Hugging Face's ACT2FN maps that a BERT/ALBERT config.json may name
HIDDEN_ACTS = ("gelu", "gelu_new", "relu", "gelu_python", "gelu_fast", "quick_gelu", "silu", "tanh")

# upper bounds that keep every count a sane integer; far beyond any real model
MAX_DIM = 1 << 20  # 1,048,576 for any width
MAX_VOCAB = 1 << 30
MAX_LAYERS = 100_000
MAX_NAME_LEN = 80


class ConfigError(ValueError):
    """A configuration that cannot be built; the message lists every problem and what to change."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


@dataclass(frozen=True)
class ModelConfig:
    name: str = "albert-base"  # shown in legends and tables
    family: str = "albert"  # "bert": V×H embedding; "albert": factorized V×E + E×H
    vocab_size: int = 30000  # V, rows of the token embedding
    embedding_dim: int = 128  # E, width of the embeddings (equals hidden_dim for bert)
    hidden_dim: int = 768  # H, width of the residual stream
    num_layers: int = 12  # L, number of layer applications (HF num_hidden_layers)
    num_heads: int = 12  # A, attention heads; must divide hidden_dim
    intermediate_dim: int = 3072  # I, FFN inner width, typically 4H
    dropout: float = 0.0  # hidden dropout probability (HF hidden_dropout_prob)
    attention_dropout: float = 0.0  # dropout on attention probabilities
    max_position: int = 512  # P, rows of the position embedding = longest sequence
    type_vocab_size: int = 2  # segment (token type) embedding rows
    hidden_act: str = "gelu_new"  # FFN activation, a key of HF's ACT2FN
    sharing: str = "all"  # which sublayers the layers of a group share: none/attention/ffn/all
    num_groups: int = 1  # layers split evenly into groups, each owning its params (HF num_hidden_groups)
    inner_group_num: int = 1  # distinct layers inside one group, all run at each step (HF inner_group_num)

    def __post_init__(self) -> None:
        problems = validate(self)
        if problems:
            raise ConfigError(problems)

    # ---- derived quantities -------------------------------------------------------------
    @property
    def head_dim(self) -> int:
        return self.hidden_dim // self.num_heads

    @property
    def factorized(self) -> bool:
        return self.family == "albert"

    @property
    def layer_applications(self) -> int:
        """Layer forwards per pass: HF runs the whole inner group at each of num_layers steps."""
        return self.num_layers * self.inner_group_num

    @property
    def effective_groups(self) -> int:
        """Groups that own parameters; with sharing='none' every layer application owns its own."""
        return self.num_layers if self.sharing == "none" else self.num_groups

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
FIELD_NAMES = tuple(f.name for f in fields(ModelConfig))


def coerce_field(name: str, value: Any) -> Any:
    """Convert a raw value (JSON or query-string text) to the field's type, or raise ValueError naming it."""
    if name in _INT_FIELDS:
        if isinstance(value, bool):
            raise ValueError(f"{name} must be a whole number, got {value!r}")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        if isinstance(value, str) and _WHOLE.match(value) and len(value) < 20:
            return int(value.strip())
        raise ValueError(f"{name} must be a whole number, got {_short(value)}")
    if name in _FLOAT_FIELDS:
        if isinstance(value, bool):
            raise ValueError(f"{name} must be a number between 0 and 1, got {value!r}")
        try:
            x = float(value) if isinstance(value, (int, float, str)) and len(str(value)) < 40 else None
        except ValueError:
            x = None
        if x is None or not math.isfinite(x):
            raise ValueError(f"{name} must be a number between 0 and 1, got {_short(value)}")
        return x
    if name in _STR_FIELDS:
        if not isinstance(value, str):
            raise ValueError(f"{name} must be text, got {_short(value)}")
        return value
    raise ValueError(f"unknown field '{name}'")


_WHOLE = re.compile(r"^\s*[+-]?[0-9]+\s*$")  # ASCII digits only ("+-5", "²" are not numbers)


def require_choice(name: str, value: Any, choices: tuple[str, ...] | list[str]) -> None:
    """ValueError naming the argument and its allowed values when value is not one of them."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {_short(value)}")


def _short(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return _num(value)  # repr of an int over 4,300 digits raises ValueError
    s = repr(value)
    return s if len(s) <= 40 else s[:37] + "..."


def _num(v: int) -> str:
    """v with thousands separators, or its order of magnitude when it is absurdly long."""
    if v.bit_length() <= 256:
        return f"{v:,}"
    return f"a {'negative ' if v < 0 else ''}number of about {int(v.bit_length() * math.log10(2)) + 1:,} digits"


def validate(c: ModelConfig) -> list[str]:
    """Every problem with a config, each saying what to change. Empty when the config is valid."""
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
    if p:  # types are wrong: the range checks below would only add noise
        return p

    def positive(name: str, hi: int) -> bool:
        v = getattr(c, name)
        if v < 1:
            p.append(f"{name} must be at least 1, got {_num(v)}")
            return False
        if v > hi:
            p.append(f"{name} must be at most {hi:,}, got {_num(v)}")
            return False
        return True

    positive("vocab_size", MAX_VOCAB)
    e_ok = positive("embedding_dim", MAX_DIM)
    h_ok = positive("hidden_dim", MAX_DIM)
    l_ok = positive("num_layers", MAX_LAYERS)
    a_ok = positive("num_heads", MAX_DIM)
    positive("intermediate_dim", MAX_DIM * 8)
    positive("max_position", MAX_DIM)
    positive("type_vocab_size", MAX_DIM)
    g_ok = positive("num_groups", MAX_LAYERS)
    positive("inner_group_num", 1024)
    for name in ("dropout", "attention_dropout"):
        v = getattr(c, name)
        if not 0.0 <= v < 1.0:
            p.append(f"{name} must be at least 0 and below 1, got {v}")
    if h_ok and a_ok and c.hidden_dim % c.num_heads:
        p.append(
            f"num_heads ({c.num_heads}) must divide hidden_dim ({c.hidden_dim}): "
            f"try {_divisor_near(c.hidden_dim, c.num_heads)} heads"
        )
    if c.family not in FAMILIES:
        p.append(f"family must be one of {', '.join(FAMILIES)}, got {_short(c.family)}")
    elif c.family == "bert" and e_ok and h_ok and c.embedding_dim != c.hidden_dim:
        p.append(
            f"for family 'bert', embedding_dim ({c.embedding_dim}) must equal hidden_dim ({c.hidden_dim}); "
            "choose family 'albert' to factorize the embedding"
        )
    if c.sharing not in SHARING_MODES:
        p.append(f"sharing must be one of {', '.join(SHARING_MODES)}, got {_short(c.sharing)}")
    elif c.sharing != "none" and l_ok and g_ok:
        if c.num_groups > c.num_layers:
            p.append(f"num_groups ({c.num_groups}) must be at most num_layers ({c.num_layers})")
        elif c.num_layers % c.num_groups:
            p.append(f"num_groups ({c.num_groups}) must divide num_layers ({c.num_layers}) so groups are even")
    if c.hidden_act not in HIDDEN_ACTS:
        p.append(f"hidden_act must be one of {', '.join(HIDDEN_ACTS)}, got {_short(c.hidden_act)}")
    if len(c.name) > MAX_NAME_LEN:
        p.append(f"name must be at most {MAX_NAME_LEN} characters, got {len(c.name)}")
    elif not c.name.strip():
        p.append("name must not be empty")
    return p


def _divisor_near(n: int, k: int) -> int:
    """The divisor of n closest to k (ties to the smaller), for the error message."""
    best = 1
    for d in range(1, min(n, 4 * k + 64) + 1):
        if n % d == 0 and abs(d - k) < abs(best - k):
            best = d
    return best
