"""A cgroup-v1 memory cgroup under this process's own, with a hard limit: the 1 GiB server of Streamlit Community
Cloud, for bench_server_memory.py and bench_warm.py (as root; swap held to the same limit)."""

from __future__ import annotations

import os
import time
from pathlib import Path

MIB = 1 << 20


class Cgroup:
    def __init__(self, limit_mb: int, tag: str = "bench"):
        own = next(line.split(":", 2)[2].strip() for line in open("/proc/self/cgroup") if ":memory:" in line)
        self.path = Path("/sys/fs/cgroup/memory") / own.lstrip("/") / f"albert_{tag}_{os.getpid()}"
        self.parent = self.path.parent
        self.path.mkdir()
        (self.path / "memory.limit_in_bytes").write_text(str(limit_mb * MIB))
        (self.path / "memory.memsw.limit_in_bytes").write_text(str(limit_mb * MIB))  # no swap beyond it either

    def add(self, pid: int) -> None:
        (self.path / "cgroup.procs").write_text(str(pid))

    def enter(self) -> None:
        """This process (and every child it starts from now) inside the cgroup."""
        self.add(os.getpid())

    def read(self, name: str) -> str:
        return (self.path / name).read_text().strip()

    def report(self) -> str:
        oom = dict(line.split() for line in self.read("memory.oom_control").splitlines())
        return (f"cgroup-v1 {self.path}: limit {int(self.read('memory.limit_in_bytes')) / MIB:,.0f} MiB, peak usage "
                f"{int(self.read('memory.max_usage_in_bytes')) / MIB:,.0f} MiB, failcnt {self.read('memory.failcnt')}, "
                f"oom_kill {oom.get('oom_kill', '?')}")

    def leave(self) -> None:
        """This process back in its own cgroup, then the cgroup removed once its children are gone."""
        (self.parent / "cgroup.procs").write_text(str(os.getpid()))
        deadline = time.monotonic() + 10  # a child killed just now may still be on its way out of it
        while self.read("cgroup.procs") and time.monotonic() < deadline:
            time.sleep(0.1)
        self.remove()

    def remove(self) -> None:
        try:
            self.path.rmdir()
        except OSError as e:
            print(f"(cgroup {self.path} not removed: {e})")


def rss(pid: int | None = None) -> int:
    """A process's resident bytes (VmRSS; this process when pid is None), 0 once it is gone."""
    try:
        with open(f"/proc/{pid or 'self'}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0
