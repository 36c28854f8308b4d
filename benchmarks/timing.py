"""Shared by the benchmark scripts: medians of repeated runs, and the machine they ran on."""

from __future__ import annotations

import platform
import statistics
import subprocess
import time
from collections.abc import Callable


def median_seconds(fn: Callable[[], object], repeats: int, *, inner: int = 1,
                   setup: Callable[[], object] | None = None) -> float:
    """Median seconds per call of fn over `repeats` timings of `inner` calls; setup runs untimed before each."""
    fn()  # warm up (imports, caches)
    times = []
    for _ in range(repeats):
        if setup:
            setup()
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - t) / inner)
    return statistics.median(times)


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return platform.processor() or "unknown"


def machine_line() -> str:
    """Date, CPU model, core count and Python version, for the figures recorded in the docs."""
    import os

    return f"{time.strftime('%Y-%m-%d')}  {cpu_model()}  {os.cpu_count()} cores  python {platform.python_version()}"
