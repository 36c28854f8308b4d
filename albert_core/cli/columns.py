"""The command line's tables: columns aligned, a dashed line under the header; a share as a percentage."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..families.base import ParamGroup
from ..units import format_count


def pct(part: int, total: int) -> str:
    return f"{100 * part / total:5.1f}%" if total else "  -  "


def aligned(rows: Sequence[Sequence[str]], right: set[int]) -> list[str]:
    """rows[0] is the header: each column as wide as its widest cell, the columns in `right` aligned right."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for k, r in enumerate(rows):
        lines.append("  ".join(x.rjust(w) if i in right else x.ljust(w) for i, (x, w) in enumerate(zip(r, widths, strict=True))))
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def groups_lines(groups: Iterable[ParamGroup], total: int) -> list[str]:
    """A parameter breakdown by module: shape, copies, params (readable and exact), share of total."""
    rows = [("module", "shape", "copies", "params", "exact", "share")]
    rows += [(g.module, g.shape, str(g.copies), format_count(g.params), f"{g.params:,}", pct(g.params, total))
             for g in groups]
    return aligned(rows, {2, 3, 4, 5})


def part_line(name: str, n: int, total: int) -> str:
    return f"{name:<10} {format_count(n):>8}  {n:>20,}  {pct(n, total)}"
