"""Tables for people (exact numbers with separators, plus 109.5M / 1.42 GiB columns) and their CSV downloads."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from albert_core.units import format_bytes, format_count, format_flops

MISSING = "—"  # a value a table does not have (a count the paper does not print)
_FMT = {"count": format_count, "bytes": format_bytes, "flops": format_flops}


def humanize(df: pd.DataFrame, columns: dict[str, str]) -> pd.DataFrame:
    """Add a readable column next to each exact one: {"total": "count"} adds "total (≈)" = "109.5M"."""
    out = df.copy()
    for col, kind in columns.items():
        if col not in out:
            continue
        pos = out.columns.get_loc(col) + 1
        out.insert(pos, f"{col} (≈)", [_FMT[kind](int(v)) if pd.notna(v) else MISSING for v in out[col]])
    return out


def show(df: pd.DataFrame, key: str, *, file_name: str, readable: dict[str, str] | None = None,
         pct: tuple[str, ...] = ()) -> None:
    """st.dataframe of df for people and a CSV download of the exact numbers.

    Columns: the first (the config, pinned) and the shares (as percentages) first, then each readable column
    (109.5M, 1.42 GiB) where its number was, its exact number right after it (at the end, a wide table hid
    them off to the right; the CSV has them too).
    """
    readable = readable or {}
    shown = humanize(df, readable)
    first = list(shown.columns[:1])
    shares = [c for c in pct if c in shown and c not in first]
    exact = [c for c in readable if c in shown]
    rest = []
    for c in shown.columns:
        if c in first + shares + exact:
            continue
        rest.append(c)
        if c.endswith(" (≈)") and c[: -len(" (≈)")] in exact:
            rest.append(c[: -len(" (≈)")])
    shown = shown[first + shares + rest]
    huge = [c for c in shown if shown[c].dtype == object and _beyond_int64(shown[c])]
    for c in huge:  # Arrow (st.dataframe) holds at most int64: the exact digits as text, the CSV as numbers
        shown[c] = [f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else v for v in shown[c]]
    cfg = {c: st.column_config.NumberColumn(c, format="localized") for c in shown if c not in huge and (
           pd.api.types.is_integer_dtype(shown[c]) or shown[c].dtype == object and _all_ints(shown[c]))}
    cfg |= {c: st.column_config.NumberColumn(c, format="localized", help=f"exact value of '{c} (≈)'")
            for c in exact if c not in huge}
    cfg |= {c: st.column_config.NumberColumn(c, format=share_format(shown[c])) for c in shares}
    # the key column (the config) stays in view while a wide table scrolls sideways; Streamlit unpins it where it
    # would take more than 60% of the table's width (a long name on a phone: PINNED_COLUMNS_WIDTH_THRESHOLD)
    cfg |= {c: dict(cfg[c], pinned=True) if c in cfg else st.column_config.Column(c, pinned=True) for c in first}
    with st.container(key=f"{key}-{widths(shown)}"):
        # a missing value (the paper prints no count for Table 13) reads as a dash, as in its readable column, not "None"
        st.dataframe(shown, key=key, hide_index=True, column_config=cfg, placeholder=MISSING)
    csv_button(df, file_name, key=f"{key}_csv")


def widths(df: pd.DataFrame) -> str:
    """The longest text of each column as shown ("223,391,410,176": 15), as the key of the grid's container. The
    grid sizes its columns when it is mounted and keeps those widths on later runs, its own key changed or not:
    after a small model a huge one's right-aligned numbers were cut on the left ("3,391,410,176" for
    223,391,410,176). A container of another key is a new grid, sized for what it holds."""
    def text(v) -> str:
        return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)
    return "-".join(str(max([len(str(c))] + [len(text(v)) for v in df[c]])) for c in df.columns)


def share_format(col: pd.Series) -> str:
    """A share column's format: two decimals, or three significant digits where a share that is not zero would
    read 0.00% (albert-base's token_type_embeddings, 256 parameters, read 0.00%; now 0.00219%)."""
    tiny = any(v == v and v != 0 and abs(v) < 0.005 for v in pd.to_numeric(col, errors="coerce"))
    return "%.3g%%" if tiny else "%.2f%%"


def _beyond_int64(col: pd.Series) -> bool:
    return any(isinstance(v, int) and not -(1 << 63) <= v < (1 << 63) for v in col)


def _all_ints(col: pd.Series) -> bool:
    return len(col) > 0 and all(isinstance(v, int) and not isinstance(v, bool) for v in col)


def csv_button(df: pd.DataFrame, file_name: str, *, key: str) -> None:
    st.download_button(f"Download {file_name}", df.to_csv(index=False).encode(), file_name=file_name,
                       mime="text/csv", key=key, on_click="ignore")
