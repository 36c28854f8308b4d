"""A raw value (JSON, config.json or query-string text) turned into a field's type, and a bad one shown short.

No albert_core imports: config.py (ModelConfig's validation) and the family modules (their config.json keys and their
own fields' bounds) both read it.
"""

from __future__ import annotations

import math
import re
from typing import Literal

Kind = Literal["int", "float", "bool", "str"]  # the types of ModelConfig's fields

# upper bounds that keep every count a sane integer; far beyond any real model (config.validate, the families' own
# fields, the sweeps and the sidebar read them)
MAX_DIM = 1 << 20  # 1,048,576 for any width
MAX_VOCAB = 1 << 30
MAX_LAYERS = 100_000

_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")  # text a link or form may hold
_WHOLE = re.compile(r"^\s*[+-]?[0-9]+\s*$")  # ASCII digits only ("+-5", "²" are not numbers)


def coerce(name: str, value: object, kind: Kind) -> int | float | bool | str:
    """value as field `name` of type `kind`, or ValueError naming the field and what it must be."""
    if kind == "int":
        return _whole(name, value)
    if kind == "float":
        return _fraction(name, value)
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            return value.strip().lower() in _TRUE
        raise ValueError(f"{name} must be true or false (1 or 0), got {short(value)}")
    if not isinstance(value, str):
        raise ValueError(f"{name} must be text, got {short(value)}")
    return value


def _whole(name: str, value: object) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _WHOLE.match(value) and len(value) < 20:
        return int(value.strip())
    raise ValueError(f"{name} must be a whole number, got {short(value)}")


def _fraction(name: str, value: object) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number between 0 and 1, got {value!r}")
    try:
        x = float(value) if isinstance(value, (int, float, str)) and len(str(value)) < 40 else None
    except ValueError:
        x = None
    if x is None or not math.isfinite(x):
        raise ValueError(f"{name} must be a number between 0 and 1, got {short(value)}")
    return x


def short(value: object) -> str:
    """repr(value), cut to 40 characters; an absurdly long int as its order of magnitude."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return num(value)  # repr of an int over 4,300 digits raises ValueError
    s = repr(value)
    return s if len(s) <= 40 else s[:37] + "..."


def num(v: int) -> str:
    """v with thousands separators, or its order of magnitude when it is absurdly long."""
    if v.bit_length() <= 256:
        return f"{v:,}"
    return f"a {'negative ' if v < 0 else ''}number of about {int(v.bit_length() * math.log10(2)) + 1:,} digits"
