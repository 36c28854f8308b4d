"""`python -m albert_core verify` and `memory`: measured beside estimated, and the training memory table.

    python -m albert_core verify --preset bert-base [--batch-size 8] [--seq-len 512] [--dtype float32]
        [--attention eager|sdpa] [--optimizer adamw] [--checkpointing] [--real] [--json]
    python -m albert_core verify --config mpnet.json   # a model_type no family models: measured only
    python -m albert_core memory --preset bert-base --batch-size 8 --seq-len 512 [--precision mixed_bf16]
        [--optimizer adamw] [--num-gpus 1] [--sharding none] [--attention sdpa] [--checkpointing]
        [--device cuda|cpu] [--json]

verify builds the model and measures it on the engine (albert_core.engine; fake tensors unless
--real), in this process. Bad input: one line on stderr and exit 2 (cli.main).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from .activations import DEVICES, activation_memory
from .config import ModelConfig
from .engine import DTYPES, OPTIMIZERS
from .training import OPTIMIZERS as TRAIN_OPTIMIZERS
from .training import PRECISIONS, SHARDINGS, training_memory
from .units import format_bytes


def add_parsers(sub: Any, add_source: Any) -> None:
    v = sub.add_parser("verify", help="build the model in PyTorch and measure it beside the estimates")
    add_source(v)
    v.add_argument("--batch-size", type=int, default=2, help="sequences (default 2)")
    v.add_argument("--seq-len", type=int, default=64, help="tokens per sequence (default 64)")
    v.add_argument("--dtype", choices=DTYPES, default="float32", help="model dtype or autocast (default float32)")
    v.add_argument("--attention", choices=("eager", "sdpa"), default="eager")
    v.add_argument("--optimizer", choices=OPTIMIZERS, default="adamw", help="of the training step (default adamw)")
    v.add_argument("--source", choices=("auto", "hf", "reference"), default="auto",
                   help="Hugging Face's model or the reference encoder (default: the one that can express it)")
    v.add_argument("--checkpointing", action="store_true", help="gradient checkpointing")
    v.add_argument("--real", action="store_true", help="real CPU tensors instead of fake ones (needs the memory)")
    v.add_argument("--json", action="store_true", help="print JSON instead of text")
    m = sub.add_parser("memory", help="training memory per GPU and activation memory, as albert_core models them")
    add_source(m)
    m.add_argument("--batch-size", type=int, default=8, help="micro-batch per GPU (default 8)")
    m.add_argument("--seq-len", type=int, default=512, help="tokens per sequence (default 512)")
    m.add_argument("--precision", choices=PRECISIONS, default="mixed_bf16")
    m.add_argument("--optimizer", choices=TRAIN_OPTIMIZERS, default="adamw")
    m.add_argument("--num-gpus", type=int, default=1)
    m.add_argument("--sharding", choices=SHARDINGS, default="none")
    m.add_argument("--attention", choices=("eager", "sdpa"), default="sdpa")
    m.add_argument("--checkpointing", action="store_true")
    m.add_argument("--device", choices=DEVICES, default="cuda")
    m.add_argument("--json", action="store_true", help="print JSON instead of a table")


# ---- verify ----------------------------------------------------------------------------------------

def verify_request(args: argparse.Namespace, cfg: ModelConfig | None, raw: dict[str, Any] | None) -> dict[str, Any]:
    from .measure import default_kind

    req: dict[str, Any] = {"batch_size": args.batch_size, "seq_len": args.seq_len, "dtype": args.dtype,
                           "attention": args.attention, "checkpointing": args.checkpointing,
                           "optimizer": args.optimizer, "real": args.real}
    if cfg is None:
        return req | {"hf_config": raw, "source": "hf"}
    source = default_kind(cfg, args.checkpointing) if args.source == "auto" else args.source
    return req | {"config": cfg.to_dict(), "source": source}


def verify_json(cfg: ModelConfig | None, request: dict[str, Any]) -> dict[str, Any]:
    """Run the request on the engine; a JSON object whose keys say what they hold (bytes as integers)."""
    from . import worker
    from .activations import check_inputs
    from .engine import EngineError
    from .hf import hf_built_config, hf_expressible
    from .measure import check_kind, modelled_step, step_estimate
    from .params import count_parameters

    run = worker._run_of(request)
    try:
        run.check()
    except EngineError as e:
        raise ValueError(str(e)) from None
    if cfg is not None:
        check_kind(cfg, request["source"], request["checkpointing"])
        check_inputs(cfg, run.batch_size, run.seq_len, run.dtype, run.attention, "cpu")
    out = worker.run(request)
    if "count_error" in out:
        raise ValueError(out["count_error"])
    if out.get("out_of_memory"):
        raise ValueError("the real-tensor run ran out of memory: drop --real (fake tensors need no storage)")
    m, s = out["measurement"], out.get("step")
    built = hf_built_config(cfg) if cfg is not None and request["source"] == "hf" and not hf_expressible(cfg) else cfg
    kw = dict(batch_size=run.batch_size, seq_len=run.seq_len, dtype=run.dtype, optimizer=run.optimizer,
              attention=run.attention, checkpointing=run.checkpointing)
    est = None if cfg is None else step_estimate(cfg, **kw)
    modelled = None if cfg is None or s is None else modelled_step(cfg, request["source"], **kw)
    return {
        "config": cfg.to_dict() if cfg is not None else request["hf_config"],
        "settings": {k: v for k, v in request.items() if k not in ("config", "hf_config")} | {"how": out["how"]},
        "parameters": {"built": out["built"], "estimate": count_parameters(built).total if built else None,
                       "by_module": out["by_module"], "difference": out.get("count_diff", [])},
        "activations": {"measured": m["total"], "estimate": m["estimate"], "by_module": m["breakdown"]},
        "training_peak": {"measured": s["peak"] if s else None, "phase": s["phase"] if s else None,
                          "at_peak": s["at_peak"] if s else None, "at_start": s["at_start"] if s else None,
                          "estimate": modelled.peak if modelled is not None else None,  # albert_core.step
                          "estimate_phase": modelled.phase if modelled is not None else None,
                          "host_bytes": s["host_bytes"] if s else None},
        "training_memory": {"sum_of_parts": est.total if est is not None else None},
        "inference_peak": out.get("inference"),
        "engine_seconds": out.get("engine_seconds"),
    }


def verify_text(d: dict[str, Any]) -> str:
    s, p, a, t = d["settings"], d["parameters"], d["activations"], d["training_peak"]
    name = d["config"].get("name") or d["config"].get("model_type")
    lines = [f"{name}: batch {s['batch_size']}, seq_len {s['seq_len']:,}, {s['dtype']}, {s['attention']} attention"
             f"{', checkpointing' if s['checkpointing'] else ''}, {s['optimizer']}; {s['how']}", ""]

    def row(label: str, measured: int | None, estimate: int | None, fmt: Any = format_bytes) -> str:
        e = "(no closed form)" if estimate is None else f"{fmt(estimate)} ({estimate:,})"
        same = "" if estimate is None or measured is None else ("  equal" if measured == estimate else
                                                                f"  differ by {measured - estimate:+,}")
        return f"{label:<28} measured {fmt(measured) if measured is not None else '-'} ({measured or 0:,})  " \
               f"estimate {e}{same}"

    lines.append(row("parameters", p["built"], p["estimate"], lambda n: f"{n:,}"))
    for r in p["difference"]:
        lines.append(f"  {r['component']}: built {r['built']:,}, albert_core {r['estimated']:,} ({r['modules']})")
    lines.append(row("activations (saved)", a["measured"], a["estimate"]))
    if t["measured"] is not None:
        modelled = "" if t["estimate"] is None else (f"; modelled {format_bytes(t['estimate'])} "
                                                     f"({t['estimate'] - t['measured']:+,})")
        lines.append(f"{'training step peak':<28} measured {format_bytes(t['measured'])} ({t['measured']:,}) in the "
                     f"{t['phase']}{modelled}; albert_core's sum of parts "
                     + (format_bytes(d['training_memory']['sum_of_parts'])
                        if d["training_memory"]["sum_of_parts"] is not None else "-"))
        lines += [f"  at the peak: {k} {format_bytes(v)}" for k, v in t["at_peak"].items() if v]
    if d["inference_peak"]:
        i = d["inference_peak"]
        lines.append(row("eval forward peak", i["total"], i["estimate"]))
    return "\n".join(lines)


# ---- memory ----------------------------------------------------------------------------------------

def memory_json(cfg: ModelConfig, args: argparse.Namespace) -> dict[str, Any]:
    t = training_memory(cfg, batch_size=args.batch_size, seq_len=args.seq_len, precision=args.precision,
                        optimizer=args.optimizer, num_gpus=args.num_gpus, sharding=args.sharding,
                        attention=args.attention, checkpointing=args.checkpointing, device=args.device)
    act_dtype = {"mixed_bf16": "bfloat16", "mixed_fp16": "float16"}.get(args.precision, args.precision)
    a = activation_memory(cfg, batch_size=args.batch_size, seq_len=args.seq_len, dtype=act_dtype,
                          attention=args.attention, checkpointing=args.checkpointing, device=args.device)
    return {
        "config": cfg.to_dict(),
        "settings": {k: getattr(args, k) for k in ("batch_size", "seq_len", "precision", "optimizer", "num_gpus",
                                                   "sharding", "attention", "checkpointing", "device")},
        "parameters": {"stored": t.parameters},
        "training_memory": {"weights": t.weights, "gradients": t.gradients, "optimizer_state": t.optimizer,
                            "master_weights": t.master_weights, "activations": t.activations,
                            "activations_saved": t.activations_saved, "activations_recompute": t.activations_recompute,
                            "total": t.total},
        "activations": {"total": a.total, "dtype": act_dtype},
    }


def memory_text(d: dict[str, Any]) -> str:
    s, t = d["settings"], d["training_memory"]
    lines = [f"{d['config']['name']}: training memory per GPU, batch {s['batch_size']} x {s['seq_len']:,}, "
             f"{s['precision']}, {s['optimizer']}, {s['num_gpus']} GPU(s), sharding {s['sharding']}, "
             f"{s['attention']}{', checkpointing' if s['checkpointing'] else ''}, device {s['device']}", ""]
    for k in ("weights", "gradients", "optimizer_state", "master_weights", "activations", "total"):
        lines.append(f"{k:<18} {format_bytes(t[k]):>12}  {t[k]:>22,}")
    lines.append(f"(the sum of the parts; parameters stored: {d['parameters']['stored']:,})")
    return "\n".join(lines)


def dumps(d: dict[str, Any]) -> str:
    return json.dumps(d, indent=2)
