"""Which PyTorch this machine runs, read without importing it, and what that build costs a measuring process.

PyPI's torch for Linux x86_64 is the CUDA build; PyTorch's own index has the CPU build (`+cpu`). Both measure the
same numbers on fake tensors, but the CUDA build loads its CUDA libraries at `import torch`, GPU or not: the warm
measurement process at rest (imports and warm-up done, albert_core.processes.child_warm) held, measured on the 2-core
development machine (no GPU, 2026-12-07, VmRSS of /proc/PID/status):

    CPU build  2.13.0+cpu    348 MiB  (260 anonymous + 88 file-backed)
    CUDA build 2.13.0+cu130  718 MiB  (403 anonymous + 315 file-backed)

A 1 GiB server (Streamlit Community Cloud) holds the server (about 160 MiB) and that process: the CUDA build leaves
little room for a build, so the app says so, once, where it measures (Verify, the CLI), with how to install the CPU
build. The bounds that depend on the process's size (the floor under which no build starts, the size past which the
warm process is replaced) follow from the size measured in the process itself (processes/parent_queue.py); the table above
is only the guess before that measure exists.

The versions: the byte-exact claims (the engine equals the analytical model, fake equals real) were verified with
VERIFIED's torch and transformers, which requirements.txt pins; the library (pyproject.toml) accepts their patch
releases. Another version is said once where the engine measures (version_note), naming what may then differ.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from pathlib import Path

MIB = 1 << 20
CPU_REST_BYTES = 348 * MIB  # the warm process at rest with the CPU build (the module's docstring)
CUDA_REST_BYTES = 718 * MIB  # ... with the CUDA build, on a machine without a GPU
CPU_INSTALL = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
GPU_NODE = Path("/dev/nvidiactl")  # the NVIDIA driver's control device: present where a GPU can be used
VERIFIED = {"torch": "2.13.0", "transformers": "5.23.0"}  # what the suite's exactness tests ran on (requirements.txt)


@dataclass(frozen=True)
class TorchBuild:
    version: str  # torch.__version__: "2.13.0+cpu", "2.13.0+cu130"
    cuda: str | None  # the CUDA version it was built for (torch.version.cuda); None for the CPU build

    @property
    def is_cuda(self) -> bool:
        return self.cuda is not None

    def cuda_without_gpu(self, gpu_node: Path | None = None) -> bool:
        """A CUDA build on a machine where no NVIDIA GPU can be used: its CUDA libraries cost memory for nothing."""
        return self.is_cuda and not (gpu_node or GPU_NODE).exists()

    def expected_rest_bytes(self) -> int:
        """The warm process's size at rest before it is measured (the module's table)."""
        return CUDA_REST_BYTES if self.is_cuda else CPU_REST_BYTES


def installed(package: Path | None = None) -> TorchBuild | None:
    """The installed torch's build, read from its torch/version.py (written at its build), without importing
    torch (the server never imports it); None where torch is not installed or the file is not as expected.
    package: torch's folder (None: where this Python finds it)."""
    if package is None:
        try:
            spec = importlib.util.find_spec("torch")
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.submodule_search_locations:
            return None
        package = Path(next(iter(spec.submodule_search_locations)))
    values: dict[str, object] = {}
    try:
        tree = ast.parse((package / "version.py").read_text())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
            values[target.id] = value.value
    version, cuda = values.get("__version__"), values.get("cuda")
    if not isinstance(version, str):
        return None
    return TorchBuild(version, cuda if isinstance(cuda, str) else None)


def cuda_cost(build: TorchBuild | None, rest_bytes: int | None = None, gpu_node: Path | None = None) -> str | None:
    """What a CUDA build on a machine without a GPU costs here, in one clause; None otherwise. rest_bytes: the warm
    process's size as measured in it (else the module's table)."""
    if build is None or not build.cuda_without_gpu(gpu_node):
        return None
    rest = rest_bytes or build.expected_rest_bytes()
    return (f"this server runs PyTorch's CUDA build ({build.version}) on a machine without a GPU: its measuring "
            f"process holds {rest / MIB:,.0f} MiB ({'measured' if rest_bytes else 'expected'}) where the CPU build "
            f"holds about {CPU_REST_BYTES / MIB:,.0f} MiB")


def cuda_note(build: TorchBuild | None, rest_bytes: int | None = None, gpu_node: Path | None = None) -> str | None:
    """cuda_cost as a note of its own, with what follows and how to install the CPU build; None otherwise."""
    cost = cuda_cost(build, rest_bytes, gpu_node)
    if cost is None:
        return None
    return (f"{cost[0].upper()}{cost[1:]}, so less memory is left for a build. Both builds measure the same numbers; "
            f"to measure within less memory, install the CPU build (`{CPU_INSTALL}`) or, on Streamlit Community "
            "Cloud, deploy cloud/streamlit_app.py, whose requirements.txt names it.")


def installed_versions() -> dict[str, str | None]:
    """torch's and transformers' installed versions, read from their metadata without importing them (None: not
    installed). torch's local label (+cpu, +cu130) is the build's, not the release's: left out."""
    out: dict[str, str | None] = {}
    for name in VERIFIED:
        try:
            out[name] = importlib.metadata.version(name).split("+")[0]
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def version_note(versions: dict[str, str | None]) -> str | None:
    """Where torch or transformers is another release than the one the exact claims were verified on: which, and what
    may then differ; None where both are the verified ones (or not installed: the engine then says it needs them)."""
    other = {k: v for k, v in versions.items() if v is not None and v != VERIFIED[k]}
    if not other:
        return None
    have = " and ".join(f"{k} {v}" for k, v in other.items())
    verified = " and ".join(f"{k} {v}" for k, v in VERIFIED.items())
    return (f"This Python has {have}; albert_core's byte-exact numbers were verified with {verified}. Parameter "
            "counts and the analytical estimates are arithmetic and stay as they are; the engine runs this version's "
            "modeling code and ops, so a measured byte may differ from its estimate where those changed. Verify "
            "measures what this version does and shows any difference beside the estimate.")
