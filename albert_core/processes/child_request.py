"""A build process: one Verify request run, in a process of its own, where torch is imported.

`python -m albert_core.processes.child_request --memory-mb N` is the one-shot child (parent_queue.Runner starts one
per real-tensor request, and per request when the warm process is off): it caps its own memory with RLIMIT_DATA
(limits.py), reads the request as JSON on stdin, writes the answer as JSON on stdout and exits, so no model, tensor
or torch module ever lives in the server's process. child_warm.py (the warm measurement process) answers one
request per line the same way, through answer(). run(request) does the work, callable in-process by the CLI and
the tests.

The request is a types.Request: a config (or a config.json no family models), its source (Hugging Face's model or
the reference encoder), the Workload (batch, seq_len, precision, attention, checkpointing, optimizer and foreach; its
device names only the optimizer's foreach default, the engine runs on this CPU; a fine-tuning mode or task head
builds Hugging Face's task model, peft's for LoRA: engine.task_model.build, as `verify --train`), real or fake
tensors, what to count and measure. The Memory page's points are a types.PointsRequest. The answer is a types.Answer
(types.PointsAnswer): "built" (parameters PyTorch built), "by_module", "count_diff" (where a count differs) or
"count_error"; "measurement" (saved bytes, estimate, breakdown) or "measure_error"; "step" (the training step's peak
by category) and "inference" (the eval forward's peak) where measured; "how" (fake or real tensors); "peak_rss"
(the child's peak resident bytes), "import_rss"; for a fine-tuned model "trainable_built" (the parameters that
require grad, as peft counts them). Both cross the process boundary as JSON in one place: answer().
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

from ..config import ModelConfig
from ..engine.models import applications_error
from ..engine.types import MAX_POINTS, Answer, PointAnswer, PointsAnswer, PointsRequest, Request
from ..workload import Workload
from .limits import MIB, _die_with_parent, _first_to_go, _limit_memory, _peak_rss, _rss, _start_threads


def finetune_maker(cfg: ModelConfig, w: Workload, counted: dict[str, int]) -> Any:
    """A function that builds w's task model of cfg on the CPU for the engine (task_model.build: peft's get_peft_model
    for LoRA) and puts what it built in `counted` ("trainable", "total", as peft counts)."""
    from ..engine import task_model

    def make() -> Any:
        model = task_model.build(cfg, w.mode, head=w.head, num_labels=max(w.num_labels, 1), lora=w.lora,
                               device="cpu", attention=w.attention)
        counted["trainable"], counted["total"] = task_model.count_built(model)
        return model

    return make



def _maker(request: Request, counted: dict[str, int] | None = None) -> tuple[Any, int]:
    """(make, vocab_size) for the request's model (a fine-tuned one puts its counts in `counted`)."""
    from ..choices import CONFIG_JSON_MODES
    from ..engine import core as engine
    from ..engine import task_model
    from ..engine.measure import maker

    w = request.workload
    if request.config is None:
        assert request.hf_config is not None
        d = dict(request.hf_config)
        vocab = d.get("vocab_size")
        if not isinstance(vocab, int) or isinstance(vocab, bool) or vocab < 1:
            raise engine.EngineError(f"config.json of model_type {d.get('model_type')!r} needs a vocab_size of at "
                                     f"least 1 to make input_ids, got {vocab!r}")
        if w.mode not in CONFIG_JSON_MODES:
            raise engine.EngineError(f"a config.json's model trains fully or with LoRA here, not {w.mode!r}")

        def make_auto() -> Any:
            model = engine.build_auto(d, w.attention, w.head, w.trained_lora)
            if counted is not None:
                counted["trainable"], counted["total"] = task_model.count_built(model)
            return model

        return make_auto, vocab
    cfg = request.config
    if request.fine_tuned:
        return finetune_maker(cfg, w, {} if counted is None else counted), cfg.vocab_size
    return maker(cfg, request.source, w.attention), cfg.vocab_size


def run(request: Request) -> Answer:
    """Build, count and measure (saved bytes, the training step's peak, the inference peak) on the engine, as much
    as request.count and request.measure ask."""
    from ..engine import core as engine
    from ..engine import measure as measuring

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
    from ..engine import core as engine

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

    from ..engine import core as engine
    from ..engine.measure import _estimate_config
    from ..estimate.activations import activation_memory

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


def run_points(request: PointsRequest) -> PointsAnswer:
    """The engine on fake tensors at each point: the saved bytes (training) or the eval forward's peak, and with
    step the training step's peak; the source that can express each config (measure.default_kind)."""
    from ..engine import core as engine
    from ..engine.measure import default_kind, maker

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
                                            "`python -m albert_core.processes.child_warm` serves one per line instead.")
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
