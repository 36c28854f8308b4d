"""The memory this server really has: free under its memory cgroup's limit (v2, then v1, the tightest on the way
up), else the machine's MemAvailable, less a reserve; and a process's resident bytes. Linux /proc and /sys; no torch.
"""

from __future__ import annotations

from pathlib import Path

MIB = 1 << 20


def _rss_of(pid: int) -> int:
    """VmRSS of a process (0 once it is gone, or off Linux)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    return 0


NO_LIMIT = 1 << 60  # cgroup v1 writes 9223372036854771712 (PAGE_COUNTER_MAX pages) for "no limit"
RESERVE_BYTES = 64 * MIB  # left to the server while a build runs (its own growth, the page cache it needs)


def _read_int(path: Path) -> int | None:
    try:
        raw = path.read_text().strip()
    except OSError:
        return None
    return None if raw in ("", "max") else int(raw) if raw.isdigit() else None


def _cgroup_dirs() -> list[tuple[Path, str, str]]:
    """(directory, limit file, usage file) of this process's memory cgroup, v2 then v1."""
    out: list[tuple[Path, str, str]] = []
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        hier, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if hier == "0" and controllers == "":  # cgroup v2: memory.max, memory.current
            out.append((Path("/sys/fs/cgroup") / path.lstrip("/"), "memory.max", "memory.current"))
        elif "memory" in controllers.split(","):  # cgroup v1
            out.append((Path("/sys/fs/cgroup/memory") / path.lstrip("/"), "memory.limit_in_bytes",
                        "memory.usage_in_bytes"))
    return out


def cgroup_free_bytes() -> int | None:
    """Bytes left under this process's memory cgroup limit (the tightest on the way up), None without a limit."""
    free: int | None = None
    for d, limit_file, usage_file in _cgroup_dirs():
        while True:
            limit, usage = _read_int(d / limit_file), _read_int(d / usage_file)
            if limit is not None and limit < NO_LIMIT and usage is not None:
                free = min(free if free is not None else limit, max(0, limit - usage))
            if d.parent == d or d in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/memory")):
                break
            d = d.parent
    return free


def available_bytes() -> int:
    """The memory a build may use now: free under the cgroup limit, else the machine's MemAvailable, less a reserve."""
    free = cgroup_free_bytes()
    if free is None:
        try:
            for line in Path("/proc/meminfo").read_text().splitlines():
                if line.startswith("MemAvailable:"):
                    free = int(line.split()[1]) * 1024  # kB
        except OSError:
            free = None
    if free is None:
        free = 700 * MIB  # no /proc (not Linux): the 1 GB deployment's share
    return max(0, free - RESERVE_BYTES)
