"""The memory this server really has, as the kernel counts it: free under its memory cgroup's limit (v2, then v1,
the tightest on the way up; inactive file pages, which the kernel reclaims first, counted free), else the machine's
MemAvailable, less a reserve; and a process's resident bytes. Linux /proc and /sys; no torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .limits import status_bytes

MIB = 1 << 20


def _rss_of(pid: int) -> int:
    """VmRSS of a process (0 once it is gone, or off Linux)."""
    return status_bytes("VmRSS", pid)


NO_LIMIT = 1 << 60  # cgroup v1 writes 9223372036854771712 (PAGE_COUNTER_MAX pages) for "no limit"
RESERVE_BYTES = 64 * MIB  # left to the server while a build runs (its own growth, the page cache it needs)


def _read_int(path: Path) -> int | None:
    try:
        raw = path.read_text().strip()
    except OSError:
        return None
    return None if raw in ("", "max") else int(raw) if raw.isdigit() else None


CGROUP_ROOT = Path("/sys/fs/cgroup")  # where the kernel mounts the cgroup file systems
PROC_CGROUP = Path("/proc/self/cgroup")  # this process's cgroup in each hierarchy


@dataclass(frozen=True)
class CgroupMemory:
    """One memory cgroup on the way up from this process: its limit, its usage as its files say, and the part of
    that usage the kernel takes back before it kills anything (inactive file pages)."""

    path: Path
    limit: int
    usage: int  # v2 memory.current, v1 memory.usage_in_bytes: anonymous memory and the page cache charged to it
    inactive_file: int  # v2 memory.stat inactive_file, v1 total_inactive_file (this cgroup and those below it)
    active_file: int  # reported, not counted free (module docstring)

    @property
    def free(self) -> int:
        """The limit less the working set (usage less inactive file pages), as Kubernetes and Docker count it."""
        return max(0, self.limit - max(0, self.usage - self.inactive_file))


def _cgroup_dirs(root: Path, membership: Path) -> list[tuple[Path, str, str, str, str]]:
    """(directory, its top, limit file, usage file, inactive-file key in memory.stat) of this process's memory
    cgroup, v2 then v1."""
    out: list[tuple[Path, str, str, str, str]] = []
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        hier, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if hier == "0" and controllers == "":  # cgroup v2: memory.max, memory.current
            for top in (root, root / "unified"):  # unified alone, or beside v1's hierarchies (hybrid); a missing
                # file reads as no limit (cgroup_limits)
                out.append((top / path.lstrip("/"), str(top), "memory.max", "memory.current", "inactive_file"))
        elif "memory" in controllers.split(","):  # cgroup v1
            top = root / "memory"
            out.append((top / path.lstrip("/"), str(top), "memory.limit_in_bytes", "memory.usage_in_bytes",
                        "total_inactive_file"))
    return out


def _stat(path: Path) -> dict[str, int]:
    try:
        return {k: int(v) for k, v in (line.split() for line in path.read_text().splitlines() if " " in line)}
    except (OSError, ValueError):
        return {}


def cgroup_limits(root: Path | None = None, membership: Path | None = None) -> list[CgroupMemory]:
    """Every memory cgroup with a limit from this process's up to the top (v2, then v1). root: where the cgroup file
    systems are mounted; membership: the /proc/PID/cgroup that names the process's cgroups (tests give both)."""
    out: list[CgroupMemory] = []
    for d, top, limit_file, usage_file, inactive_key in _cgroup_dirs(root or CGROUP_ROOT, membership or PROC_CGROUP):
        while True:
            limit, usage = _read_int(d / limit_file), _read_int(d / usage_file)
            if limit is not None and limit < NO_LIMIT and usage is not None:
                stat = _stat(d / "memory.stat")
                active_key = inactive_key.replace("inactive", "active")
                out.append(CgroupMemory(d, limit, usage, stat.get(inactive_key, 0), stat.get(active_key, 0)))
            if d.parent == d or str(d) == top or not str(d).startswith(top):
                break
            d = d.parent
    return out


def cgroup_free_bytes(root: Path | None = None, membership: Path | None = None) -> int | None:
    """Bytes left under this process's memory cgroup limit (the tightest on the way up), None without a limit.

    Free is the limit less the working set: the usage file counts the page cache charged to the cgroup (the files
    of torch and transformers read by the first import: 489 MiB of a 1 GiB cgroup's 930 MiB "used" on a fresh
    deploy, issue 52), and the kernel reclaims its inactive part before it OOM-kills anything (mm/vmscan.c;
    Kubernetes' working set is usage less total_inactive_file for this reason). Active file pages are not
    counted free: they are the pages in use now (the mapped code of torch in the warm process among them), which
    the kernel keeps until they have aged into the inactive list, and taking them would thrash."""
    frees = [c.free for c in cgroup_limits(root, membership)]
    return min(frees) if frees else None


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
