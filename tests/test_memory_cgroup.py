"""The memory a build may use, read from a cgroup tree's files as the kernel writes them (issue 52): the page cache
charged to a cgroup is in its usage, and its inactive part is free memory (the kernel reclaims it before it kills
anything). Fake trees for cgroup v1 and v2 in tmp_path, named in a fake /proc/self/cgroup."""

from __future__ import annotations

from pathlib import Path

from albert_core.processes import parent_memory as memory

MIB = 1 << 20
V1_UNLIMITED = "9223372036854771712"


def _v1(root: Path, rel: str, limit: str, usage: int, inactive: int, active: int = 0) -> None:
    d = root / "memory" / rel.lstrip("/")
    d.mkdir(parents=True, exist_ok=True)
    (d / "memory.limit_in_bytes").write_text(limit + "\n")
    (d / "memory.usage_in_bytes").write_text(f"{usage}\n")
    # memory.stat as v1 writes it: this cgroup's own counters, then the hierarchical total_ ones
    (d / "memory.stat").write_text(f"cache {inactive + active}\nrss {usage - inactive - active}\n"
                                   f"inactive_file {inactive // 2}\nactive_file {active // 2}\n"
                                   f"total_cache {inactive + active}\ntotal_inactive_file {inactive}\n"
                                   f"total_active_file {active}\n")


def _v2(root: Path, rel: str, limit: str, usage: int, inactive: int, active: int = 0) -> None:
    d = root / rel.lstrip("/")
    d.mkdir(parents=True, exist_ok=True)
    (d / "memory.max").write_text(limit + "\n")
    (d / "memory.current").write_text(f"{usage}\n")
    (d / "memory.stat").write_text(f"anon {usage - inactive - active}\nfile {inactive + active}\n"
                                   f"inactive_anon 0\nactive_anon {usage - inactive - active}\n"
                                   f"inactive_file {inactive}\nactive_file {active}\n")


def _membership(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "proc_self_cgroup"
    p.write_text(text)
    return p


def test_v1_inactive_file_pages_are_free(tmp_path):
    """The fresh deploy of issue 52: 930 MiB used in 1 GiB, 489 MiB of it inactive file pages (torch's files read
    by the first import). The old reading left 94 MiB free; the kernel's is 583 MiB."""
    root = tmp_path / "sys"
    _v1(root, "/", V1_UNLIMITED, 20_000 * MIB, 9_000 * MIB)
    _v1(root, "/app", str(1024 * MIB), 930 * MIB, 489 * MIB, 55 * MIB)
    who = _membership(tmp_path, "4:memory:/app\n0::/\n")
    (cg,) = memory.cgroup_limits(root, who)
    assert (cg.limit, cg.usage, cg.inactive_file, cg.active_file) == (1024 * MIB, 930 * MIB, 489 * MIB, 55 * MIB)
    assert memory.cgroup_free_bytes(root, who) == (1024 - 930 + 489) * MIB  # active file pages stay used


def test_v2_inactive_file_pages_are_free(tmp_path):
    root = tmp_path / "sys"
    _v2(root, "/", "max", 0, 0)
    _v2(root, "/app", str(1024 * MIB), 930 * MIB, 489 * MIB, 55 * MIB)
    who = _membership(tmp_path, "0::/app\n")
    assert memory.cgroup_free_bytes(root, who) == (1024 - 930 + 489) * MIB


def test_the_tightest_cgroup_on_the_way_up_decides(tmp_path):
    """A child with a loose limit under a parent with a tight one: the parent's free memory is what the build has,
    each counted with its own inactive file pages (the parent's total includes the child's)."""
    root = tmp_path / "sys"
    _v1(root, "/pod", str(1024 * MIB), 900 * MIB, 300 * MIB)  # free 424 MiB
    _v1(root, "/pod/app", str(4096 * MIB), 800 * MIB, 250 * MIB)  # free 3,546 MiB
    who = _membership(tmp_path, "4:memory:/pod/app\n")
    assert [c.path.name for c in memory.cgroup_limits(root, who)] == ["app", "pod"]
    assert memory.cgroup_free_bytes(root, who) == 424 * MIB


def test_anonymous_memory_still_refuses(tmp_path):
    """Where the usage is resident memory, not page cache, nothing is counted free that is not: the limit less
    the usage, never below zero."""
    root = tmp_path / "sys"
    _v2(root, "/app", str(1024 * MIB), 1000 * MIB, 10 * MIB)
    who = _membership(tmp_path, "0::/app\n")
    assert memory.cgroup_free_bytes(root, who) == 34 * MIB
    _v2(root, "/app", str(1024 * MIB), 1100 * MIB, 0)  # past its limit for a moment (usage can overshoot)
    assert memory.cgroup_free_bytes(root, who) == 0


def test_no_limit_no_stat_no_cgroup(tmp_path):
    root = tmp_path / "sys"
    _v1(root, "/free", V1_UNLIMITED, 5000 * MIB, 0)
    assert memory.cgroup_free_bytes(root, _membership(tmp_path, "4:memory:/free\n")) is None
    d = root / "memory" / "nostat"  # a limit but no memory.stat: usage as it is (the old reading)
    d.mkdir(parents=True)
    (d / "memory.limit_in_bytes").write_text(str(1024 * MIB))
    (d / "memory.usage_in_bytes").write_text(str(900 * MIB))
    assert memory.cgroup_free_bytes(root, _membership(tmp_path, "4:memory:/nostat\n")) == 124 * MIB
    assert memory.cgroup_free_bytes(root, tmp_path / "absent") is None


def test_available_bytes_takes_the_reserve_off(tmp_path, monkeypatch):
    root = tmp_path / "sys"
    _v1(root, "/app", str(1024 * MIB), 930 * MIB, 489 * MIB)
    monkeypatch.setattr(memory, "CGROUP_ROOT", root)
    monkeypatch.setattr(memory, "PROC_CGROUP", _membership(tmp_path, "4:memory:/app\n"))
    assert memory.available_bytes() == (1024 - 930 + 489) * MIB - memory.RESERVE_BYTES
