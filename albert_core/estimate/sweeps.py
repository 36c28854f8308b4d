"""Parameter counts over many configs at once: tidy DataFrames for charts and tables.

`sweep(base, field, values)` varies one ModelConfig field, `grid(base, **fields)` several (every
combination); `sharing_sweep` compares the sharing modes and `embedding_sweep` ALBERT's factorized
embedding. Integer fields are counted with numpy, vectorized (10,000 configs in a few ms), with the
same formulas as albert_core.estimate.params.parameter_groups; a test checks every row against
count_parameters. Exact: int64 only when the largest possible count stays below 2**62, else
Python ints in object columns. A combination that is not a valid config (e.g. num_heads not
dividing a swept hidden_dim) is kept as a row with valid=False, the reason in `error` and no
counts, so a chart can show the gap instead of the whole sweep failing. For family "bert",
sweeping hidden_dim (without embedding_dim) moves embedding_dim with it, as BERT has no separate E.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

from ..config import (
    _INT_FIELDS,
    FAMILIES,
    FIELD_DEFAULTS,
    FIELD_NAMES,
    HIDDEN_ACTS,
    MAX_NAME_LEN,
    SHARING_MODES,
    ModelConfig,
    coerce_field,
    int_ranges,
    validate,
)
from ..families import family, family_fields, own_fields
from ..families.base import Heads, validate_arrays
from .params import albert_twin, count_parameters

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

# config.validate's bounds per whole-number field: (lowest, highest, whether -1 means "not set"), the common ones,
# then each family's own
_BOUNDS = int_ranges()
_CHOICES = {f: o.choices for f, o in own_fields().items() if o.choices}  # the families' own text fields
INT64_SAFE = 1 << 62  # counts at or above this switch to exact Python ints
COUNT_COLUMNS = ("embedding", "per_layer", "all_layers", "pooler", "heads", "total")
PCT_COLUMNS = ("embedding_pct", "layers_pct")


def sweep(base: ModelConfig, field: str, values: Iterable[Any], *, heads: bool = False) -> pd.DataFrame:
    """One row per value of `field` (others as in `base`): the field, valid, error, the ParameterCount fields."""
    return grid(base, heads=heads, **{field: values})


def grid(base: ModelConfig, *, heads: bool = False, **fields: Iterable[Any]) -> pd.DataFrame:
    """One row per combination of the given field values (the first field varies slowest)."""
    import pandas as pd

    if not fields:
        raise ValueError("give at least one field to sweep, e.g. hidden_dim=[256, 512, 768]")
    for f in fields:
        if f not in FIELD_NAMES:
            raise ValueError(f"unknown field '{f}': choose one of {', '.join(FIELD_NAMES)}")
    numeric = [f for f in fields if f in _INT_FIELDS]  # vectorized
    other = [f for f in fields if f not in _INT_FIELDS]  # text and float fields: few values, an outer loop
    cols = {f: _coerced(f, fields[f]) for f in numeric}
    other_vals = [_coerced(f, fields[f]) for f in other]
    frames = []
    for combo in itertools.product(*(zip(*ov, strict=True) for ov in other_vals)):
        scalars = {f: v for f, (v, _, _) in zip(other, combo, strict=True)}
        shown = {f: s for f, (_, s, _) in zip(other, combo, strict=True)}
        errors = [e for _, _, e in combo if e]
        if errors:  # a text/float value that is not even of the right type: report it, count nothing
            scalars = {}
        frames.append(_block(base.to_dict() | scalars, shown, errors, numeric, cols, heads))
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return df[["name", *fields, "valid", "error", *COUNT_COLUMNS, *PCT_COLUMNS]]


def _coerced(field: str, values: Iterable[Any]) -> tuple[list | np.ndarray, list | np.ndarray, list | None]:
    """(values to compute with, values to show, per-value coercion error or None) for one field."""
    import numpy as np

    arr = values if isinstance(values, np.ndarray) else None
    if arr is None and isinstance(values, range):
        arr = np.arange(values.start, values.stop, values.step, dtype=np.int64) if len(values) else None
    if field in _INT_FIELDS and arr is not None and arr.dtype.kind == "i" and arr.ndim == 1:
        return arr, arr, None  # the fast path: already whole numbers
    vals = list(arr.tolist() if arr is not None else values)
    if not vals:
        raise ValueError(f"no values given for {field}")
    out, errs = [], []
    for v in vals:
        try:
            out.append(coerce_field(field, v))
            errs.append(None)
        except ValueError as e:
            out.append(1 if field in _INT_FIELDS else v)  # placeholder; the row is invalid
            errs.append(str(e))
    if field in _INT_FIELDS:
        return np.array(out, dtype=object), np.array(vals, dtype=object), errs
    return out, vals, errs


def _in_range(f: str, x: Any) -> Any:
    """config.validate's range of whole-number field f, on a number or a numpy array of them."""
    lo, hi, unset = _BOUNDS[f]
    ok = (x >= lo) & (x <= hi)
    return (ok | (x == -1)) if unset else ok


def _valid(v: dict[str, Any]) -> Any:
    """config.validate's rules, vectorized over the numpy arrays in v (scalars broadcast)."""
    import numpy as np

    ok = np.bool_(True)
    for f in _BOUNDS:
        ok = ok & _in_range(f, v[f])
    for f in ("dropout", "attention_dropout"):
        ok = ok & bool(0.0 <= v[f] < 1.0)
    ok = ok & bool(v["family"] in FAMILIES and v["sharing"] in SHARING_MODES and v["hidden_act"] in HIDDEN_ACTS)
    ok = ok & bool(len(v["name"]) <= MAX_NAME_LEN and v["name"].strip())
    ok = ok & bool(all(v[f] in choices for f, choices in _CHOICES.items()))
    return ok


def _block(d: dict[str, Any], shown: dict[str, Any], errors: list[str], numeric: list[str], cols: dict,
           heads: bool) -> pd.DataFrame:
    """Rows for one combination of the text/float fields; every numeric combination vectorized."""
    import numpy as np
    import pandas as pd

    sizes = [len(cols[f][0]) for f in numeric]
    idx = np.indices(sizes).reshape(len(numeric), -1) if numeric else np.zeros((0, 1), dtype=np.int64)
    n = idx.shape[1]
    raw = {f: cols[f][0][idx[i]] for i, f in enumerate(numeric)}  # coerced values, object or int64
    if not _own_width(d) and "hidden_dim" in raw and "embedding_dim" not in raw:
        raw["embedding_dim"] = raw["hidden_dim"]  # BERT-like families have no separate E: their embeddings are H wide
    ok = np.full(n, not errors)
    for i, f in enumerate(numeric):
        if cols[f][2] is not None:
            ok &= ~np.array([e is not None for e in cols[f][2]])[idx[i]]
    ok &= np.broadcast_to(_valid(d), (n,))  # text and float fields, and the fields not swept
    # config.validate's rules, vectorized: ranges per field, then the cross-field rules
    range_ok = {f: np.asarray(_in_range(f, raw[f]), dtype=bool) for f in raw}
    safe = {f: np.where(range_ok[f], raw[f], 1).astype(np.int64) for f in raw}  # in range: fits int64
    v = {**d, **safe}
    rules = {"heads": v["hidden_dim"] % v["num_heads"] == 0}
    if not _own_width(d):
        rules["bert"] = v["embedding_dim"] == v["hidden_dim"]
    if d["family"] in FAMILIES:
        rules["family"] = _family_rule(v, d)
    if d["sharing"] != "none":
        rules["groups"] = (v["num_groups"] <= v["num_layers"]) & (v["num_layers"] % v["num_groups"] == 0)
    for good in (*range_ok.values(), *rules.values()):
        ok &= np.broadcast_to(good, (n,))
    v = {**d, **{f: np.where(ok, safe[f], 1) for f in raw}}
    # exact: int64 unless the count at every field's largest value (all terms grow with every field) reaches 2**62
    top = {**d, **{f: int(v[f].max()) for f in raw}}
    big = _total(top, d, heads)["total"] >= INT64_SAFE
    if big:
        v = {**d, **{f: v[f].astype(object) for f in raw}}
    counts = _total(v, d, heads)
    out: dict[str, Any] = {"name": d["name"]}
    for i, f in enumerate(numeric):
        out[f] = cols[f][1][idx[i]]
    for f, shown_value in shown.items():
        out[f] = shown_value
    out["valid"] = ok
    err = np.full(n, None, dtype=object)
    bad = np.flatnonzero(~ok)
    if len(bad):
        err[bad] = _reasons(d, errors, numeric, cols, idx, raw, _failing(d, raw, range_ok, rules, idx.shape[1]), bad)
    out["error"] = err
    df = pd.DataFrame(out, index=pd.RangeIndex(n))
    for c in COUNT_COLUMNS:
        a = np.broadcast_to(np.asarray(counts[c], dtype=object if big else np.int64), (n,))
        if big:
            df[c] = pd.Series(np.where(ok, a, None), dtype=object)
        else:
            df[c] = pd.arrays.IntegerArray(np.ascontiguousarray(a), ~ok)
    tot = np.broadcast_to(np.asarray(counts["total"], dtype=object if big else np.int64), (n,)).astype(float)
    for c, part in (("embedding_pct", "embedding"), ("layers_pct", "all_layers")):
        p = np.broadcast_to(np.asarray(counts[part], dtype=object if big else np.int64), (n,)).astype(float)
        df[c] = np.where(ok, 100 * p / tot, np.nan)
    return df


# fields tied by a cross-field rule of config.validate: heads divide hidden; bert E == H; groups divide layers
_LINKED = (("hidden_dim", "num_heads", "embedding_dim"), ("num_groups", "num_layers"),
           ("vocab_size", "position_offset"))
_FAMILY_RULE_FIELDS = ("type_vocab_size", "vocab_size", *(f for f, o in own_fields().items() if o.lo is not None))
_RULE_FIELDS = {"heads": _LINKED[0], "bert": _LINKED[0], "groups": _LINKED[1], "family": _FAMILY_RULE_FIELDS}


def _own_width(d: dict[str, Any]) -> bool:
    """Whether d's family lets embedding_dim differ from hidden_dim (an unknown family: as BERT)."""
    return d["family"] in FAMILIES and family(d["family"]).OWN_EMBEDDING_WIDTH


def _family_rule(v: dict[str, Any], d: dict[str, Any]) -> Any:
    """config._family_problems and the family validators, vectorized: segment table, other families' fields
    at their defaults, RoBERTa's 1 <= position_offset <= vocab_size, -1 or >= 1 for DeBERTa's spans."""
    fam = family(d["family"])
    T = v["type_vocab_size"]
    ok = (T >= 1) if fam.SEGMENT_TABLE else (T == 0) if fam.SEGMENT_TABLE is False else (T >= 0)
    for f, owners in family_fields().items():
        if d["family"] not in owners and f in _BOUNDS:
            ok = ok & (v[f] == FIELD_DEFAULTS[f])
    own = validate_arrays(fam)  # the family's own rules (RoBERTa's position_offset, MPNet's buckets)
    return ok if own is None else ok & own(v)


def _failing(d: dict[str, Any], raw: dict, range_ok: dict, rules: dict, n: int) -> dict[str, Any]:
    """Swept field -> the rows (a boolean array of n) where it fails a range check or shares a failing rule, with
    everything it is linked to, and all fields of a rule the base alone breaks."""
    import numpy as np

    fails = {f: ~np.broadcast_to(range_ok[f], (n,)) for f in raw}
    for rule, good in rules.items():
        bad_rule = ~np.broadcast_to(good, (n,))
        for f in _RULE_FIELDS[rule]:
            if f in raw:
                fails[f] = fails[f] | bad_rule
    # a rule the base itself breaks (e.g. family "bert" swept in with E != H) must see the row's own values
    base_breaks = {"heads": d["hidden_dim"] % d["num_heads"] != 0,
                   "bert": not _own_width(d) and d["embedding_dim"] != d["hidden_dim"],
                   "family": d["family"] in FAMILIES and not bool(_family_rule(d, d)),
                   "groups": d["sharing"] != "none" and not (d["num_groups"] <= d["num_layers"]
                                                             and d["num_layers"] % d["num_groups"] == 0)}
    for rule, broken in base_breaks.items():
        for f in _RULE_FIELDS[rule]:
            if broken and f in raw:
                fails[f] = np.ones(n, dtype=bool)
    for group in _LINKED:  # a failing field drags in the swept fields linked to it
        members = [f for f in group if f in raw]
        any_bad = np.zeros(n, dtype=bool)
        for f in members:
            any_bad |= fails[f]
        for f in members:
            fails[f] = any_bad
    return fails


def _reasons(d: dict[str, Any], errors: list[str], numeric: list[str], cols: dict, idx: Any, raw: dict,
             fails: dict[str, Any], rows: Any) -> list[str]:
    """config.validate's message for each invalid row, computed once per distinct cause.

    A row's message depends only on the swept fields that fail (`fails`, _failing's); validate of the base with
    just those fields set gives the same problems, so rows with the same such values share one validate call.
    """
    coerce_err = [(i, f) for i, f in enumerate(numeric) if cols[f][2] is not None]
    memo: dict[tuple, str] = {}
    out = []
    for j in rows:
        msgs = list(errors)
        for i, f in coerce_err:
            e = cols[f][2][idx[i][j]]
            if e:
                msgs.append(e)
        if msgs:
            out.append("; ".join(msgs))
            continue
        key = tuple((f, _py(raw[f][j])) for f in raw if fails[f][j])
        if key not in memo:  # the base's fields with the row's failing values: a ModelConfig's fields, unchecked
            memo[key] = "; ".join(validate(cast(ModelConfig, SimpleNamespace(**{**d, **dict(key)}))))
        out.append(memo[key])
    return out


def _py(x: Any) -> Any:
    return x.item() if hasattr(x, "item") else x


def _total(v: dict[str, Any], d: dict[str, Any], heads: bool) -> dict[str, Any]:
    """The ParameterCount fields from (array or scalar) field values: the family's closed form (sizes)."""
    L, G, K = v["num_layers"], v["num_groups"], v["inner_group_num"]
    sharing = d["sharing"]
    n_att = (G if sharing in ("all", "attention") else L) * K  # params.stored_copies
    n_ffn = (G if sharing in ("all", "ffn") else L) * K
    name = d["family"] if d["family"] in FAMILIES else "bert"  # an invalid family's rows are masked anyway
    fam = family(name)
    # the closed forms are plain arithmetic (families.base.Family): numpy arrays of field values stand in for
    # a ModelConfig's ints, and the four counts come back as arrays (or ints, broadcast by the caller)
    fields = cast(ModelConfig, SimpleNamespace(**v))
    emb, per_layer, all_layers, pooler = fam.sizes(fields, n_att, n_ffn)
    head = 0 * v["hidden_dim"]
    if heads:
        if fam.HEADS is not None or not isinstance(fam, Heads):
            raise ValueError(f"heads: for family '{name}', {fam.HEADS}")
        head = fam.heads_size(fields)
    return {"embedding": emb, "per_layer": per_layer, "all_layers": all_layers, "pooler": pooler,
            "heads": head, "total": emb + all_layers + pooler + head}


def scaled(cfg: ModelConfig, field: str, value: int) -> ModelConfig:
    """cfg with `field` = value and the fields that move with it, for the share-vs-size charts.

    Growing hidden_dim keeps the FFN ratio I/H and the head width H/A (else the head count),
    and BERT's E tracks H; changing num_layers drops uneven groups to one group.
    Raises ConfigError when the result is still invalid.
    """
    ch: dict[str, Any] = {field: value}
    if field == "hidden_dim":
        ch["intermediate_dim"] = max(1, value * cfg.intermediate_dim // cfg.hidden_dim)
        heads = max(1, value // cfg.head_dim)
        ch["num_heads"] = heads if value % heads == 0 else cfg.num_heads
        if not family(cfg.family).OWN_EMBEDDING_WIDTH:
            ch["embedding_dim"] = value
    if field == "num_layers" and cfg.sharing != "none" and value % cfg.num_groups:
        ch["num_groups"] = 1
    return cfg.replace(**ch)


def sharing_sweep(base: ModelConfig, num_groups: Iterable[int] | None = None, *, heads: bool = False) -> pd.DataFrame:
    """Every sharing mode (× num_groups when given), with what each saves against no sharing."""
    groups = list(num_groups) if num_groups is not None else [base.num_groups]
    df = grid(base, heads=heads, sharing=list(SHARING_MODES), num_groups=groups)
    unshared = count_parameters(base.replace(sharing="none", num_groups=1), heads=heads).total
    return _with_savings(df, unshared, "saved_vs_none")


def embedding_sweep(base: ModelConfig, values: Iterable[int], *, heads: bool = False) -> pd.DataFrame:
    """ALBERT's factorized embedding at each E against BERT's unfactorized V×H table (ALBERT Sec. 3.1).

    factorization_savings = embedding of the same config as BERT (E = H) − embedding at E; negative
    when E = H, where the E→H projection is pure cost. No values (e.g. every candidate E above a
    tiny hidden_dim): an empty table with the same columns, for the page to say so, not an error.
    """
    albert = albert_twin(base)  # ALBERT with base's sizes (any family)
    values = list(values)
    df = sweep(albert, "embedding_dim", values or [albert.embedding_dim], heads=heads).iloc[:len(values)]
    unfactorized = count_parameters(albert.replace(family="bert", embedding_dim=albert.hidden_dim)).embedding
    df["unfactorized_embedding"] = unfactorized
    df = _with_savings(df, unfactorized, "factorization_savings", column="embedding")
    return df


def _with_savings(df: pd.DataFrame, reference: int, name: str, column: str = "total") -> pd.DataFrame:
    """Add reference − df[column] (exact, object column; missing for invalid rows) and its share of reference."""
    import pandas as pd

    saved = [reference - int(x) if ok else None for x, ok in zip(df[column], df["valid"], strict=True)]
    df[name] = pd.Series(saved, dtype=object, index=df.index)
    df[name.replace("saved_vs_none", "saved") + "_pct"] = [
        100 * s / reference if s is not None else float("nan") for s in saved]
    return df
