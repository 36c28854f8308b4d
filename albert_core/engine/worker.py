"""One Verify request: build the model in PyTorch, count it, measure it on the engine; plain numbers out.

`plan(request)` (no torch) checks the request, estimates the measuring process's peak memory and
decides what the child may do; `run(request)` does the work (torch imported inside, callable
in-process by tests); `python -m albert_core.engine.worker --memory-mb N` is the one-shot child (albert_core.engine.runner
starts one per real-tensor request, and per request when the warm process is off): it caps its own memory
with RLIMIT_DATA, reads the request as JSON on stdin, writes the result as JSON on stdout and exits, so no
model, tensor or torch module ever lives in the server's process. `python -m albert_core.engine.worker --serve` is
the warm measurement process (`serve`): it imports torch and transformers once, says it is ready with one
JSON line, then answers one JSON line per request line (fake tensors only), each under the memory cap the
request names, until its stdin closes or it asks to be retired.

Request: {"config": ModelConfig.to_dict()} or {"hf_config": a config.json dict of a model_type no
family models}, with "source": "reference" | "hf", "batch_size", "seq_len", "dtype", "attention",
"checkpointing", "optimizer" (default "adamw"), "real" (default false: fake tensors), and for a fine-tuned
model "train" (finetune's mode), "head", "num_labels", "lora" ({"r", "lora_alpha", "lora_dropout", "targets"}
or null): Hugging Face's task model, peft's for LoRA (finetune.build, as `verify --train`). Result:
"built" (parameters PyTorch built), "by_module", "count_diff" (where a count differs) or
"count_error"; "measurement" (saved bytes, estimate, breakdown) or "measure_error"; "step" (the
training step's peak by category) and "inference" (the eval forward's peak) where measured;
"how" (fake or real tensors); "peak_rss" (the child's peak resident bytes), "import_rss"; for a fine-tuned
model "trainable_built" (the parameters that require grad, as peft counts them).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import Any

from ..config import ModelConfig

MIB = 1 << 20
# Resident memory of a fresh `python -m albert_core.engine.worker` after importing torch 2.13 and
# transformers 5.23 and building a model on the meta device, before any weight exists: 340 MiB
# (/proc/self/status VmHWM; 332 MiB after the imports alone, 219 MiB after torch alone; 2026-11-29,
# the 2-core Intel Xeon development machine, CPU-only torch wheel).
IMPORT_BYTES = 340 * MIB
# On fake tensors nothing is stored: beyond the imports the child holds Python objects (modules,
# fake tensors, the engine's records). Measured VmHWM of the whole child, all three measurements,
# 2026-12-01: 363-377 MiB from bert-base 2 x 64 to xlm-roberta-large 8 x 512 and ModernBERT-large
# 1 x 8,192 (docs/deploy.md); bert-large with 24 layers 371 MiB, with 512 layers 590 MiB (0.45 MiB a
# layer). Modelled as 96 MiB + 512 KiB per built layer module.
FAKE_BASE_BYTES = 96 * MIB
FAKE_PER_LAYER_BYTES = 512 * 1024
# Real tensors: working memory beyond imports + weights + saved activations (the forward's transient
# tensors, the allocator's slack, the result): measured in the child at batch 2, seq_len 64, float32,
# eager, both sources: a least-squares fit gives about 21 MiB + 0.77 x activations (docs/deploy.md).
WORKING_BASE_BYTES = 64 * MIB
WORKING_PER_ACTIVATION = (4, 5)  # 4/5 of the activation bytes


def config_of(request: dict[str, Any]) -> ModelConfig:
    return ModelConfig.from_dict(request["config"])


def finetune_of(request: dict[str, Any]) -> dict[str, Any] | None:
    """The request's fine-tuning as finetune.trainable and build take it ({"mode", "head", "num_labels", "lora":
    LoraSpec or None}), or None for the base model in full fine-tuning (no "train", or full with no head)."""
    from ..estimate.finetune import LoraSpec

    mode, head = request.get("train", "full"), request.get("head", "none")
    if mode == "full" and head == "none":
        return None
    lo = request.get("lora")
    lora = None
    if lo is not None:
        targets = lo.get("targets")
        lora = LoraSpec(r=lo["r"], lora_alpha=lo["lora_alpha"], lora_dropout=lo["lora_dropout"],
                        targets=tuple(targets) if targets is not None else None)
    return {"mode": mode, "head": head, "num_labels": max(int(request.get("num_labels", 2)), 1), "lora": lora}


def finetune_maker(cfg: ModelConfig, ft: dict[str, Any], attention: str, counted: dict[str, int]) -> Any:
    """A function that builds ft's task model of cfg on the CPU for the engine (finetune.build: peft's
    get_peft_model for LoRA) and puts what it built in `counted` ("trainable", "total", as peft counts)."""
    from ..estimate import finetune

    def make() -> Any:
        model = finetune.build(cfg, ft["mode"], head=ft["head"], num_labels=ft["num_labels"], lora=ft["lora"],
                               device="cpu", attention=attention)
        counted["trainable"], counted["total"] = finetune.count_built(model)
        return model

    return make


def finetune_error(request: dict[str, Any]) -> str | None:
    """Why the request's fine-tuned model cannot be built (None when it can, or for the base model)."""
    from ..estimate.finetune import trainable
    from ..formats.hf import hf_expressible

    ft = finetune_of(request)
    if ft is None:
        return None
    if is_generic(request):
        return "a fine-tuning mode or a task head needs a config one of the families models"
    if request["source"] != "hf":
        return ("a fine-tuning mode or a task head builds Hugging Face's task model (peft's for LoRA), not the "
                "reference encoder: choose Hugging Face's model")
    cfg = config_of(request)
    if not hf_expressible(cfg):
        return (f"Hugging Face builds sharing '{cfg.sharing}' of family '{cfg.family}' unshared, so its task model "
                "would not be the one albert_core counts: choose sharing 'none' (or an ALBERT sharing all), or full "
                "fine-tuning with no head")
    try:
        trainable(cfg, ft["mode"], head=ft["head"], num_labels=ft["num_labels"], lora=ft["lora"])
    except ValueError as e:
        return str(e)
    return None


def is_generic(request: dict[str, Any]) -> bool:
    """A config.json of a model_type no family models: measured, with no closed form beside it."""
    return "hf_config" in request


def estimate(request: dict[str, Any]) -> dict[str, int]:
    """Bytes the measuring child needs at its peak: {"imports", "weights", "activations", "working", "total"}.

    Fake tensors (the default): the imports and the Python objects of the build, no weights, no
    activations. Real tensors: weights are the parameters of what the source builds, 4 bytes each
    (every model is built in float32 and a 16-bit dtype is cast after), activations are
    activation_memory(..., device="cpu"), which equals the bytes autograd saves.
    """
    from ..estimate.activations import activation_memory
    from ..estimate.params import count_parameters
    from ..formats.hf import hf_built_config
    from . import build

    if is_generic(request) or not request.get("real"):
        layers = 0 if is_generic(request) else build.layer_modules(config_of(request), request["source"])
        working = FAKE_BASE_BYTES + FAKE_PER_LAYER_BYTES * layers
        return {"imports": IMPORT_BYTES, "weights": 0, "activations": 0, "working": working,
                "total": IMPORT_BYTES + working}
    cfg = config_of(request)
    built = hf_built_config(cfg) if request["source"] == "hf" else cfg
    ft = finetune_of(request)
    n = count_parameters(built).total if ft is None else _trainable(cfg, ft).total  # a head and adapters too
    weights = 4 * n  # float32: torch.float32 element size
    act = activation_memory(built, batch_size=request["batch_size"], seq_len=request["seq_len"],
                            dtype=forward_dtype(request["dtype"]), attention=request["attention"], training=True,
                            checkpointing=request["checkpointing"], device="cpu").total
    num, den = WORKING_PER_ACTIVATION
    working = WORKING_BASE_BYTES + act * num // den
    return {"imports": IMPORT_BYTES, "weights": weights, "activations": act, "working": working,
            "total": IMPORT_BYTES + weights + act + working}


def _trainable(cfg: ModelConfig, ft: dict[str, Any]) -> Any:
    from ..estimate.finetune import trainable

    return trainable(cfg, ft["mode"], head=ft["head"], num_labels=ft["num_labels"], lora=ft["lora"])


def floor_error(budget_bytes: int) -> str | None:
    """Why no build process can start within budget_bytes (PyTorch's imports alone), or None."""
    floor = IMPORT_BYTES + FAKE_BASE_BYTES
    if floor <= budget_bytes:
        return None
    return (f"this server has {budget_bytes / MIB:,.0f} MiB free for a build, less than the {floor / MIB:,.0f} MiB a "
            "process with PyTorch needs before building anything: run the explorer where more memory is free, or "
            "set ALBERT_EXPLORER_MEMORY_BUDGET_MB if the server has it")


def plan(request: dict[str, Any], budget_bytes: int) -> dict[str, Any]:
    """What the child may do within budget_bytes: {"count": bool, "measure": bool, reasons, "estimate"}.

    No torch: a request refused here never starts a process that would build anything.
    """
    from ..estimate.activations import check_inputs
    from . import build
    from .measure import check_kind

    out: dict[str, Any] = {"count": True, "measure": True}
    reason = floor_error(budget_bytes)
    if reason:
        return {"count": False, "measure": False, "count_error": reason, "measure_error": reason}
    reason = finetune_error(request)
    if reason:
        return {"count": False, "measure": False, "count_error": reason, "measure_error": reason}
    if not is_generic(request):
        cfg = config_of(request)
        layers = build.layer_modules(cfg, request["source"])
        if layers > build.MAX_BUILD_LAYERS:
            reason = (f"Building {cfg.name} creates {layers:,} layer modules; this server builds at most "
                      f"{build.MAX_BUILD_LAYERS:,}. Lower num_layers or share whole layers.")
            return {"count": False, "measure": False, "count_error": reason, "measure_error": reason}
        try:
            check_kind(cfg, request["source"], request["checkpointing"])
            check_inputs(cfg, request["batch_size"], request["seq_len"], forward_dtype(request["dtype"]),
                         request["attention"], "cpu")
        except ValueError as e:  # seq_len beyond max_position, a dtype the CPU cannot run, ...
            out.update(measure=False, measure_error=str(e))
    if out["measure"]:
        try:
            est = estimate(request)
        except ValueError as e:
            out.update(measure=False, measure_error=str(e))
            return out
        out["estimate"] = est
        if est["total"] > budget_bytes:
            out.update(measure=False, measure_error=_too_big(request, est, budget_bytes))
    return out


def _too_big(request: dict[str, Any], est: dict[str, int], budget: int) -> str:
    parts = ", ".join(f"{k} {v / MIB:,.0f} MiB" for k, v in est.items() if k != "total")
    name = config_of(request).name if not is_generic(request) else request["hf_config"].get("model_type")
    if not request.get("real"):  # fake tensors: only the build's Python objects grow, with the layer modules
        return (f"measuring {name} on fake tensors would need about {est['total'] / MIB:,.0f} MiB ({parts}), over "
                f"the {budget / MIB:,.0f} MiB this server has for one build: the build holds a Python object per "
                "module, so lower num_layers or share whole layers (a shared layer is built once)")
    return (f"measuring {name} at batch {request['batch_size']}, seq_len {request['seq_len']} on real tensors would "
            f"need about {est['total'] / MIB:,.0f} MiB ({parts}), over the {budget / MIB:,.0f} MiB this server has for "
            "one build: measure on fake tensors (the default: PyTorch's real ops without storage, any size), or "
            "lower the batch size or sequence length")


def _run_of(request: dict[str, Any]) -> Any:
    from . import core as engine

    return engine.Run(request["batch_size"], request["seq_len"], dtype=request["dtype"],
                      attention=request["attention"], checkpointing=request["checkpointing"],
                      optimizer=request.get("optimizer", "adamw"), fake=not request.get("real", False))


def _maker(request: dict[str, Any], counted: dict[str, int] | None = None) -> tuple[Any, int, Any]:
    """(make, vocab_size, cfg or None) for the request's model (a fine-tuned one puts its counts in `counted`)."""
    from . import core as engine
    from .measure import maker

    if is_generic(request):
        d = request["hf_config"]
        vocab = d.get("vocab_size")
        if not isinstance(vocab, int) or isinstance(vocab, bool) or vocab < 1:
            raise engine.EngineError(f"config.json of model_type {d.get('model_type')!r} needs a vocab_size of at "
                                     f"least 1 to make input_ids, got {vocab!r}")
        return (lambda: engine.build_auto(d, request["attention"])), vocab, None
    cfg = config_of(request)
    ft = finetune_of(request)
    if ft is not None:
        return finetune_maker(cfg, ft, request["attention"], {} if counted is None else counted), cfg.vocab_size, cfg
    return maker(cfg, request["source"], request["attention"]), cfg.vocab_size, cfg


def run(request: dict[str, Any], *, count: bool = True, measure: bool = True) -> dict[str, Any]:
    """Build, count and measure (saved bytes, the training step's peak, the inference peak) on the engine."""
    from . import core as engine
    from . import measure as measuring

    out: dict[str, Any] = {}
    counted: dict[str, int] = {}
    fine = finetune_of(request) is not None
    try:
        make, vocab, cfg = _maker(request, counted)
        r = _measure(request, make, vocab, cfg, measure)
    except (engine.EngineError, ValueError) as e:  # transformers or peft cannot build it, or an op needs values
        if not isinstance(e, engine.EngineError) and not fine:
            raise
        return {"count_error": str(e), "measure_error": str(e), "import_rss": _rss()}
    except (MemoryError, RuntimeError) as e:  # past the cap: torch's "DefaultCPUAllocator: can't allocate"
        if not isinstance(e, MemoryError) and "alloc" not in str(e).lower():
            raise
        return {"out_of_memory": True, "import_rss": _rss()}
    out["import_rss"] = _rss()
    out["how"] = r.how
    if count:
        out["built"], out["by_module"] = r.parameters, r.by_module
        if fine:
            out["trainable_built"] = counted.get("trainable")  # beside finetune.trainable's count (the page)
        elif cfg is not None:
            out["count_diff"] = measuring.count_difference(cfg, request["source"], r.by_module)
    if measure:
        out.update(_numbers(request, r, cfg))
    return out


def _measure(request: dict[str, Any], make: Any, vocab: int, cfg: ModelConfig | None, measure: bool) -> Any:
    from . import core as engine

    run = _run_of(request)
    if not measure:  # count only: on fake tensors, whatever the request, so no weight is ever allocated
        return engine.measure(make, vocab, dataclasses.replace(run, fake=True), what=())
    what: tuple[str, ...] = ("saved", "step")
    if finetune_of(request) is not None:  # a task model: no closed form of its eval forward beside it
        return engine.measure(make, vocab, run, what=what)
    if cfg is None or (request["source"] == "hf" and _inference_modelled(cfg)):  # modelled on HF's code
        what += ("inference",)
    return engine.measure(make, vocab, run, what=what)


def _inference_modelled(cfg: ModelConfig) -> bool:
    from ..estimate.activations import family_ops

    return hasattr(family_ops(cfg), "infer_layer")


def forward_dtype(precision: str) -> str:
    """The dtype of a training precision's forward, as activation_memory names it: a master-copy precision runs
    the 16-bit model (replay.MASTER), every other is its own."""
    from ..replay.symbolic import MASTER

    return MASTER.get(precision, precision)


def _numbers(request: dict[str, Any], r: Any, cfg: ModelConfig | None) -> dict[str, Any]:
    """The measurements as plain JSON, each beside albert_core's estimate where a family models the config."""
    from dataclasses import asdict

    from ..estimate.activations import activation_memory
    from . import core as engine
    from .measure import _estimate_config

    out: dict[str, Any] = {}
    est = inf_est = est_cuda = None
    if cfg is not None and finetune_of(request) is None:  # a fine-tuned model's saved tensors have no closed form
        ecfg = _estimate_config(cfg, request["source"])
        kw = {"batch_size": request["batch_size"], "seq_len": request["seq_len"],
              "dtype": forward_dtype(request["dtype"]), "attention": request["attention"], "device": "cpu"}
        est = activation_memory(ecfg, checkpointing=request["checkpointing"], **kw).total
        try:  # the same forward as the Memory page counts it, for CUDA's kernels (replay.py: what differs)
            est_cuda = activation_memory(ecfg, checkpointing=request["checkpointing"], **(kw | {"device": "cuda"})).total
        except ValueError:
            est_cuda = None
        if r.inference is not None:
            inf_est = activation_memory(ecfg, training=False, **kw).total
    out["measurement"] = {
        "total": r.saved, "estimate": est, "estimate_cuda": est_cuda, "error": None if est is None else engine.relative_error(est, r.saved),
        "kind": request.get("source", "hf"), "batch_size": request["batch_size"], "seq_len": request["seq_len"],
        "dtype": request["dtype"], "attention": request["attention"], "checkpointing": request["checkpointing"],
        "fake": r.run.fake, "fine_tuned": finetune_of(request) is not None,
        "breakdown": engine.saved_breakdown(r.saved_tensors)}
    if r.step is not None:
        out["step"] = asdict(r.step) | {"optimizer": r.run.optimizer}
    if r.inference is not None:
        out["inference"] = {"total": r.inference, "estimate": inf_est}
    out["engine_seconds"], out["engine_timings"] = r.seconds, r.timings
    return out


# ---- measured points for the Memory page's charts ----------------------------------------------------
MAX_POINTS = 24  # points one request may measure (the page asks for at most 4 lengths of at most 6 configs)


def points_request(cfgs: list[ModelConfig], seq_lens: dict[str, list[int]], *, batch_size: int, dtype: str,
                   attention: str, checkpointing: bool, training: bool, optimizer: str = "adamw",
                   step: bool = False) -> dict[str, Any]:
    """A request for the engine at a few sequence lengths per config, each at max_position = seq_len as the
    Memory page's sweeps are (ModelConfig.replace(max_position=S))."""
    pts = [{"config": c.replace(max_position=s).to_dict(), "seq_len": s} for c in cfgs for s in seq_lens[c.name]]
    return {"points": pts[:MAX_POINTS], "batch_size": batch_size, "dtype": dtype, "attention": attention,
            "checkpointing": checkpointing, "training": training, "optimizer": optimizer, "step": step}


def run_points(request: dict[str, Any]) -> dict[str, Any]:
    """The engine on fake tensors at each point: the saved bytes (training) or the eval forward's peak, and with
    "step" the training step's peak; the source that can express each config (measure.default_kind)."""
    from . import core as engine
    from .measure import default_kind, maker

    out: list[dict[str, Any]] = []
    for p in request["points"][:MAX_POINTS]:
        cfg = ModelConfig.from_dict(p["config"])
        kind = default_kind(cfg, request["checkpointing"])
        run = engine.Run(request["batch_size"], p["seq_len"], dtype=request["dtype"], attention=request["attention"],
                         checkpointing=request["checkpointing"] and request["training"],
                         optimizer=request.get("optimizer", "adamw"))
        what: tuple[str, ...] = ("saved",) if request["training"] else ("inference",)
        if request.get("step"):
            what += ("step",)
        try:
            r = engine.measure(maker(cfg, kind, request["attention"]), cfg.vocab_size, run, what=what)
        except engine.EngineError as e:
            return {"points_error": f"{cfg.name} at seq_len {p['seq_len']:,}: {e}"}
        out.append({"config": cfg.name, "seq_len": p["seq_len"], "kind": kind,
                    "measured": r.saved if request["training"] else r.inference,
                    "step": r.step.peak if r.step is not None else None})
    return {"points": out, "how": "fake tensors: PyTorch's real ops without storage"}


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


def _start_threads() -> None:
    """Start torch's OpenMP threads before the cap: libgomp starts them at the first parallel op, and past the cap
    their stacks cannot be mapped, so it ends the process ("libgomp: Thread creation failed", exit code 1) with
    no result to report, where an allocation past it gives the out-of-memory message."""
    import torch

    torch.ones(1 << 18).sum()  # a parallel reduction (at::parallel_reduce): every intra-op thread starts


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


def own_process(request: dict[str, Any]) -> bool:
    """Whether the request runs in a fresh process of its own: a real-tensor measurement holds real memory (its
    weights and activations), which a process that stays alive would keep. Everything else (fake tensors, a
    count, the Memory page's points) is served by the warm measurement process where the server has one."""
    return bool(request.get("real")) and bool(request.get("measure", True)) and "points" not in request


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The result of one request (both the one-shot child and the warm process)."""
    try:
        return (run_points(request) if "points" in request else
                run(request, count=request.get("count", True), measure=request.get("measure", True)))
    except MemoryError:  # past the cap before the measurement (imports, the meta build)
        return {"out_of_memory": True}


def main(argv: list[str]) -> int:
    import argparse

    p = argparse.ArgumentParser(description="Run one Verify request (JSON on stdin, JSON on stdout), or with "
                                            "--serve one request per line until stdin closes.")
    p.add_argument("--memory-mb", type=int, default=0, help="cap on this process's data memory, MiB (0: none)")
    p.add_argument("--serve", action="store_true", help="stay warm: one JSON request per line, each with memory_mb")
    args = p.parse_args(argv)
    _die_with_parent()
    _first_to_go()
    from ..estimate.serving import skip_torchao

    skip_torchao()  # never quantizes: transformers' torchao import (0.4 s, messages on stderr) is skipped
    if args.serve:
        return serve()
    if args.memory_mb:
        _start_threads()
        _limit_memory(args.memory_mb * MIB)
    out = answer(json.loads(sys.stdin.read()))
    out["peak_rss"] = _peak_rss()
    out["cpu_seconds"] = _cpu_seconds()  # the whole process: interpreter, imports, the request
    sys.stdout.write(json.dumps(out))
    return 0


def _cpu_seconds() -> float:
    """CPU seconds this process has used (user + system, all its threads): a cost that a busy machine's load
    does not inflate the way it inflates wall time."""
    import time

    return time.process_time()


# ---- the warm measurement process ----------------------------------------------------------------------

class Stopped(BaseException):
    """Raised in the warm process's main thread when the runner stops the running request (Cancel, the time limit,
    a closed session). A BaseException, so no `except Exception` on the way (the engine's, torch's) keeps it."""


def serve() -> int:
    """Import once, then answer requests one at a time (albert_core.engine.runner.WarmProcess is the other side).

    Protocol, one JSON object per line each way. Out: first {"ready": true, "pid", "rss", "seconds", ...} once
    torch and transformers are imported; then one {"id", "result", "rss": resident bytes after it, "retire": why
    this process should not serve another, or null} per request. In: a request as `answer` takes it plus "id"
    and "memory_mb" (the cap for this request), or {"stop": id}: the request with that id is interrupted
    (Stopped, raised in the main thread at the engine's next safe point: before an op, between a build's parts) and
    answered {"stopped": true}; the process then checks that the interrupted build left nothing set (torch's mode
    stacks, grad mode, autocast, saved-tensor hooks, the engine's patch of transformers' is_tracing) and retires if it
    did. (A Stopped that lands in a finalizer, which Python drops, is raised again: on_unraisable; should none land,
    the runner ends the process when no answer comes within its grace period.) Stdout carries only these lines: anything a
    library prints goes to stderr. The process ends when stdin closes, or after a reply that says retire.
    """
    import queue
    import threading
    import time

    from . import dispatch

    t0 = time.perf_counter()
    reply = _protocol_out()
    niced = _nice(IMPORT_NICE)  # the imports yield the CPU to the server and the first visit's browser
    _start_threads()  # imports torch, and starts its threads before any cap (see _start_threads)
    t1, cpu1 = time.perf_counter(), _cpu_seconds()
    warm_up()
    if niced:
        _nice(0)  # measured at the server's own priority where this process may go back (root, CAP_SYS_NICE)
    state: dict[str, Any] = {"current": None, "stop": None}  # the running request's id; the id asked to stop
    lines: queue.Queue[dict[str, Any] | None] = queue.Queue()

    def safe_point() -> None:  # the engine calls it in the main thread, where an exception passes through torch
        if state["current"] is not None and state["stop"] == state["current"]:
            state["current"] = None  # once per request: the unwinding's own ops are not interrupted again
            raise Stopped

    def read() -> None:  # owns stdin: requests go to the main thread, a stop to its next safe point
        for raw in sys.stdin:
            if raw.strip():
                msg = json.loads(raw)
                if "stop" in msg:
                    state["stop"] = msg["stop"]
                else:
                    lines.put(msg)
        lines.put(None)

    def on_unraisable(u: Any) -> None:
        """A Stopped raised where Python drops it (a safe point reached inside a finalizer: a weakref callback, a
        __del__) would let the build run on past the runner's grace period, which then ends this process: ask
        again, at the next safe point."""
        if isinstance(u.exc_value, Stopped) and state["stop"] is not None:
            state["current"] = state["stop"]  # the stopped request is still running: it was raised inside it
            return
        default_unraisable(u)

    default_unraisable = sys.unraisablehook
    sys.unraisablehook = on_unraisable
    dispatch.safe_point = safe_point  # the hook engine/dispatch.py calls before each op that computes
    threading.Thread(target=read, name="albert-warm-stdin", daemon=True).start()
    _say(reply, {"ready": True, "pid": os.getpid(), "rss": _rss(), "seconds": time.perf_counter() - t0,
                 "nice": os.getpriority(os.PRIO_PROCESS, 0),
                 "import_cpu_seconds": cpu1, "warm_up_seconds": time.perf_counter() - t1,
                 "warm_up_cpu_seconds": _cpu_seconds() - cpu1})
    while (request := lines.get()) is not None:
        answered = _serve_one(request, state)
        _say(reply, answered)
        if answered["retire"]:
            return 0
    return 0


IMPORT_NICE = 10  # the warm process's priority while it imports (it starts right after the server's first page)


def _nice(value: int) -> bool:
    """Set this process's nice value; False where it may not (lowering it needs CAP_SYS_NICE: an unprivileged
    process then stays at IMPORT_NICE, which on an otherwise idle server changes nothing, and leaves the pages
    the CPU first while a build runs)."""
    try:  # Linux sets a thread's priority (PRIO_PROCESS with a tid): each of this process's threads, torch's too
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tids = [0]
    try:
        for tid in tids:
            os.setpriority(os.PRIO_PROCESS, tid, value)
        return True
    except (PermissionError, OSError, AttributeError):
        return False


def _serve_one(request: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    """One request in the warm process, under its cap, interruptible while it runs (state["current"] is its id);
    the reply line: {"id", "result", "rss", "retire"}."""
    rid = request.pop("id", None)
    cpu = _cpu_seconds()
    cap = int(request.pop("memory_mb", 0)) * MIB
    _reset_peak()
    retire = None
    try:
        try:
            state["current"] = rid
            if rid is not None and state["stop"] == rid:  # stopped before it began
                raise Stopped
            if cap:
                _soft_limit(cap)
            out = answer(request)
        finally:
            state["current"] = None
            _soft_limit(None)
    except Stopped:  # raised at the latest as the finally above began: its cap may still be set
        _soft_limit(None)
        out = {"stopped": True}
        left = _left_set()
        retire = f"was replaced: a stopped build left {left} set" if left else None
    except MemoryError:
        out = {"out_of_memory": True}
    except Exception as e:  # noqa: BLE001 - a bug must reach the page as a message; this process then retires
        out = {"failed": f"{type(e).__name__}: {str(e)[:300]}"}
        retire = "stopped on an error in its last build"
    if out.get("out_of_memory"):
        retire = "ran past its memory cap in its last build"
    out["peak_rss"] = _peak_rss()
    out["cpu_seconds"] = _cpu_seconds() - cpu  # this request's
    _settle()
    return {"id": rid, "result": out, "rss": _rss(), "retire": retire}


def _left_set() -> str:
    """What an interrupted build left set in this process ("" when nothing): the next build would run under it."""
    import torch

    left = [name for name, bad in (
        ("a torch dispatch mode", torch._C._len_torch_dispatch_stack() != 0),
        ("a torch function mode", torch._C._len_torch_function_stack() != 0),
        ("grad mode off", not torch.is_grad_enabled()),
        ("autocast", torch.is_autocast_enabled("cpu")),
        ("saved-tensor hooks", torch._C._autograd._top_saved_tensors_default_hooks(False) is not None),
        ("the engine's is_tracing patch", _tracing_patched())) if bad]
    return ", ".join(left)


def _tracing_patched() -> bool:
    return any(getattr(getattr(sys.modules.get(m), "is_tracing", None), "__name__", "") == "real_paths"
               for m in ("transformers.masking_utils", "transformers.modeling_attn_mask_utils"))


def warm_up() -> None:
    """Import transformers' model code for every family (BertModel ... ModernBertModel) at start, not at each
    family's first build: 0.25 s here. (A first small run of the engine as well made no difference to the first
    request that a busy 2-core machine could show, 2026-12-03, and cost about 1 s of CPU per start.)"""
    from ..families import family
    from ..names import FAMILIES

    for name in FAMILIES:
        family(name).hf_classes(False)
    _settle()


def _protocol_out() -> Any:
    """A private copy of stdout for the protocol's lines; fd 1 itself then points at stderr, so a library's
    print() cannot break a line the runner reads."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    return out


def _say(out: Any, obj: dict[str, Any]) -> None:
    out.write(json.dumps(obj) + "\n")
    out.flush()


def _reset_peak() -> None:
    """Start VmHWM again from the current RSS (Linux >= 4.0: "5" to /proc/self/clear_refs), so each request's
    peak_rss is its own, not the highest of this process's life."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _soft_limit(limit_bytes: int | None) -> None:
    """The request's cap as RLIMIT_DATA's soft limit (None: none); the hard limit stays as it is, so the next
    request can raise it again."""
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    soft = resource.RLIM_INFINITY if limit_bytes is None else limit_bytes
    if hard != resource.RLIM_INFINITY:
        soft = hard if soft == resource.RLIM_INFINITY else min(soft, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def _settle() -> None:
    """Give back what a request left: Python's cycles, FakeTensorMode's class-wide dispatch cache, and the C
    heap's free pages (glibc malloc_trim)."""
    import gc

    gc.collect()
    try:
        from torch._subclasses.fake_tensor import FakeTensorMode

        FakeTensorMode.cache_clear()
    except (ImportError, AttributeError):
        pass
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
