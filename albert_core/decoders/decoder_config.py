"""DecoderConfig: what a decoder (or an embedding model built on one) is built with, read from its config.json.

Every problem is said at once, naming the config.json key and what to change (DecoderError, a ValueError): the
family's own key names, since a GPT-2 config says n_embd where a Llama says hidden_size.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from ..families.base import Refusals, refused
from ..values import MAX_DIM, MAX_LAYERS, MAX_VOCAB, coerce, short
from . import FAMILIES
from .decoder_family import DecoderFamily
from .decoder_fields import DecoderFields


class DecoderError(ValueError):
    """A decoder config that cannot be built; the message lists every problem and what to change."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


@dataclass(frozen=True)
class DecoderConfig(DecoderFields):
    """The fields (decoder_fields.py), validated when made: a config that cannot be built raises DecoderError naming
    each config.json key to change."""

    def __post_init__(self) -> None:
        problems = validate(self)
        if problems:
            raise DecoderError(problems)

    def replace(self, **changes: Any) -> DecoderConfig:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_hf(self) -> dict[str, Any]:
        """The config.json transformers builds this from (AutoConfig.for_model(**d)): every key that shapes it."""
        fam = FAMILIES[self.family]
        d: dict[str, Any] = {"model_type": self.family}
        for f, key in fam.keys.items():
            d[key] = getattr(self, f)
        if fam.local_layers:
            d["layer_types"] = [("full" if self.is_global(i) else "sliding") + "_attention"
                                for i in range(self.num_layers)]
        return d

    def is_global(self, layer: int) -> bool:
        """Whether layer `layer` (from 0) attends to the whole context; the others attend within sliding_window
        (Gemma-3: layer_types, every global_every-th layer global)."""
        return not FAMILIES[self.family].local_layers or (layer + 1) % self.global_every == 0


FIELD_NAMES = tuple(f.name for f in fields(DecoderConfig))
_WHOLE = {f.name for f in fields(DecoderConfig) if f.type == "int"}
_BOOL = {f.name for f in fields(DecoderConfig) if f.type == "bool"}
# field -> (lowest, highest)
RANGES: dict[str, tuple[int, int]] = {
    "vocab_size": (1, MAX_VOCAB), "hidden_dim": (1, MAX_DIM), "num_layers": (1, MAX_LAYERS),
    "num_heads": (1, MAX_DIM), "kv_heads": (1, MAX_DIM), "head_dim": (1, MAX_DIM),
    "intermediate_dim": (1, 8 * MAX_DIM), "max_position": (1, MAX_DIM), "sliding_window": (0, MAX_DIM),
    "global_every": (1, MAX_LAYERS),
}
# in any decoder: what the counts do not model
REFUSED: Refusals = {
    "num_experts": ((None, 0, 1), "mixture-of-experts layers are not modelled yet; choose a dense model"),
    "num_local_experts": ((None, 0, 1), "mixture-of-experts layers are not modelled yet; choose a dense model"),
    "is_encoder_decoder": ((False, None), "encoder-decoder models are not modelled; choose a decoder-only model"),
}


def _key(c: DecoderConfig, f: str) -> str:
    """The config.json key of field f in c's family (the field's own name where the family has no key for it)."""
    fam = FAMILIES.get(c.family)
    return fam.keys.get(f, f) if fam is not None else f


def validate(c: DecoderConfig) -> list[str]:
    """Every problem with c, each naming its config.json key and what to change; empty when c can be built."""
    p: list[str] = []
    for f in _WHOLE:
        v = getattr(c, f)
        if not isinstance(v, int) or isinstance(v, bool):
            p.append(f"{_key(c, f)} must be a whole number, got {short(v)}")
    for f in _BOOL:
        if not isinstance(getattr(c, f), bool):
            p.append(f"{_key(c, f)} must be true or false, got {short(getattr(c, f))}")
    if not isinstance(c.name, str) or not c.name.strip():
        p.append("name must be a non-empty text")
    if c.family not in FAMILIES:
        p.append(f"model_type must be one of {', '.join(FAMILIES)}, got {short(c.family)}")
    if p:
        return p
    ok = set()
    for f, (lo, hi) in RANGES.items():
        v = getattr(c, f)
        if not lo <= v <= hi:
            p.append(f"{_key(c, f)} must be {'between ' + format(lo, ',') + ' and ' + format(hi, ',')}, got {v:,}")
        else:
            ok.add(f)
    fam = FAMILIES[c.family]
    if {"num_heads", "kv_heads"} <= ok and c.num_heads % c.kv_heads:
        p.append(f"{_key(c, 'kv_heads')} ({c.kv_heads}) must divide {_key(c, 'num_heads')} ({c.num_heads}): each key/value "
                 f"head serves a whole group of query heads; try {_divisors_near(c.num_heads, c.kv_heads)}")
    if fam.heads_divide_hidden and {"hidden_dim", "num_heads"} <= ok and c.hidden_dim % c.num_heads:
        p.append(f"{_key(c, 'num_heads')} ({c.num_heads}) must divide {_key(c, 'hidden_dim')} ({c.hidden_dim}): "
                 f"try {_divisors_near(c.hidden_dim, c.num_heads)}")
    if not fam.head_dim_key and {"hidden_dim", "num_heads", "head_dim"} <= ok and c.head_dim * c.num_heads != c.hidden_dim:
        p.append(f"head_dim ({c.head_dim}) must be {_key(c, 'hidden_dim')} / {_key(c, 'num_heads')} for {c.family}")
    if fam.rope and "head_dim" in ok and c.head_dim % 2:
        p.append(f"{_key(c, 'head_dim')} ({c.head_dim}) must be even: rotary position embeddings turn a head's "
                 f"dimensions in pairs; try {c.head_dim + 1}")
    if {"sliding_window", "max_position"} <= ok and c.sliding_window > c.max_position:
        p.append(f"{_key(c, 'sliding_window')} ({c.sliding_window:,}) is larger than {_key(c, 'max_position')} "
                 f"({c.max_position:,}): the window would never slide; set it to at most {c.max_position:,}, "
                 f"or raise {_key(c, 'max_position')}")
    if "sliding_window" in fam.keys and "sliding_window" in ok and c.sliding_window < 1:
        p.append(f"sliding_window must be at least 1 for {c.family} (its local layers attend within it), got "
                 f"{c.sliding_window}")
    return p


def _global_every(d: dict[str, Any], problems: list[str]) -> int | None:
    """Gemma-3's pattern of local and global layers: layer_types (the list transformers writes), else
    sliding_window_pattern (older configs), else transformers' default 6; None where it is not a repeating one."""
    types = d.get("layer_types")
    if types is None:
        pattern = d.get("sliding_window_pattern", 6)
        if isinstance(pattern, bool) or not isinstance(pattern, int) or pattern < 1:
            problems.append(f"sliding_window_pattern must be a whole number of at least 1, got {short(pattern)}")
            return None
        return pattern
    if not isinstance(types, list) or not all(t in ("full_attention", "sliding_attention") for t in types):
        problems.append("layer_types must be a list of 'full_attention' and 'sliding_attention', got "
                        f"{short(types)}")
        return None
    full = [i for i, t in enumerate(types) if t == "full_attention"]
    every = full[0] + 1 if full else len(types) + 1
    if types != [("full" if (i + 1) % every == 0 else "sliding") + "_attention" for i in range(len(types))]:
        problems.append(f"layer_types: only a repeating pattern (every n-th layer global, the rest sliding) is "
                        f"modelled; layers {full[:6]} are global here")
        return None
    return every


def _divisors_near(n: int, k: int) -> str:
    """The divisors of n nearest to k, below and above, for a message ("2 or 7")."""
    below = max((d for d in range(1, min(k, n) + 1) if n % d == 0), default=1)
    above = next((d for d in range(k + 1, n + 1) if n % d == 0), None)
    return f"{below} or {above}" if above is not None and above != below else str(below)


def from_hf(d: Any, name: str | None = None) -> DecoderConfig:
    """A DecoderConfig from a config.json dict of a decoder family; every problem in one DecoderError naming the key."""
    if not isinstance(d, dict):
        raise DecoderError([f"a config.json must hold a JSON object, got {type(d).__name__}"])
    mt = d.get("model_type")
    if mt not in FAMILIES:
        raise DecoderError([f"model_type must be one of {', '.join(FAMILIES)}, got {short(mt)}"])
    fam: DecoderFamily = FAMILIES[mt]
    problems = refused(d, {**REFUSED, **fam.refused})
    kw: dict[str, Any] = {"family": mt}
    for f, key in fam.keys.items():
        raw = d.get(key, fam.defaults.get(key))
        if raw is None:
            continue  # not set: filled below from what it follows (kv heads, head_dim, I) or missing
        try:
            kw[f] = coerce(key, raw, "bool" if f in _BOOL else "int")
        except ValueError as e:
            problems.append(str(e))
    for f in ("vocab_size", "hidden_dim", "num_layers", "num_heads", "max_position"):
        if f not in kw and not any(fam.keys[f] in s for s in problems):
            problems.append(f"missing field '{fam.keys[f]}'")
    if problems:
        raise DecoderError(problems)
    kw.setdefault("kv_heads", kw["num_heads"])  # num_key_value_heads null: one per query head
    if "head_dim" not in kw:  # not set: hidden / heads, as transformers computes it (floor)
        kw["head_dim"] = kw["hidden_dim"] // kw["num_heads"] if kw["num_heads"] > 0 else 0
    kw.setdefault("intermediate_dim", 4 * kw["hidden_dim"])  # GPT-2's n_inner null: 4·H
    types = d.get("layer_types")
    if fam.local_layers and isinstance(types, list) and isinstance(kw.get("num_layers"), int) \
            and len(types) != kw["num_layers"]:
        problems.append(f"layer_types lists {len(types)} layers, num_hidden_layers says {kw['num_layers']}: "
                        "give one type per layer")
    if fam.local_layers:
        every = _global_every(d, problems)
        if every is not None and isinstance(kw.get("num_layers"), int):
            kw["global_every"] = min(every, kw["num_layers"] + 1)  # past the last layer: none global, one way to say it
    if problems:
        raise DecoderError(problems)
    raw_name = name if name is not None else d.get("_name_or_path") or mt
    kw["name"] = str(raw_name)[-80:] or mt
    return DecoderConfig(**kw)
