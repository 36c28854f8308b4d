"""Numbers for people: 109.5M parameters, 1.42 GiB, 22.4 TFLOPs. Exact ints in, text out."""

from __future__ import annotations

_COUNT_UNITS = ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K"))
_BYTE_UNITS = ((1 << 50, "PiB"), (1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))
_FLOP_UNITS = ((10**18, "EFLOPs"), (10**15, "PFLOPs"), (10**12, "TFLOPs"), (10**9, "GFLOPs"), (10**6, "MFLOPs"))

GIB = 1 << 30


def _scaled(n: int | float, units: tuple[tuple[int, str], ...], digits: int, base: str, sep: str) -> str:
    """n in the largest unit it reaches, with thousands separators; a value that would read 1,000 or more of a
    unit (1,010.59 MiB: binary units are 1,024 apart) is given in the next one up (0.99 GiB)."""
    for i, (scale, unit) in enumerate(units):
        if abs(n) >= scale:
            if i and abs(round(n / scale, digits)) >= 1000:
                scale, unit = units[i - 1]
            return f"{n / scale:,.{digits}f}{sep}{unit}"
    return f"{n:,.0f}{sep}{base}".rstrip() if isinstance(n, int) or float(n).is_integer() else f"{n:.{digits}f}{sep}{base}"


def format_count(n: int | float, digits: int = 1) -> str:
    """109482240 -> '109.5M'; 950 -> '950'."""
    return _scaled(n, _COUNT_UNITS, digits, "", "")


def format_bytes(n: int | float, digits: int = 2) -> str:
    """Binary units: 1524629504 -> '1.42 GiB'; 512 -> '512 B'."""
    return _scaled(n, _BYTE_UNITS, digits, "B", " ")


def format_flops(n: int | float, digits: int = 1) -> str:
    """22_400_000_000_000 -> '22.4 TFLOPs'."""
    return _scaled(n, _FLOP_UNITS, digits, "FLOPs", " ")
