"""One Verify request: build the config in PyTorch, count it, measure it; plain numbers out.

`plan(request)` (no torch) checks the request, estimates the measuring process's peak memory from
albert_core's own numbers and decides what the child may do; `run(request)` does the work (torch
imported inside, callable in-process by tests); `python -m albert_core.worker --memory-mb N` is the
child the app starts for each request (albert_core.runner): it caps its own memory with
RLIMIT_DATA, reads the request as JSON on stdin, writes the result as JSON on stdout and exits, so
no model, tensor or torch module ever lives in the server's process.

Request: {"config": ModelConfig.to_dict(), "source": "reference" | "hf", "batch_size", "seq_len",
"dtype", "attention", "checkpointing"}. Result: "built" (parameters PyTorch built) or
"count_error"; "measurement" (a dict of numbers and a breakdown as records) or "measure_error";
"peak_rss" (the child's peak resident bytes), "import_rss" (its resident bytes after the imports).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from .config import ModelConfig

MIB = 1 << 20
# Resident memory of a fresh `python -m albert_core.worker` after importing torch 2.13 and
# transformers 5.23 and building a model on the meta device, before any weight exists: 340 MiB
# (/proc/self/status VmHWM; 332 MiB after the imports alone, 219 MiB after torch alone; 2026-11-29,
# the 2-core Intel Xeon development machine, CPU-only torch wheel).
IMPORT_BYTES = 340 * MIB
# Working memory beyond imports + weights + saved activations (the forward's transient tensors, the
# allocator's slack, the result): measured in the child at batch 2, seq_len 64, float32, eager, both
# sources: 86-98 MiB for bert-base (95 MiB of activations), 106-121 MiB for albert-base (131 MiB),
# 179-190 MiB for bert-large (253 MiB); a least-squares fit gives about 21 MiB + 0.77 x activations and
# nothing growing with the weights. Under the server the same bert-base build peaked 30 MiB higher
# (968 MiB). Modelled as 64 MiB + 0.8 x activations: 994, 684 and 2,139 MiB for the three (docs/deploy.md).
WORKING_BASE_BYTES = 64 * MIB
WORKING_PER_ACTIVATION = (4, 5)  # 4/5 of the activation bytes


def config_of(request: dict[str, Any]) -> ModelConfig:
    return ModelConfig.from_dict(request["config"])


def estimate(request: dict[str, Any]) -> dict[str, int]:
    """Bytes the measuring child needs at its peak: {"imports", "weights", "activations", "working", "total"}.

    Weights: the parameters of what the source builds (count_parameters of hf_built_config for
    "hf"), 4 bytes each: every model is built in float32 and a 16-bit dtype is cast after
    (nn.Module.to converts one tensor at a time). Activations: activation_memory(..., device="cpu"),
    which equals the bytes autograd saves (tests/test_activations.py).
    """
    from .activations import activation_memory
    from .hf import hf_built_config
    from .params import count_parameters

    cfg = config_of(request)
    built = hf_built_config(cfg) if request["source"] == "hf" else cfg
    weights = 4 * count_parameters(built).total  # float32: torch.float32 element size
    act = activation_memory(built, batch_size=request["batch_size"], seq_len=request["seq_len"],
                            dtype=request["dtype"], attention=request["attention"], training=True,
                            checkpointing=request["checkpointing"], device="cpu").total
    num, den = WORKING_PER_ACTIVATION
    working = WORKING_BASE_BYTES + act * num // den
    return {"imports": IMPORT_BYTES, "weights": weights, "activations": act, "working": working,
            "total": IMPORT_BYTES + weights + act + working}


def plan(request: dict[str, Any], budget_bytes: int) -> dict[str, Any]:
    """What the child may do within budget_bytes: {"count": bool, "measure": bool, reasons, "estimate"}.

    No torch: a request refused here never starts a process that would build anything.
    """
    from . import build

    cfg = config_of(request)
    out: dict[str, Any] = {"count": True, "measure": True}
    if IMPORT_BYTES + WORKING_BASE_BYTES > budget_bytes:
        reason = (f"this server's memory budget for a build is {budget_bytes / MIB:,.0f} MiB, less than the "
                  f"{(IMPORT_BYTES + WORKING_BASE_BYTES) / MIB:,.0f} MiB a process with PyTorch needs before "
                  "building anything (raise ALBERT_EXPLORER_MEMORY_BUDGET_MB)")
        return {"count": False, "measure": False, "count_error": reason, "measure_error": reason}
    layers = build.layer_modules(cfg, request["source"])
    if layers > build.MAX_BUILD_LAYERS:
        out["count"] = False
        out["count_error"] = (f"Building {cfg.name} creates {layers:,} layer modules; this server builds at most "
                              f"{build.MAX_BUILD_LAYERS:,}. Lower num_layers or share whole layers.")
    try:
        est = estimate(request)
    except ValueError as e:  # seq_len beyond max_position, a dtype the CPU cannot run, ...
        out.update(measure=False, measure_error=str(e))
        return out
    out["estimate"] = est
    if est["total"] > budget_bytes:
        out.update(measure=False, measure_error=_too_big(cfg, request, est, budget_bytes))
    return out


def _too_big(cfg: ModelConfig, request: dict[str, Any], est: dict[str, int], budget: int) -> str:
    parts = ", ".join(f"{k} {v / MIB:,.0f} MiB" for k, v in est.items() if k != "total")
    return (f"measuring {cfg.name} at batch {request['batch_size']}, seq_len {request['seq_len']} would need about "
            f"{est['total'] / MIB:,.0f} MiB ({parts}), over this server's budget of {budget / MIB:,.0f} MiB for one "
            "build: lower the batch size or sequence length, choose a smaller config (fewer layers, smaller "
            "hidden_dim or vocab_size), or rely on the parameter count on the meta device, which needs no memory")


def run(request: dict[str, Any], *, count: bool = True, measure: bool = True) -> dict[str, Any]:
    """Count on the meta device and measure one training-mode forward; plain JSON-able numbers."""
    from . import build
    from . import measure as measuring

    cfg = config_of(request)
    out: dict[str, Any] = {}
    if count:
        model = (build.reference_model(cfg, device="meta") if request["source"] == "reference"
                 else build.hf_model(cfg, device="meta"))
        out["built"] = build.count_built(model)
        del model
    out["import_rss"] = _rss()
    if measure:
        try:
            m = measuring.measure_activation_memory(
                cfg, batch_size=request["batch_size"], seq_len=request["seq_len"], dtype=request["dtype"],
                attention=request["attention"], kind=request["source"], checkpointing=request["checkpointing"],
                max_bytes=request.get("max_bytes", measuring.MAX_MEASURE_BYTES))
        except ValueError as e:
            out["measure_error"] = str(e)
        except (MemoryError, RuntimeError) as e:  # past the cap: torch's "DefaultCPUAllocator: can't allocate"
            if not isinstance(e, MemoryError) and "alloc" not in str(e).lower():
                raise
            out["out_of_memory"] = True
        else:
            out["measurement"] = {
                "total": m.total, "estimate": m.estimate, "error": m.error, "kind": m.kind,
                "batch_size": m.batch_size, "seq_len": m.seq_len, "dtype": m.dtype, "attention": m.attention,
                "checkpointing": m.checkpointing, "breakdown": m.breakdown().to_dict("records")}
    return out


def _peak_rss() -> int:
    """This process's peak resident bytes (VmHWM of /proc/self/status; 0 elsewhere).

    Not getrusage's ru_maxrss: Linux carries the parent's high-water mark across fork and exec
    (setmax_mm_hiwater_rss in fs/exec.c), so a child of a 700 MiB process would report 700 MiB.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    return 0


def _rss() -> int:
    """Resident bytes of this process now (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def _limit_memory(limit_bytes: int) -> None:
    """Cap this process's private writable memory (heap and anonymous maps: RLIMIT_DATA, Linux >= 4.7).

    Past the cap an allocation fails (a MemoryError or torch's "can't allocate memory"), never the server.
    """
    import resource

    resource.setrlimit(resource.RLIMIT_DATA, (limit_bytes, limit_bytes))


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


def main(argv: list[str]) -> int:
    import argparse

    p = argparse.ArgumentParser(description="Run one Verify request (JSON on stdin, JSON on stdout).")
    p.add_argument("--memory-mb", type=int, default=0, help="cap on this process's data memory, MiB (0: none)")
    args = p.parse_args(argv)
    _die_with_parent()
    _first_to_go()
    if args.memory_mb:
        _limit_memory(args.memory_mb * MIB)
    request = json.loads(sys.stdin.read())
    try:
        out = run(request, count=request.get("count", True), measure=request.get("measure", True))
    except MemoryError:  # past the cap before the measurement (imports, the meta build)
        out = {"out_of_memory": True}
    out["peak_rss"] = _peak_rss()
    sys.stdout.write(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
