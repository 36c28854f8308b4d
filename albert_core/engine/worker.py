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

The request is a types.Request: a config (or a config.json no family models), its source (Hugging Face's model or
the reference encoder), the Workload (batch, seq_len, precision, attention, checkpointing, optimizer and foreach; its
device names only the optimizer's foreach default, the engine runs on this CPU; a fine-tuning mode or task head
builds Hugging Face's task model, peft's for LoRA: engine.finetuned.build, as `verify --train`), real or fake
tensors, what to count and measure. The Memory page's points are a types.PointsRequest. The answer is a types.Answer
(types.PointsAnswer): "built" (parameters PyTorch built), "by_module", "count_diff" (where a count differs) or
"count_error"; "measurement" (saved bytes, estimate, breakdown) or "measure_error"; "step" (the training step's peak
by category) and "inference" (the eval forward's peak) where measured; "how" (fake or real tensors); "peak_rss"
(the child's peak resident bytes), "import_rss"; for a fine-tuned model "trainable_built" (the parameters that
require grad, as peft counts them). Both cross the process boundary as JSON in one place: answer().
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from collections.abc import Mapping
from typing import Any

from ..config import ModelConfig
from ..workload import Workload
from . import torch_build
from .process import _die_with_parent, _first_to_go, _limit_memory, _peak_rss, _rss, _start_threads
from .types import Answer, Plan, PointAnswer, PointsAnswer, PointsRequest, Request

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


def finetune_maker(cfg: ModelConfig, w: Workload, counted: dict[str, int]) -> Any:
    """A function that builds w's task model of cfg on the CPU for the engine (finetuned.build: peft's get_peft_model
    for LoRA) and puts what it built in `counted` ("trainable", "total", as peft counts)."""
    from . import finetuned

    def make() -> Any:
        model = finetuned.build(cfg, w.mode, head=w.head, num_labels=max(w.num_labels, 1), lora=w.lora,
                               device="cpu", attention=w.attention)
        counted["trainable"], counted["total"] = finetuned.count_built(model)
        return model

    return make


def _trainable(cfg: ModelConfig, w: Workload) -> Any:
    """finetune.trainable of w's mode, head and LoRA (a head without labels counted with one)."""
    from ..estimate.finetune import trainable

    return trainable(cfg, w.mode, head=w.head, num_labels=max(w.num_labels, 1), lora=w.lora)


def finetune_error(request: Request) -> str | None:
    """Why the request's fine-tuned model cannot be built (None when it can, or for the base model)."""
    from ..formats.hf import hf_expressible

    if not request.fine_tuned:
        return None
    if request.config is None:
        return "a fine-tuning mode or a task head needs a config one of the families models"
    if request.source != "hf":
        return ("a fine-tuning mode or a task head builds Hugging Face's task model (peft's for LoRA), not the "
                "reference encoder: choose Hugging Face's model")
    cfg = request.config
    if not hf_expressible(cfg):
        return (f"Hugging Face builds sharing '{cfg.sharing}' of family '{cfg.family}' unshared, so its task model "
                "would not be the one albert_core counts: choose sharing 'none' (or an ALBERT sharing all), or full "
                "fine-tuning with no head")
    try:
        _trainable(cfg, request.workload)
    except ValueError as e:
        return str(e)
    return None


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


def estimate(request: Request, imports: int | None = None) -> dict[str, int]:
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
    cfg, w = request.config, request.workload
    if cfg is None or not request.real:
        layers = 0 if cfg is None else models.layer_modules(cfg, request.source)
        working = FAKE_BASE_BYTES + FAKE_PER_LAYER_BYTES * layers
        return {"imports": held, "weights": 0, "activations": 0, "working": working, "total": held + working}
    built = hf_built_config(cfg) if request.source == "hf" else cfg
    n = _trainable(cfg, w).total if request.fine_tuned else count_parameters(built).total  # a head and adapters too
    weights = 4 * n  # float32: torch.float32 element size
    act = activation_memory(built, w.replace(device="cpu")).total
    num, den = WORKING_PER_ACTIVATION
    working = WORKING_BASE_BYTES + act * num // den
    return {"imports": held, "weights": weights, "activations": act, "working": working,
            "total": held + weights + act + working}


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


def plan(request: Request, budget_bytes: int, imports: int | None = None) -> Plan:
    """What the child may do within budget_bytes: count, measure, why not, and the bytes it would need.

    No torch: a request refused here never starts a process that would build anything.
    """
    from ..estimate.activations import check_inputs
    from . import models
    from .measure import check_kind

    reason = floor_error(budget_bytes, imports) or finetune_error(request)
    if reason:
        return Plan(count=False, measure=False, count_error=reason, measure_error=reason)
    w, cfg = request.workload, request.config
    measure_error: str | None = None
    if cfg is not None:
        layers = models.layer_modules(cfg, request.source)
        if layers > models.MAX_BUILD_LAYERS:
            reason = (f"Building {cfg.name} creates {layers:,} layer modules; this server builds at most "
                      f"{models.MAX_BUILD_LAYERS:,}. Lower num_layers or share whole layers.")
            return Plan(count=False, measure=False, count_error=reason, measure_error=reason)
        measure_error = applications_error(cfg)
        try:
            check_kind(cfg, request.source, w.checkpointing)
            check_inputs(cfg, w.replace(device="cpu"))
        except ValueError as e:  # seq_len beyond max_position, a dtype the CPU cannot run, ...
            measure_error = measure_error or str(e)
    if measure_error:
        return Plan(count=True, measure=False, measure_error=measure_error)
    try:
        est = estimate(request, imports)
    except ValueError as e:
        return Plan(count=True, measure=False, measure_error=str(e))
    if est["total"] > budget_bytes:
        return Plan(count=True, measure=False, measure_error=_too_big(request, est, budget_bytes), estimate=est)
    return Plan(count=True, measure=True, estimate=est)


def _too_big(request: Request, est: dict[str, int], budget: int) -> str:
    parts = ", ".join(f"{k} {v / MIB:,.0f} MiB" for k, v in est.items() if k != "total")
    if not request.real:  # fake tensors: only the build's Python objects grow, with the layer modules
        return (f"measuring {request.name} on fake tensors would need about {est['total'] / MIB:,.0f} MiB ({parts}), "
                f"over the {budget / MIB:,.0f} MiB this server has for one build: the build holds a Python object per "
                "module, so lower num_layers or share whole layers (a shared layer is built once)")
    w = request.workload
    return (f"measuring {request.name} at batch {w.batch_size}, seq_len {w.seq_len} on real tensors would "
            f"need about {est['total'] / MIB:,.0f} MiB ({parts}), over the {budget / MIB:,.0f} MiB this server has for "
            "one build: measure on fake tensors (the default: PyTorch's real ops without storage, any size), or "
            "lower the batch size or sequence length")


def _maker(request: Request, counted: dict[str, int] | None = None) -> tuple[Any, int]:
    """(make, vocab_size) for the request's model (a fine-tuned one puts its counts in `counted`)."""
    from . import core as engine
    from .measure import maker

    w = request.workload
    if request.config is None:
        assert request.hf_config is not None
        d = dict(request.hf_config)
        vocab = d.get("vocab_size")
        if not isinstance(vocab, int) or isinstance(vocab, bool) or vocab < 1:
            raise engine.EngineError(f"config.json of model_type {d.get('model_type')!r} needs a vocab_size of at "
                                     f"least 1 to make input_ids, got {vocab!r}")
        return (lambda: engine.build_auto(d, w.attention)), vocab
    cfg = request.config
    if request.fine_tuned:
        return finetune_maker(cfg, w, {} if counted is None else counted), cfg.vocab_size
    return maker(cfg, request.source, w.attention), cfg.vocab_size


def run(request: Request) -> Answer:
    """Build, count and measure (saved bytes, the training step's peak, the inference peak) on the engine, as much
    as request.count and request.measure ask."""
    from . import core as engine
    from . import measure as measuring

    counted: dict[str, int] = {}
    try:
        make, vocab = _maker(request, counted)
        r = _measure(request, make, vocab)
    except (engine.EngineError, ValueError) as e:  # transformers or peft cannot build it, or an op needs values
        if not isinstance(e, engine.EngineError) and not request.fine_tuned:
            raise
        return {"count_error": str(e), "measure_error": str(e), "import_rss": _rss()}
    except (MemoryError, RuntimeError) as e:  # past the cap: torch's "DefaultCPUAllocator: can't allocate"
        if not isinstance(e, MemoryError) and "alloc" not in str(e).lower():
            raise
        return {"out_of_memory": True, "import_rss": _rss()}
    out: Answer = {"import_rss": _rss(), "how": r.how}
    if request.count:
        out["built"], out["by_module"] = r.parameters, r.by_module
        if request.fine_tuned:
            out["trainable_built"] = counted.get("trainable")  # beside finetune.trainable's count (the page)
        elif request.config is not None:
            out["count_diff"] = measuring.count_difference(request.config, request.source, r.by_module)
    if request.measure:
        out.update(_numbers(request, r))
    return out


def _measure(request: Request, make: Any, vocab: int) -> Any:
    from . import core as engine

    run = engine.Run(request.workload, fake=not request.real)
    if not request.measure:  # count only: on fake tensors, whatever the request, so no weight is ever allocated
        return engine.measure(make, vocab, dataclasses.replace(run, fake=True), what=())
    what: tuple[str, ...] = ("saved", "step")
    if request.fine_tuned:  # a task model: no closed form of its eval forward beside it
        return engine.measure(make, vocab, run, what=what)
    cfg = request.config
    if cfg is None or (request.source == "hf" and _inference_modelled(cfg)):  # modelled on HF's code
        what += ("inference",)
    return engine.measure(make, vocab, run, what=what)


def _inference_modelled(cfg: ModelConfig) -> bool:
    from ..estimate.activations import family_ops

    return hasattr(family_ops(cfg), "infer_layer")


def _numbers(request: Request, r: Any) -> Answer:
    """The measurements, each beside albert_core's estimate where a family models the config."""
    from dataclasses import asdict

    from ..estimate.activations import activation_memory
    from . import core as engine
    from .measure import _estimate_config

    out: Answer = {}
    w, cfg = request.workload, request.config
    est = inf_est = est_cuda = None
    if cfg is not None and not request.fine_tuned:  # a fine-tuned model's saved tensors have no closed form
        ecfg = _estimate_config(cfg, request.source)
        est = activation_memory(ecfg, w.replace(device="cpu")).total
        try:  # the same forward as the Memory page counts it, for CUDA's kernels (replay/symbolic.py: what differs)
            est_cuda = activation_memory(ecfg, w.replace(device="cuda")).total
        except ValueError:
            est_cuda = None
        if r.inference is not None:
            inf_est = activation_memory(ecfg, w.replace(device="cpu", checkpointing=False), training=False).total
    out["measurement"] = {
        "total": r.saved, "estimate": est, "estimate_cuda": est_cuda,
        "error": None if est is None else engine.relative_error(est, r.saved),
        "kind": request.source, "batch_size": w.batch_size, "seq_len": w.seq_len,
        "dtype": w.precision, "attention": w.attention, "checkpointing": w.checkpointing,
        "fake": r.run.fake, "fine_tuned": request.fine_tuned,
        "breakdown": engine.saved_breakdown(r.saved_tensors)}
    if r.step is not None:
        s = asdict(r.step)
        out["step"] = {"peak": s["peak"], "phase": s["phase"], "module": s["module"], "at_peak": s["at_peak"],
                       "at_start": s["at_start"], "host_bytes": s["host_bytes"], "optimizer": r.run.workload.optimizer}
    if r.inference is not None:
        out["inference"] = {"total": r.inference, "estimate": inf_est}
    out["engine_seconds"], out["engine_timings"] = r.seconds, r.timings
    return out


# ---- measured points for the Memory page's charts ----------------------------------------------------
MAX_POINTS = 24  # points one request may measure (the page asks for at most 4 lengths of at most 6 configs)


def points_request(cfgs: list[ModelConfig], seq_lens: dict[str, list[int]], w: Workload, *, training: bool,
                   step: bool = False) -> PointsRequest:
    """A request for the engine at a few sequence lengths per config, each at max_position = seq_len as the
    Memory page's sweeps are (ModelConfig.replace(max_position=S)), each point's seq_len in place of w's;
    training: the saved bytes (else the eval forward's peak); step: the training step's peak too."""
    pts = tuple((c.replace(max_position=s), s) for c in cfgs for s in seq_lens[c.name])
    return PointsRequest(pts[:MAX_POINTS], w, training, step)


def run_points(request: PointsRequest) -> PointsAnswer:
    """The engine on fake tensors at each point: the saved bytes (training) or the eval forward's peak, and with
    step the training step's peak; the source that can express each config (measure.default_kind)."""
    from . import core as engine
    from .measure import default_kind, maker

    training, w = request.training, request.workload
    w = w.replace(checkpointing=w.checkpointing and training)
    points = request.points[:MAX_POINTS]
    for cfg, _ in points:  # refused before any is measured
        if reason := applications_error(cfg):
            return {"points_error": reason[0].upper() + reason[1:] + "."}
    out: list[PointAnswer] = []
    for cfg, seq_len in points:
        kind = default_kind(cfg, w.checkpointing)
        what: tuple[str, ...] = ("saved",) if training else ("inference",)
        if request.step:
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


def own_process(message: Mapping[str, object]) -> bool:
    """Whether a request (as the runner ships it: to_dict's JSON) runs in a fresh process of its own: a real-tensor
    measurement holds real memory (its weights and activations), which a process that stays alive would keep.
    Everything else (fake tensors, a count, the Memory page's points) is served by the warm measurement process where
    the server has one."""
    return bool(message.get("real")) and bool(message.get("measure", True)) and "points" not in message


def answer(message: dict[str, Any]) -> dict[str, Any]:
    """The serialization boundary, both in the one-shot child and in the warm process: one request's JSON (a
    Request's or a PointsRequest's to_dict) in, its Answer's (PointsAnswer's) JSON out."""
    try:
        if "points" in message:
            try:
                points = PointsRequest.from_dict(message)
            except ValueError as e:
                return {"points_error": str(e)}
            return dict(run_points(points))
        try:
            request = Request.from_dict(message)
        except ValueError as e:
            return {"count_error": str(e), "measure_error": str(e)}
        return dict(run(request))
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
