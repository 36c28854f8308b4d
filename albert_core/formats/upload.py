"""Read an uploaded config.json: bytes -> ModelConfig, or a message saying what is wrong. No streamlit here.

Only `json.loads` parses (never pickle, eval or a YAML loader). The size is capped before parsing; the
literals NaN/Infinity that Python's json accepts but JSON forbids are refused, and so are keys given twice
(json.loads would keep the last one silently); nesting too deep for the parser is explained, not raised.
"""

from __future__ import annotations

import json
from typing import Any

from ..config import ConfigError, ModelConfig
from ..units import format_bytes
from .hf import from_hf_config

MAX_UPLOAD_BYTES = 64 * 1024  # the app's own limit: a config.json is a few hundred bytes to a few kB
# What the browser sends at all, in MB (server.maxUploadSize in .streamlit/config.toml and each uploader's
# max_upload_size): a wrong file up to it (a tokenizer.json, a vocabulary) reaches the app, which says in words
# what it is and what to upload instead; a bigger one (the weights) the browser refuses before sending it, with
# only an icon whose reason shows on hover, so the uploaders say this under them (UPLOAD_NOTE)
UPLOAD_MB = 16
UPLOAD_LABEL = f"a few kB; read up to {MAX_UPLOAD_BYTES // 1024} KiB"
# the box itself says "Limit 16MB per file": the note says why there are two limits (a new user saw both unexplained)
UPLOAD_NOTE = (f"Only the model's config.json, a few kB: the app reads up to {MAX_UPLOAD_BYTES // 1024} KiB. The "
               f"box's {UPLOAD_MB}MB is what the browser sends at all: a wrong file under it (a tokenizer.json) is "
               f"named and explained; one over {UPLOAD_MB} MB (the weights) is refused before it is sent, a red icon "
               "beside it, the reason on hover.")


class _Refused(ValueError):
    """Valid Python json, but not valid JSON or ambiguous (NaN, duplicated keys)."""


def _no_constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number; write a finite number")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for k, v in pairs:
        if k in d:
            raise _Refused(f"key {_short(k)} appears twice in one object; keep one")
        d[k] = v
    return d


def _short(s: str) -> str:
    return repr(s) if len(s) <= 40 else repr(s[:37] + "...")


def load_json(data: bytes) -> Any:
    """JSON text -> Python value; ValueError with a readable reason for anything else."""
    if len(data) > MAX_UPLOAD_BYTES:
        raise ValueError(f"it is {format_bytes(len(data))} ({len(data):,} bytes), and a config.json is a few kB: the "
                         f"app reads at most {MAX_UPLOAD_BYTES // 1024} KiB. This looks like another file of the "
                         "model (weights, tokenizer.json, a vocabulary); upload its config.json")
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark some editors write is dropped
    except UnicodeDecodeError as e:
        raise ValueError(f"it is not valid JSON: not UTF-8 text (byte {e.start}); save it as UTF-8") from None
    try:
        return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)
    except _Refused as e:
        raise ValueError(f"it is not valid JSON: {e}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"it is not valid JSON: {e}") from None
    except RecursionError:
        raise ValueError("it is nested too deeply to be a config.json (a config.json is one flat object)") from None
    except ValueError as e:  # e.g. an integer of more than 4,300 digits (sys.get_int_max_str_digits)
        raise ValueError(f"it is not a usable JSON document: {e}") from None


def parse_upload(name: str, data: bytes) -> ModelConfig | str:
    """The config an uploaded file describes, or one message naming the file and every problem."""
    try:
        d = load_json(data)
    except ValueError as e:
        return f"{name} cannot be read: {e}."
    try:
        if isinstance(d, dict) and "model_type" not in d and "family" in d:  # ours: ModelConfig fields
            return ModelConfig.from_dict(d)  # no "sharing": the family's default (none except albert)
        return from_hf_config(d)
    except ConfigError as e:
        return f"{name} cannot be used: " + "; ".join(e.problems)
    except RecursionError:  # repr of a value nested almost as deep as the parser allows
        return f"{name} cannot be used: a value is nested too deeply (a config.json holds numbers and text)."
