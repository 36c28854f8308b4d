"""Which PyTorch the app runs (albert_core/engine/torch_build.py, issue 56): read without importing torch, the CUDA
build on a machine without a GPU said with its cost and the way to the CPU build, and the floor under which no build
starts following the build (and, once measured, the warm process's own size)."""

from __future__ import annotations

from pathlib import Path

import pytest

from albert_core.engine import torch_build
from albert_core.engine.torch_build import MIB, TorchBuild
from albert_core.engine.types import Request
from albert_core.processes import parent_plan
from albert_core.workload import Workload

VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '{version}'
debug = False
cuda: Optional[str] = {cuda}
git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'
hip: Optional[str] = None
"""
CUDA = TorchBuild("2.13.0+cu130", "13.0")
CPU = TorchBuild("2.13.0+cpu", None)


def fake_torch(tmp_path: Path, version: str, cuda: str | None) -> Path:
    pkg = tmp_path / "torch"
    pkg.mkdir()
    (pkg / "version.py").write_text(VERSION_PY.format(version=version, cuda=repr(cuda)))
    return pkg


def test_the_installed_build_is_read_without_importing_torch_and_is_what_torch_says():
    import torch  # imported here only to compare: installed() reads torch/version.py

    build = torch_build.installed()
    assert build == TorchBuild(torch.__version__, torch.version.cuda)


@pytest.mark.parametrize("version,cuda", [("2.13.0+cu130", "13.0"), ("2.13.0+cpu", None), ("2.13.0", "12.8")])
def test_a_torch_folder_s_version_file_gives_its_build(tmp_path, version, cuda):
    build = torch_build.installed(fake_torch(tmp_path, version, cuda))
    assert build == TorchBuild(version, cuda) and build.is_cuda == (cuda is not None)


def test_no_torch_or_a_strange_version_file_gives_none(tmp_path):
    assert torch_build.installed(tmp_path / "nowhere") is None
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "version.py").write_text("__version__ = (")  # not Python
    assert torch_build.installed(tmp_path / "torch") is None
    (tmp_path / "torch" / "version.py").write_text("__version__ = 2")  # not a string
    assert torch_build.installed(tmp_path / "torch") is None


def test_the_cuda_build_without_a_gpu_is_said_with_its_cost_and_the_cpu_install(tmp_path):
    no_gpu, gpu = tmp_path / "nvidiactl", tmp_path / "present"
    gpu.write_text("")
    note = torch_build.cuda_note(CUDA, 700 * MIB, gpu_node=no_gpu)
    assert note is not None
    for part in ("CUDA build (2.13.0+cu130)", "without a GPU", "700 MiB (measured)", "348 MiB",
                 torch_build.CPU_INSTALL, "cloud/streamlit_app.py"):
        assert part in note, part
    assert "718 MiB (expected)" in torch_build.cuda_note(CUDA, None, gpu_node=no_gpu)
    assert torch_build.cuda_note(CUDA, 700 * MIB, gpu_node=gpu) is None  # a GPU here: the CUDA build is the one
    assert torch_build.cuda_note(CPU, None, gpu_node=no_gpu) is None
    assert torch_build.cuda_note(None, None, gpu_node=no_gpu) is None


def test_the_floor_follows_the_build_and_the_measured_size(monkeypatch):
    monkeypatch.setattr(parent_plan, "installed_build", lambda: CPU)
    cpu_floor = parent_plan.IMPORT_BYTES + parent_plan.FAKE_BASE_BYTES
    assert parent_plan.floor_error(cpu_floor) is None and parent_plan.floor_error(cpu_floor - 1) is not None
    monkeypatch.setattr(parent_plan, "installed_build", lambda: CUDA)
    monkeypatch.setattr(torch_build, "GPU_NODE", Path("/nonexistent/nvidiactl"))
    cuda_floor = cpu_floor + torch_build.CUDA_REST_BYTES - torch_build.CPU_REST_BYTES
    refused = parent_plan.floor_error(cuda_floor - 1)
    assert refused is not None and f"{cuda_floor / MIB:,.0f} MiB" in refused
    assert "CUDA build (2.13.0+cu130)" in refused and torch_build.CPU_INSTALL in refused
    assert parent_plan.floor_error(cuda_floor) is None
    measured = 800 * MIB  # the warm process's own size once ready wins over the table
    assert parent_plan.floor_error(measured + parent_plan.FAKE_BASE_BYTES - 1, measured) is not None
    assert parent_plan.floor_error(measured + parent_plan.FAKE_BASE_BYTES, measured) is None
    generic = Request(Workload(device="cpu"), hf_config={"model_type": "roformer"})
    assert parent_plan.estimate(generic, measured)["imports"] == measured


CAPPED = """
import mmap, resource, sys
from albert_core.processes.limits import _rss, data_cap
# 1 GiB of private writable memory never touched: counted by RLIMIT_DATA, not resident, as the CUDA build's libraries
reserve = mmap.mmap(-1, 1 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=mmap.PROT_READ | mmap.PROT_WRITE)
cap = _rss() + (256 << 20)  # a budget that leaves 256 MiB to grow by
limit = data_cap(cap) if sys.argv[1] == "data_cap" else cap
resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
try:
    block = bytearray(64 << 20)
    print("allocated")
except MemoryError:
    print("refused")
"""


@pytest.mark.parametrize("how,expected", [("data_cap", "allocated"), ("raw", "refused")])
def test_the_memory_cap_is_growth_on_what_the_process_holds_not_its_virtual_size(how, expected):
    """Issue 56: the CUDA build holds 895 MiB of private virtual memory at 693 MiB resident, so the cap taken as
    RLIMIT_DATA itself refused its first allocation ("Resource temporarily unavailable"); data_cap gives the budget
    as room to grow, whatever the process has reserved."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", CAPPED, how], cwd=root, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == expected, out.stderr


OTHER = {"torch": "2.14.1", "transformers": "5.23.0"}


@pytest.mark.parametrize("build,versions", [(CUDA, torch_build.VERIFIED), (CPU, torch_build.VERIFIED), (CPU, OTHER)])
def test_verify_and_the_cli_say_a_cuda_build_or_another_release_once(monkeypatch, capsys, build, versions):
    """Verify's page (above its button) and the CLI's verify (stderr, not the JSON) say each once; the verified
    release's CPU build, nothing."""
    from test_app_pages import goto, open_app

    from albert_core.cli import main as cli

    monkeypatch.setattr(parent_plan, "installed_build", lambda: build)
    monkeypatch.setattr(parent_plan, "_installed_versions", lambda: dict(versions))
    monkeypatch.setattr(torch_build, "GPU_NODE", Path("/nonexistent/nvidiactl"))
    at = goto(open_app({"preset": "bert-base"}), "verify")
    assert not at.exception
    cuda = [i.value for i in at.info if "CUDA build" in i.value]
    other = [i.value for i in at.info if "byte-exact numbers were verified" in i.value]
    assert len(cuda) == (1 if build.is_cuda else 0) and len(other) == (1 if versions == OTHER else 0)
    assert all(torch_build.CPU_INSTALL in s and build.version in s for s in cuda)
    assert all("torch 2.14.1" in s for s in other)
    assert cli.main(["verify", "--preset", "bert-base", "--batch-size", "1", "--seq-len", "8", "--json"]) == 0
    out = capsys.readouterr()
    assert out.err.count("PyTorch's CUDA build") == (1 if build.is_cuda else 0) and "CUDA" not in out.out
    assert out.err.count("verified with torch 2.13.0") == (1 if versions == OTHER else 0)


def test_another_release_is_named_with_what_may_differ():
    assert torch_build.version_note(dict(torch_build.VERIFIED)) is None
    assert torch_build.version_note({"torch": None, "transformers": None}) is None  # not installed: said elsewhere
    note = torch_build.version_note({"torch": "2.14.1", "transformers": "5.23.0"})
    assert note is not None and note.startswith("This Python has torch 2.14.1;")
    assert "verified with torch 2.13.0 and transformers 5.23.0" in note and "measured byte may differ" in note
    both = torch_build.version_note({"torch": "2.12.0", "transformers": "5.30.1"})
    assert both is not None and both.startswith("This Python has torch 2.12.0 and transformers 5.30.1;")


def test_the_installed_releases_are_read_without_importing_and_are_the_verified_ones():
    import torch
    import transformers

    versions = torch_build.installed_versions()
    assert versions == {"torch": torch.__version__.split("+")[0], "transformers": transformers.__version__}
    assert versions == torch_build.VERIFIED  # the environment requirements.txt pins: nothing to say


def test_the_library_accepts_the_verified_releases_and_their_patches_and_the_app_pins_them():
    import tomllib

    from packaging.requirements import Requirement

    root = Path(__file__).resolve().parents[1]
    lib = {r.name: r.specifier for r in map(Requirement, tomllib.loads((root / "pyproject.toml").read_text())
                                             ["project"]["dependencies"])}
    pins = dict(line.split("#")[0].strip().split("==") for line in (root / "requirements.txt").read_text().splitlines()
                if "==" in line.split("#")[0])
    for name, version in torch_build.VERIFIED.items():
        assert pins[name] == version  # the app installs exactly the verified release
        major, minor, patch = map(int, version.split("."))
        assert lib[name].contains(version) and lib[name].contains(f"{major}.{minor}.{patch + 1}")
        assert not lib[name].contains(f"{major}.{minor + 1}.0")  # an untested release is not taken in silently
