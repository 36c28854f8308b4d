"""albert_core.units: numbers for people, as the app, the CLI and the report write them."""

from __future__ import annotations

import pytest

from albert_core.units import format_bytes, format_count, format_flops


@pytest.mark.parametrize(("n", "text"), [
    (512, "512 B"), (1000, "1,000 B"), (1024, "1.00 KiB"), (1_524_629_504, "1.42 GiB"),
    (999 * 2**20, "999.00 MiB"),
    (1_059_682_222, "0.99 GiB"),  # 1,010.59 MiB: binary units are 1,024 apart, so it is read in the next one up
    (2**30 - 1, "1.00 GiB"),  # 1,024.00 MiB rounded: the next unit up too
    (-26_864_000, "-25.62 MiB"), (5 * 2**60, "5,120.00 PiB"),  # past the largest unit: thousands separated
])
def test_bytes(n, text):
    assert format_bytes(n) == text


@pytest.mark.parametrize(("n", "text"), [(950, "950"), (109_482_240, "109.5M"), (999_960, "1.0M"),
                                         (12 * 10**15, "12,000.0T")])
def test_counts(n, text):
    assert format_count(n) == text


@pytest.mark.parametrize(("n", "text"), [(22_400_000_000_000, "22.4 TFLOPs"), (1_646_600 * 10**15, "1,646.6 EFLOPs"),
                                         (999_960_000_000, "1.0 TFLOPs")])
def test_flops(n, text):
    assert format_flops(n) == text


def test_exact_on_huge_ints():
    """A count past float's 2**53 is still scaled (the text rounds; the app shows the exact int beside it)."""
    assert format_count(2**70) == f"{2**70 / 10**12:,.1f}T"


def test_a_side_by_side_change_has_one_minus_sign_and_reads_in_the_next_unit_up():
    from ui.comparison import cell

    assert cell("bytes", 1_740_000_000, 1_059_682_222, 1.55) == "1.62 GiB  (+0.99 GiB, +155%)"
    # a probability as the sidebar's field shows it ("%.4g"): 0 and 0.1, not 0.0; every digit kept
    assert [cell("", v, 0, None) for v in (0.0, 0.1, 1e-12, 0.123456789)] == ["0", "0.1", "1e-12", "0.123456789"]
    assert cell("bytes", 662_000_000, -26_864_000, -0.039) == "631.33 MiB  (−25.62 MiB, −3.9%)"
