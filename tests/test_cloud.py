"""The Community Cloud entry's dependency file (cloud/requirements.txt, issue 56): the root file's pins, PyTorch's CPU
build for Linux x86_64 by direct reference, and nothing of CUDA when pip or uv resolve it.

The resolution is tested without PyTorch's host: a local HTTP server in its layout (/whl/cpu/) holds the CPU wheel
this machine has, the file's host is substituted by it, and uv (`uv pip compile` for Linux x86_64, CPython 3.11;
Community Cloud's installer) resolves it against PyPI, pip (`--isolated`: PyPI alone; Cloud's fallback) its torch lines. The root file resolved
the same way by uv brings PyPI's CUDA build: the check that the Cloud file avoids it is one that bites.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import cloud_requirements  # noqa: E402

WHEEL_DIRS = (Path("/opt/wheels"),)  # where this machine keeps PyTorch's CPU wheel (its pip config's find-links)
CUDA_PACKAGES = ("nvidia-", "cuda-", "triton")


def requirements(text: str) -> list[Requirement]:
    lines = (line.split("#", 1)[0].strip() if " @ " not in line else line.strip() for line in text.splitlines())
    return [Requirement(line) for line in lines if line and not line.startswith("#")]


def is_cuda(name: str) -> bool:
    return name.lower().startswith(CUDA_PACKAGES)


def test_the_cloud_file_is_what_requirements_txt_gives():
    out = subprocess.run([sys.executable, "scripts/cloud_requirements.py", "--check"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    root = {r.name: str(r.specifier) for r in requirements((ROOT / "requirements.txt").read_text())}
    cloud = requirements((ROOT / "cloud" / "requirements.txt").read_text())
    assert {r.name: str(r.specifier) for r in cloud if r.name != "torch"} == {k: v for k, v in root.items()
                                                                             if k != "torch"}
    assert root["torch"] == "==2.13.0" and all(r.url or str(r.specifier) == "==2.13.0" for r in cloud
                                               if r.name == "torch")


@pytest.mark.parametrize("platform,machine", [("linux", "x86_64"), ("linux", "aarch64"), ("darwin", "arm64"),
                                              ("win32", "AMD64")])
@pytest.mark.parametrize("python", ["3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "3.15"])
def test_exactly_one_torch_line_applies_everywhere(platform, machine, python):
    env = default_environment() | {"sys_platform": platform, "platform_machine": machine, "python_version": python,
                                   "python_full_version": python + ".0"}
    torch = [r for r in requirements((ROOT / "cloud" / "requirements.txt").read_text()) if r.name == "torch"]
    (applies,) = [r for r in torch if r.marker is None or r.marker.evaluate(env)]
    if platform == "linux" and machine == "x86_64" and python in cloud_requirements.PYTHONS:
        tag = "cp" + python.replace(".", "")
        assert applies.url == (f"https://download.pytorch.org/whl/cpu/torch-2.13.0%2Bcpu-{tag}-{tag}-"
                               "manylinux_2_28_x86_64.whl")
    else:  # anywhere else PyPI's torch, as requirements.txt has it (the app then says which build it runs)
        assert applies.url is None and str(applies.specifier) == "==2.13.0"


def cpu_wheel() -> Path:
    found = [w for d in WHEEL_DIRS for w in sorted(d.glob("torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"))]
    assert found, f"PyTorch's CPU wheel for CPython 3.11 is not in {', '.join(map(str, WHEEL_DIRS))}"
    return found[0]


@contextmanager
def pytorch_host(tmp: Path) -> Iterator[str]:
    """A local server in PyTorch's layout (/whl/cpu/<wheel>) holding the CPU wheel; its base URL."""
    (tmp / "whl" / "cpu").mkdir(parents=True)
    wheel = cpu_wheel()
    (tmp / "whl" / "cpu" / wheel.name).symlink_to(wheel)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp))
    handler.log_message = lambda *a: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def local_cloud_file(tmp_path_factory) -> Iterator[tuple[Path, str]]:
    tmp = tmp_path_factory.mktemp("cloud")
    with pytorch_host(tmp / "host") as host:
        path = tmp / "requirements.txt"
        path.write_text(cloud_requirements.render(host=host))
        yield path, host


def pins() -> dict[str, str]:
    return {r.name.lower().replace("_", "-"): str(r.specifier)[2:] for r in
            requirements((ROOT / "requirements.txt").read_text()) if r.name != "torch"}


def test_pip_resolves_the_cloud_files_torch_lines_to_the_cpu_build(local_cloud_file, tmp_path):
    """pip (Community Cloud's fallback installer) reads the torch lines as uv does: the direct reference under the
    marker of this Python, PyTorch's CPU wheel with its own dependencies and nothing of CUDA. Only the torch lines:
    the whole file took pip 25 s here (most of it streamlit's dependencies, 2026-12-07) against 2.4 s for these;
    the other pins are resolved by uv below and compared to requirements.txt by the first test."""
    path, host = local_cloud_file
    torch_lines = tmp_path / "torch.txt"
    torch_lines.write_text("".join(line for line in path.read_text().splitlines(True) if line.startswith("torch")))
    report = tmp_path / "report.json"
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--isolated", "--dry-run", "--ignore-installed",
                          "--disable-pip-version-check", "--quiet", "--report", str(report), "-r", str(torch_lines)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = {i["metadata"]["name"].lower().replace("_", "-"): (i["metadata"]["version"], i["download_info"]["url"])
           for i in json.loads(report.read_text())["install"]}
    assert got["torch"][0] == "2.13.0+cpu" and got["torch"][1].startswith(host + "/whl/cpu/")
    assert len(torch_lines.read_text().splitlines()) == 6 and len(got) > 3  # every line read; torch's dependencies too
    assert [n for n in got if is_cuda(n)] == []


def uv_compile(path: Path, tmp: Path) -> dict[str, str]:
    """`uv pip compile` for Linux x86_64, CPython 3.11, against PyPI: {name: version or URL}."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_"))} | {"UV_CACHE_DIR": str(tmp / "uv")}
    uv = Path(sys.executable).with_name("uv")
    out = subprocess.run([str(uv), "pip", "compile", str(path), "--python-version", "3.11", "--python-platform",
                          "x86_64-manylinux_2_28", "--no-header", "--no-annotate", "--no-config", "--quiet"],
                         capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [line.strip() for line in out.stdout.splitlines() if line.strip() and not line.startswith("#")]
    return {line.split(" @ ")[0] if " @ " in line else line.split("==")[0]:
            line.split(" @ ")[1] if " @ " in line else line.split("==")[1] for line in lines}


def test_uv_resolves_the_cloud_file_to_the_cpu_build_and_the_root_file_to_cuda(local_cloud_file, tmp_path):
    path, host = local_cloud_file
    got = uv_compile(path, tmp_path)
    assert got["torch"] == f"{host}/whl/cpu/torch-2.13.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert [n for n in got if is_cuda(n)] == []
    assert {n: got[n] for n in pins()} == pins()
    root = uv_compile(ROOT / "requirements.txt", tmp_path)  # PyPI's torch: the CUDA build this file is for avoiding
    assert root["torch"] == "2.13.0" and len([n for n in root if is_cuda(n)]) >= 10
