"""The measurement process itself: its resident memory (now and at its peak), its memory cap, its place first in
line for the OOM killer, its death with its parent, and torch's threads started before the cap. Linux /proc and
prctl; torch imported only by _start_threads.
"""

from __future__ import annotations

import os

MIB = 1 << 20


def status_bytes(field: str, pid: int | str = "self") -> int:
    """A size from /proc/PID/status ("VmRSS", "VmHWM", "VmData": kB there) in bytes; 0 once the process is gone,
    or off Linux."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    return 0


def _peak_rss() -> int:
    """This process's peak resident bytes (VmHWM).

    Not getrusage's ru_maxrss: Linux carries the parent's high-water mark across fork and exec
    (setmax_mm_hiwater_rss in fs/exec.c), so a child of a 700 MiB process would report 700 MiB.
    """
    return status_bytes("VmHWM")


def _rss() -> int:
    """Resident bytes of this process now (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def _start_threads() -> None:
    """Start torch's OpenMP threads before the cap: libgomp starts them at the first parallel op, and past the cap
    their stacks cannot be mapped, so it ends the process ("libgomp: Thread creation failed", exit code 1) with
    no result to report, where an allocation past it gives the out-of-memory message."""
    import torch

    torch.ones(1 << 18).sum()  # a parallel reduction (at::parallel_reduce): every intra-op thread starts


def data_cap(resident_cap: int) -> int:
    """RLIMIT_DATA's value for a cap of resident_cap bytes: the cap itself, or, where the process holds more private
    virtual memory than is resident, its data size now plus what it may still grow by (resident_cap less its
    resident bytes now), whichever is larger. RLIMIT_DATA counts virtual private writable memory, which PyTorch's CUDA
    build reserves far past what is resident (VmData 895 MiB at 693 MiB resident after its imports, against 343 at
    340 for the CPU build, 2026-12-07): a cap of 868 MiB taken as the data limit left it no room at all ("Resource
    temporarily unavailable" at the first thread or allocation). With the CPU build the cap is what it always was."""
    data = status_bytes("VmData")  # private writable virtual memory: what RLIMIT_DATA counts
    return max(resident_cap, data + resident_cap - _rss()) if data else resident_cap


def _limit_memory(limit_bytes: int) -> None:
    """Cap this process's growth at limit_bytes resident (RLIMIT_DATA, Linux >= 4.7, on private writable memory:
    heap and anonymous maps; data_cap translates).

    Past the cap an allocation fails (a MemoryError or torch's "can't allocate memory"), never the server.
    """
    import resource

    cap = data_cap(limit_bytes)
    resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))


def _first_to_go() -> None:
    """Make this process the one the kernel's OOM killer picks first (oom_score_adj 1000), never the server."""
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass


def _die_with_parent() -> None:
    """Ask Linux to kill this process when the thread that started it ends (prctl PR_SET_PDEATHSIG)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass
