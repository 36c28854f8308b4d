"""One Verify request: build the model in PyTorch, count it, measure it on the engine; plain numbers out.

`plan(request)` (no torch) checks the request, estimates the measuring process's peak memory and
decides what the child may do; `run(request)` does the work (torch imported inside, callable
in-process by tests); `python -m albert_core.engine.worker --memory-mb N` is the one-shot child (albert_core.engine.runner
starts one per real-tensor request, and per request when the warm process is off): it caps its own memory
with RLIMIT_DATA, reads the request as JSON on stdin, writes the result as JSON on stdout and exits, so no
model, tensor or torch module ever lives in the server's process. `python -m albert_core.engine.warm` is
the warm measurement process (`serve`): it imports torch and transformers once, says it is ready with one
JSON line, then answers one JSON line per request line (fake tensors only), each under the memory cap the
request names, until its stdin closes or it asks to be retired.

Request: {"config": ModelConfig.to_dict()} or {"hf_config": a config.json dict of a model_type no
family models}, with "source": "reference" | "hf", "workload": Workload.to_dict() (batch, seq_len, precision,
attention, checkpointing, optimizer and foreach; its device names only the optimizer's foreach default, the engine
runs on this CPU; a fine-tuning mode or task head builds Hugging Face's task model, peft's for LoRA:
engine.finetuned.build, as `verify --train`), "real" (default false: fake tensors). Result:
"built" (parameters PyTorch built), "by_module", "count_diff" (where a count differs) or
"count_error"; "measurement" (saved bytes, estimate, breakdown) or "measure_error"; "step" (the
training step's peak by category) and "inference" (the eval forward's peak) where measured;
"how" (fake or real tensors); "peak_rss" (the child's peak resident bytes), "import_rss"; for a fine-tuned
model "trainable_built" (the parameters that require grad, as peft counts them).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from typing import Any

from ..config import ModelConfig
from ..workload import Workload
from . import torch_build
from .process import _die_with_parent, _first_to_go, _limit_memory, _peak_rss, _rss, _start_threads

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


def workload_of(request: dict[str, Any]) -> Workload:
    """The request's workload; a ValueError says what is wrong with it (Workload.from_dict)."""
    return Workload.from_dict(request.get("workload"))


def finetune_of(request: dict[str, Any]) -> dict[str, Any] | None:
    """The request's fine-tuning as finetune.trainable and build take it ({"mode", "head", "num_labels", "lora":
    LoraSpec or None}), or None for the base model in full fine-tuning (full with no head)."""
    w = workload_of(request)
    if w.mode == "full" and w.head == "none":
        return None
    return {"mode": w.mode, "head": w.head, "num_labels": max(w.num_labels, 1), "lora": w.lora}


def finetune_maker(cfg: ModelConfig, ft: dict[str, Any], attention: str, counted: dict[str, int]) -> Any:
    """A function that builds ft's task model of cfg on the CPU for the engine (finetuned.build: peft's
    get_peft_model for LoRA) and puts what it built in `counted` ("trainable", "total", as peft counts)."""
    from . import finetuned

    def make() -> Any:
        model = finetuned.build(cfg, ft["mode"], head=ft["head"], num_labels=ft["num_labels"], lora=ft["lora"],
                               device="cpu", attention=attention)
        counted["trainable"], counted["total"] = finetuned.count_built(model)
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


def import_bytes(measured: int | None = None) -> int:
    """What a process with PyTorch holds before it builds anything: `measured` where the app has measured its warm
    process at rest (engine/runner.Runner.rest_rss), else IMPORT_BYTES for the build installed here (the CUDA build
    holds more: engine/torch_build.py)."""
    if measured:
        return measured
    build = installed_build()
    return IMPORT_BYTES + (build.expected_rest_bytes() - torch_build.CPU_REST_BYTES if build else 0)


def runtime_notes(imports: int | None = None) -> list[str]:
    """What the app and the CLI say once where they measure: the torch or transformers release, if it is not the
    verified one, and PyTorch's CUDA build on a machine without a GPU (torch_build.py). imports: as estimate's."""
    notes = [torch_build.version_note(_installed_versions()), torch_build.cuda_note(installed_build(), imports)]
    return [n for n in notes if n]


@functools.cache
def _installed_versions() -> dict[str, str | None]:
    return torch_build.installed_versions()


@functools.cache
def installed_build() -> torch_build.TorchBuild | None:
    """The installed torch's build (read once, without importing it: torch_build.installed)."""
    return torch_build.installed()


def estimate(request: dict[str, Any], imports: int | None = None) -> dict[str, int]:
    """Bytes the measuring child needs at its peak: {"imports", "weights", "activations", "working", "total"}.
    imports: import_bytes's `measured` (None: the expected size of the build installed here).

    Fake tensors (the default): the imports and the Python objects of the build, no weights, no
    activations. Real tensors: weights are the parameters of what the source builds, 4 bytes each
    (every model is built in float32 and a 16-bit dtype is cast after), activations are
    activation_memory(..., device="cpu"), which equals the bytes autograd saves.
    """
    from ..estimate.activations import activation_memory
    from ..estimate.params import count_parameters
    from ..formats.hf import hf_built_config
    from . import models

    held = import_bytes(imports)
    if is_generic(request) or not request.get("real"):
        layers = 0 if is_generic(request) else models.layer_modules(config_of(request), request["source"])
        working = FAKE_BASE_BYTES + FAKE_PER_LAYER_BYTES * layers
        return {"imports": held, "weights": 0, "activations": 0, "working": working, "total": held + working}
    cfg = config_of(request)
    built = hf_built_config(cfg) if request["source"] == "hf" else cfg
    ft, w = finetune_of(request), workload_of(request)
    n = count_parameters(built).total if ft is None else _trainable(cfg, ft).total  # a head and adapters too
    weights = 4 * n  # float32: torch.float32 element size
    act = activation_memory(built, w.replace(device="cpu")).total
    num, den = WORKING_PER_ACTIVATION
    working = WORKING_BASE_BYTES + act * num // den
    return {"imports": held, "weights": weights, "activations": act, "working": working,
            "total": held + weights + act + working}


def _trainable(cfg: ModelConfig, ft: dict[str, Any]) -> Any:
    from ..estimate.finetune import trainable

    return trainable(cfg, ft["mode"], head=ft["head"], num_labels=ft["num_labels"], lora=ft["lora"])


def floor_error(budget_bytes: int, imports: int | None = None) -> str | None:
    """Why no build process can start within budget_bytes (PyTorch's imports alone), or None. imports: as estimate's;
    where the installed torch is a CUDA build on a machine without a GPU, the message says what that costs."""
    floor = import_bytes(imports) + FAKE_BASE_BYTES
    if floor <= budget_bytes:
        return None
    cost = torch_build.cuda_cost(installed_build(), imports)  # the cause in a clause (Verify's note says the rest)
    return (f"this server has {budget_bytes / MIB:,.0f} MiB free for a build, less than the {floor / MIB:,.0f} MiB a "
            "process with PyTorch needs before building anything: run the explorer where more memory is free, or "
            "set ALBERT_EXPLORER_MEMORY_BUDGET_MB if the server has it"
            + (f"; {cost}, and its CPU build would leave more (`{torch_build.CPU_INSTALL}`)" if cost else ""))


def applications_error(cfg: ModelConfig) -> str | None:
    """Why cfg is not measured (too many layer applications for one measurement: models.MAX_MEASURE_APPLICATIONS),
    or None. Its parameters are still counted: what is slow is running the layers, not building them."""
    from . import models

    apps = cfg.layer_applications
    if apps <= models.MAX_MEASURE_APPLICATIONS:
        return None
    stored = cfg.effective_groups  # layers with weights of their own; fewer than the applications when shared
    shared = f" ({stored:,} stored layer{'s' if stored > 1 else ''}, run {apps:,} times)" if stored < apps else ""
    return (f"measuring {cfg.name} runs {apps:,} layer applications{shared}, and this server measures at most "
            f"{models.MAX_MEASURE_APPLICATIONS:,} in one build (each runs every op of a layer, about 50 ms on fake "
            f"tensors): lower num_layers to {models.MAX_MEASURE_APPLICATIONS // cfg.inner_group_num:,} or fewer; sharing layers saves "
            "weights, not the time or activations of running them")


def plan(request: dict[str, Any], budget_bytes: int, imports: int | None = None) -> dict[str, Any]:
    """What the child may do within budget_bytes: {"count": bool, "measure": bool, reasons, "estimate"}.

    No torch: a request refused here never starts a process that would build anything.
    """
    from ..estimate.activations import check_inputs
    from . import models
    from .measure import check_kind

    out: dict[str, Any] = {"count": True, "measure": True}
    reason = floor_error(budget_bytes, imports)
    if reason:
        return {"count": False, "measure": False, "count_error": reason, "measure_error": reason}
    try:
        w = workload_of(request)
    except ValueError as e:
        reason = f"the request's workload: {e}"
        return {"count": False, "measure": False, "count_error": reason, "measure_error": reason}
    reason = finetune_error(request)
    if reason:
        return {"count": False, "measure": False, "count_error": reason, "measure_error": reason}
    if not is_generic(request):
        cfg = config_of(request)
        layers = models.layer_modules(cfg, request["source"])
        if layers > models.MAX_BUILD_LAYERS:
            reason = (f"Building {cfg.name} creates {layers:,} layer modules; this server builds at most "
                      f"{models.MAX_BUILD_LAYERS:,}. Lower num_layers or share whole layers.")
            return {"count": False, "measure": False, "count_error": reason, "measure_error": reason}
        reason = applications_error(cfg)
        if reason:
            out.update(measure=False, measure_error=reason)
        try:
            check_kind(cfg, request["source"], w.checkpointing)
            check_inputs(cfg, w.batch_size, w.seq_len, w.forward_dtype, w.attention, "cpu")
        except ValueError as e:  # seq_len beyond max_position, a dtype the CPU cannot run, ...
            out.update(measure=False, measure_error=out.get("measure_error") or str(e))
    if out["measure"]:
        try:
            est = estimate(request, imports)
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
    w = workload_of(request)
    return (f"measuring {name} at batch {w.batch_size}, seq_len {w.seq_len} on real tensors would "
            f"need about {est['total'] / MIB:,.0f} MiB ({parts}), over the {budget / MIB:,.0f} MiB this server has for "
            "one build: measure on fake tensors (the default: PyTorch's real ops without storage, any size), or "
            "lower the batch size or sequence length")


def _run_of(request: dict[str, Any]) -> Any:
    from . import core as engine

    return engine.Run(workload_of(request), fake=not request.get("real", False))


def _maker(request: dict[str, Any], counted: dict[str, int] | None = None) -> tuple[Any, int, Any]:
    """(make, vocab_size, cfg or None) for the request's model (a fine-tuned one puts its counts in `counted`)."""
    from . import core as engine
    from .measure import maker

    attention = workload_of(request).attention
    if is_generic(request):
        d = request["hf_config"]
        vocab = d.get("vocab_size")
        if not isinstance(vocab, int) or isinstance(vocab, bool) or vocab < 1:
            raise engine.EngineError(f"config.json of model_type {d.get('model_type')!r} needs a vocab_size of at "
                                     f"least 1 to make input_ids, got {vocab!r}")
        return (lambda: engine.build_auto(d, attention)), vocab, None
    cfg = config_of(request)
    ft = finetune_of(request)
    if ft is not None:
        return finetune_maker(cfg, ft, attention, {} if counted is None else counted), cfg.vocab_size, cfg
    return maker(cfg, request["source"], attention), cfg.vocab_size, cfg


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


def _numbers(request: dict[str, Any], r: Any, cfg: ModelConfig | None) -> dict[str, Any]:
    """The measurements as plain JSON, each beside albert_core's estimate where a family models the config."""
    from dataclasses import asdict

    from ..estimate.activations import activation_memory
    from . import core as engine
    from .measure import _estimate_config

    out: dict[str, Any] = {}
    w = workload_of(request)
    est = inf_est = est_cuda = None
    if cfg is not None and finetune_of(request) is None:  # a fine-tuned model's saved tensors have no closed form
        ecfg = _estimate_config(cfg, request["source"])
        est = activation_memory(ecfg, w.replace(device="cpu")).total
        try:  # the same forward as the Memory page counts it, for CUDA's kernels (replay/symbolic.py: what differs)
            est_cuda = activation_memory(ecfg, w.replace(device="cuda")).total
        except ValueError:
            est_cuda = None
        if r.inference is not None:
            inf_est = activation_memory(ecfg, w.replace(device="cpu", checkpointing=False), training=False).total
    out["measurement"] = {
        "total": r.saved, "estimate": est, "estimate_cuda": est_cuda, "error": None if est is None else engine.relative_error(est, r.saved),
        "kind": request.get("source", "hf"), "batch_size": w.batch_size, "seq_len": w.seq_len,
        "dtype": w.precision, "attention": w.attention, "checkpointing": w.checkpointing,
        "fake": r.run.fake, "fine_tuned": finetune_of(request) is not None,
        "breakdown": engine.saved_breakdown(r.saved_tensors)}
    if r.step is not None:
        out["step"] = asdict(r.step) | {"optimizer": r.run.workload.optimizer}
    if r.inference is not None:
        out["inference"] = {"total": r.inference, "estimate": inf_est}
    out["engine_seconds"], out["engine_timings"] = r.seconds, r.timings
    return out


# ---- measured points for the Memory page's charts ----------------------------------------------------
MAX_POINTS = 24  # points one request may measure (the page asks for at most 4 lengths of at most 6 configs)


def points_request(cfgs: list[ModelConfig], seq_lens: dict[str, list[int]], w: Workload, *, training: bool,
                   step: bool = False) -> dict[str, Any]:
    """A request for the engine at a few sequence lengths per config, each at max_position = seq_len as the
    Memory page's sweeps are (ModelConfig.replace(max_position=S)), each point's seq_len in place of w's;
    training: the saved bytes (else the eval forward's peak); step: the training step's peak too."""
    pts = [{"config": c.replace(max_position=s).to_dict(), "seq_len": s} for c in cfgs for s in seq_lens[c.name]]
    return {"points": pts[:MAX_POINTS], "workload": w.to_dict(), "training": training, "step": step}


def run_points(request: dict[str, Any]) -> dict[str, Any]:
    """The engine on fake tensors at each point: the saved bytes (training) or the eval forward's peak, and with
    "step" the training step's peak; the source that can express each config (measure.default_kind)."""
    from . import core as engine
    from .measure import default_kind, maker

    training = bool(request["training"])
    try:
        w = workload_of(request)
    except ValueError as e:
        return {"points_error": f"the request's workload: {e}"}
    w = w.replace(checkpointing=w.checkpointing and training)
    points = [(ModelConfig.from_dict(p["config"]), p["seq_len"]) for p in request["points"][:MAX_POINTS]]
    for cfg, _ in points:  # refused before any is measured
        if reason := applications_error(cfg):
            return {"points_error": reason[0].upper() + reason[1:] + "."}
    out: list[dict[str, Any]] = []
    for cfg, seq_len in points:
        kind = default_kind(cfg, w.checkpointing)
        what: tuple[str, ...] = ("saved",) if training else ("inference",)
        if request.get("step"):
            what += ("step",)
        try:
            r = engine.measure(maker(cfg, kind, w.attention), cfg.vocab_size,
                               engine.Run(w.replace(seq_len=seq_len)), what=what)
        except engine.EngineError as e:
            return {"points_error": f"{cfg.name} at seq_len {seq_len:,}: {e}"}
        out.append({"config": cfg.name, "seq_len": seq_len, "kind": kind,
                    "measured": r.saved if training else r.inference,
                    "step": r.step.peak if r.step is not None else None})
    return {"points": out, "how": "fake tensors: PyTorch's real ops without storage"}


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

    p = argparse.ArgumentParser(description="Run one Verify request (JSON on stdin, JSON on stdout); "
                                            "`python -m albert_core.engine.warm` serves one per line instead.")
    p.add_argument("--memory-mb", type=int, default=0, help="cap on this process's data memory, MiB (0: none)")
    args = p.parse_args(argv)
    _die_with_parent()
    _first_to_go()
    from ..estimate.serving import skip_torchao

    skip_torchao()  # never quantizes: transformers' torchao import (0.4 s, messages on stderr) is skipped
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
