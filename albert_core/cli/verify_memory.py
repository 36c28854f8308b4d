"""`python -m albert_core verify` and `memory`: measured beside estimated, and the training memory table.

    python -m albert_core verify --preset bert-base [--batch-size 2] [--seq-len 64] [--dtype mixed_bf16]
        [--attention eager|sdpa] [--optimizer adamw] [--checkpointing] [--real] [--json]
        [--train MODE] [--head HEAD] [--lora-r R] [--lora-alpha A] [--lora-dropout P] [--lora-targets a,b]
    python -m albert_core verify --config roformer.json   # a model_type no family models: measured only
    python -m albert_core memory --preset bert-base --batch-size 8 --seq-len 512 [--precision mixed_bf16]
        [--optimizer adamw] [--num-gpus 1] [--sharding none] [--attention eager] [--checkpointing]
        [--device cuda|cpu] [--json]
        [--train full|frozen-embeddings|frozen-layers:K|lora|bitfit] [--lora-r 8] [--lora-alpha 8]
        [--lora-dropout 0] [--lora-targets query,value] [--head none|classification:N|token:N|mlm]
        [--serve float32|bfloat16|float16|int8|int4|int4-packed] [--group-size 128] [--quantize-embeddings]
        [--serve-dtype bfloat16]

memory: the trainable and frozen parameters of the fine-tuning mode (finetune.trainable, as peft's
get_nb_trainable_parameters counts), the training step's peak (step.step_peak: what is alive at the step's
highest moment and in which phase, with the ZeRO stage applied to every moment when --sharding shards it over
--num-gpus), training_memory's sum of parts for the same mode and head, and with --serve the weights at rest in that format (serving.weight_bytes,
what torchao 0.18 stores) and the eval forward's activation peak at batch × seq_len where a family models it. Each precision means one thing in the peak, the parts and the engine
(training.PRECISION_NOTES): float32, bfloat16/float16 (the model cast), mixed_bf16/mixed_fp16 (torch.autocast over
float32 weights) and bf16_master/fp16_master (16-bit weights beside a float32 master copy, Micikevicius et al. 2018);
the peak is one device's (ZeRO-sharded as training_memory shards it).

verify builds the model and measures it on the engine (albert_core.engine.core; fake tensors unless
--real), in this process; with --train or --head it builds the fine-tuned model (engine.task_model.build: peft's
get_peft_model for lora) and measures that beside step.step_peak's estimate. Bad input: one line on stderr
and exit 2 (cli.main).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from ..choices import CAUSAL_LM, DEVICES, MASTER, OPTIMIZERS, PRECISIONS, SHARDINGS, parse_mode
from ..choices import OPTIMIZERS as TRAIN_OPTIMIZERS
from ..config import ConfigError, ModelConfig
from ..engine.core import DTYPES
from ..engine.types import Request
from ..estimate.activations import activation_memory
from ..estimate.finetune import trainable
from ..estimate.heads import parse_head
from ..estimate.serving import BASE_DTYPES, FORMATS, approximate_bytes, weight_bytes
from ..share import CONTROLS
from ..step.training import PEAK_MAX_LAYERS, PRECISION_NOTES, peak_trust, training_memory
from ..units import format_bytes, format_count
from ..workload import Workload
from .lora_flags import lora_of
from .serve_flags import serve_settings, serving_line


def add_parsers(sub: Any, add_source: Any) -> None:
    v = sub.add_parser("verify", help="build the model in PyTorch and measure it beside the estimates")
    add_source(v)
    # every default is the app's (share.CONTROLS: the Verify page's batch and length, the precision, attention
    # and optimizer that Memory, Fit and Verify share), so a command and the page it mirrors agree
    v.add_argument("--batch-size", type=int, default=_default("verify_batch"),
                   help=f"sequences (default {_default('verify_batch')})")
    v.add_argument("--seq-len", type=int, default=_default("verify_seq_len"),
                   help=f"tokens per sequence (default {_default('verify_seq_len')})")
    v.add_argument("--precision", "--dtype", dest="precision", choices=DTYPES, default=_default("precision"),
                   help=f"the weights' dtype, autocast or a master copy, as `memory --precision` (default "
                        f"{_default('precision')}; --dtype: the same)")
    v.add_argument("--attention", choices=("eager", "sdpa"), default=_default("attention"),
                   help=f"default {_default('attention')}")
    v.add_argument("--optimizer", choices=OPTIMIZERS, default=_default("optimizer"),
                   help=f"of the training step (default {_default('optimizer')})")
    v.add_argument("--source", choices=("auto", "hf", "reference"), default=_default("source"),
                   help="Hugging Face's model or the reference encoder (default: the one that can express it)")
    v.add_argument("--checkpointing", action="store_true", help="gradient checkpointing")
    v.add_argument("--real", action="store_true", help="real CPU tensors instead of fake ones (needs the memory)")
    v.add_argument("--trace", action="store_true",
                   help="also the saved bytes and the step's peak as polynomials in batch B and length S, from one "
                        "symbolic run of Hugging Face's model (engine/trace.py), beside the measured ones")
    v.add_argument("--json", action="store_true", help="print JSON instead of text")
    _add_finetune(v)
    m = sub.add_parser("memory", help="training memory per GPU and activation memory, as albert_core models them")
    add_source(m)
    m.add_argument("--batch-size", type=int, default=_default("batch_size"),
                   help=f"micro-batch per GPU (default {_default('batch_size')})")
    m.add_argument("--seq-len", type=int, default=_default("seq_len"),
                   help=f"tokens per sequence (default {_default('seq_len')})")
    m.add_argument("--precision", choices=PRECISIONS, default=_default("precision"),
                   help=f"default {_default('precision')}")
    m.add_argument("--optimizer", choices=TRAIN_OPTIMIZERS, default=_default("optimizer"),
                   help=f"default {_default('optimizer')}")
    m.add_argument("--num-gpus", type=int, default=_default("num_gpus"), help=f"default {_default('num_gpus')}")
    m.add_argument("--sharding", choices=SHARDINGS, default=_default("sharding"), help=f"default {_default('sharding')}")
    m.add_argument("--attention", choices=("eager", "sdpa"), default=_default("attention"),
                   help=f"default {_default('attention')}, as the app's")
    m.add_argument("--checkpointing", action="store_true")
    m.add_argument("--device", choices=DEVICES, default="cuda")
    m.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _add_finetune(m)
    m.add_argument("--serve", choices=FORMATS, help="also the weights at rest in this serving format "
                   "(torchao 0.18 weight-only int8/int4; int4-packed is its layout's arithmetic)")
    m.add_argument("--group-size", type=int, default=None, help="int4: values per scale and zero point (default 128)")
    m.add_argument("--quantize-embeddings", action="store_true", help="int8/int4: quantize the nn.Embedding tables too")
    m.add_argument("--gpu", default=None, metavar="NAME",
                   help="a decoder: the largest batch whose training step fits this GPU at --seq-len (one symbolic "
                        "trace of the step, its answer and the next batch measured), e.g. 'L4 24 GB'")
    m.add_argument("--serve-dtype", choices=BASE_DTYPES, default=None,
                   help="int8/int4: what stays unquantized (biases, norms) and int4's scales (default bfloat16)")


def _default(name: str) -> Any:
    """The app's default of page control `name` (share.CONTROLS): the CLI and the app start from the same view."""
    return CONTROLS[name].default


def _add_finetune(s: Any) -> None:
    s.add_argument("--train", default="full", metavar="MODE",
                   help="fine-tuning mode: full, frozen-embeddings, frozen-layers:K, lora, bitfit (default full)")
    s.add_argument("--head", default=None, help="task head: none, classification:N, token:N, mlm (default none); "
                   "a decoder's: causal-lm (its default, but for an embedding model) or none")
    s.add_argument("--lora-r", type=int, default=None, help=f"LoRA rank (default {_default('lora_r')})")
    s.add_argument("--lora-alpha", type=float, default=None,
                   help=f"LoRA alpha (default {_default('lora_alpha')}; scales, adds nothing)")
    s.add_argument("--lora-dropout", type=float, default=None,
                   help=f"LoRA dropout (default {_default('lora_dropout'):g}; keeps a copy of the input)")
    s.add_argument("--lora-targets", default=None, metavar="NAMES",
                   help="LoRA target modules by Hugging Face name, e.g. query,value (default: peft's for the model type)")


def finetune_settings(args: argparse.Namespace) -> dict[str, Any]:
    """--train/--head/--lora-* as trainable() and step_peak() take them: mode, head, num_labels, lora (or None).

    Bad input: ValueError saying which flag to change (cli.main prints it and exits 2).
    """
    mode, _ = parse_mode(args.train)
    if (args.head or "").strip() == CAUSAL_LM:
        raise ValueError(f"--head {CAUSAL_LM} is a decoder's (its output projection and next-token loss); an "
                         "encoder's heads are classification:N, token:N and mlm")
    head, labels = parse_head(args.head or "none")
    lora = lora_of(args, mode)
    return {"mode": "lora" if lora else args.train.strip(), "head": head, "num_labels": labels, "lora": lora}


def workload_of(args: argparse.Namespace, ft: dict[str, Any], device: str) -> Workload:
    """The workload a command's flags name, the one type the analytical model and the engine take: batch, seq_len,
    precision, attention, checkpointing, optimizer, the fine-tuning of finetune_settings (a head without labels
    counts 1) and, where the command has them, GPUs and sharding. Bad values: Workload's ValueError."""
    return Workload(batch_size=args.batch_size, seq_len=args.seq_len, precision=args.precision,
                    attention=args.attention, checkpointing=args.checkpointing, device=device,
                    optimizer=args.optimizer, mode=ft["mode"], head=ft["head"], num_labels=max(ft["num_labels"], 1),
                    lora=ft["lora"], num_gpus=getattr(args, "num_gpus", 1), sharding=getattr(args, "sharding", "none"))


def _trainable(cfg: ModelConfig, w: Workload) -> Any:
    """finetune.trainable of w's fine-tuning; where peft has no default targets, the flag that names them."""
    try:
        return trainable(cfg, w.mode, head=w.head, num_labels=w.num_labels, lora=w.lora)
    except ValueError as e:
        if w.lora is not None and w.lora.targets is None and "no default LoRA targets" in str(e):
            raise ValueError(f"{e}; pass them with --lora-targets") from None
        raise


# ---- verify ----------------------------------------------------------------------------------------

def verify_request(args: argparse.Namespace, cfg: ModelConfig | None, raw: dict[str, Any] | None) -> Request:
    from ..decoders import is_decoder
    from ..engine.measure import default_kind

    if raw is not None and is_decoder(raw):  # a decoder: its base model, or with --head causal-lm its causal LM
        from ..decoders.decoder_config import from_hf
        from .decoder_memory import decoder_workload

        w = decoder_workload(from_hf(raw), args, default_head="none")  # verify's default: the base model
        return Request(w, hf_config=raw, source="hf", real=args.real)
    ft = finetune_settings(args)
    fine = ft["mode"] != "full" or ft["head"] != "none"
    # the engine runs on this CPU: the optimizer's for-loop, torch.optim's CPU default
    w = workload_of(args, ft, "cpu")
    if fine:
        if cfg is None:
            raise ValueError("--train and --head need a config one of the families models (bert, albert, roberta, "
                             "distilbert, electra, deberta-v2, modernbert); this config.json is measured as it is")
        if args.source == "reference":
            raise ValueError("--train and --head build Hugging Face's model (peft's for lora): drop --source reference")
    if cfg is None:
        return Request(w, hf_config=raw, source="hf", real=args.real)
    source = "hf" if fine else default_kind(cfg, args.checkpointing) if args.source == "auto" else args.source
    return Request(w, config=cfg, source=source, real=args.real)


def trace_json(cfg: ModelConfig | None, request: Request) -> dict[str, Any]:
    """`verify --trace`: the request's model traced once with B and S as symbols (engine.trace) at its workload,
    which the polynomials therefore hold at; bytes as integers, polynomials as their terms [B power, S power,
    coefficient] and as text."""
    from ..engine.trace import Polynomial, trace_saved, trace_step
    from ..formats.hf import to_hf_config

    trace_refusal(request)
    w = request.workload
    hf = to_hf_config(cfg) if cfg is not None else dict(request.hf_config or {})
    try:
        saved, step = trace_saved(hf, w), trace_step(hf, w)
    except Exception as e:  # noqa: BLE001  # the model's code under symbolic sizes: any op may refuse them
        first = (str(e).strip().splitlines() or [""])[0][:300]
        return {"error": f"this model could not be traced with B and S as symbols ({type(e).__name__}: {first}); "
                         "the measured numbers stand: drop --trace"}

    def poly(p: Polynomial) -> dict[str, Any]:
        return {"text": str(p), "terms": [list(t) for t in p.terms]}

    return {"saved": {**poly(saved.saved), "at": saved.saved(w.batch_size, w.seq_len)},
            "step": {"peak": step.peak(w.batch_size, w.seq_len), "candidates": [poly(c) for c in step.candidates],
                     "events": step.events, "distinct": step.distinct},
            "guards": sorted(set(saved.guards) | set(step.guards)), "ranges": [list(r) for r in step.ranges],
            "seconds": round(saved.seconds + step.seconds, 2)}


def trace_refusal(request: Request) -> None:
    """ValueError, saying what to drop, for a request `verify --trace` does not trace."""
    if request.fine_tuned and request.config is not None:
        raise ValueError("--trace runs the base model's full training step: drop --train and --head")
    if request.source != "hf" or request.real:
        raise ValueError("--trace runs Hugging Face's model on fake tensors: drop --source reference and --real")


def trace_text(d: dict[str, Any]) -> list[str]:
    """verify_text's lines for d["trace"]: each polynomial's value beside what the engine measured."""
    t, w = d["trace"], d["settings"]
    if "error" in t:
        return ["", f"one symbolic trace: {t['error']}"]
    a, p = d["activations"]["measured"], d["training_peak"]["measured"]

    def same(x: int, measured: int | None) -> str:
        return "" if measured is None else "  equal" if x == measured else f"  differ by {measured - x:+,}"

    where = ", ".join([f"{n} = {lo}" if lo == hi else f"{n} >= {lo}" + (f", {n} <= {hi}" if hi else "")
                       for n, lo, hi in t["ranges"]] + t["guards"])
    return ["", f"one symbolic trace ({t['seconds']} s; holds where {where}):",
            f"  saved bytes = {t['saved']['text']}",
            f"    at {w['batch_size']} × {w['seq_len']:,}: {format_bytes(t['saved']['at'])} ({t['saved']['at']:,})"
            + same(t["saved"]["at"], a),
            f"  step peak = the largest of {len(t['step']['candidates'])} polynomials ({t['step']['distinct']:,} "
            "distinct live totals)",
            f"    at {w['batch_size']} × {w['seq_len']:,}: {format_bytes(t['step']['peak'])} ({t['step']['peak']:,})"
            + same(t["step"]["peak"], p)]


def verify_json(cfg: ModelConfig | None, request: Request) -> dict[str, Any]:
    """Run the request on the engine; a JSON object whose keys say what they hold (bytes as integers)."""
    from ..engine.measure import check_kind, modelled_step, step_estimate
    from ..estimate.activations import check_inputs
    from ..estimate.params import count_parameters
    from ..formats.hf import hf_built_config, hf_expressible
    from ..processes import child_request

    w = request.workload
    if cfg is not None:
        check_kind(cfg, request.source, w.checkpointing)
        check_inputs(cfg, w.replace(device="cpu"))
    if cfg is not None and request.fine_tuned:
        return finetune_verify_json(cfg, request)
    out = child_request.run(request)
    if "count_error" in out:
        raise ValueError(out["count_error"])
    if out.get("out_of_memory"):
        raise ValueError("the real-tensor run ran out of memory: drop --real (fake tensors need no storage)")
    m, s = out["measurement"], out.get("step")
    built = hf_built_config(cfg) if cfg is not None and request.source == "hf" and not hf_expressible(cfg) else cfg
    est = None if cfg is None else step_estimate(cfg, w)
    modelled = None if cfg is None or s is None else modelled_step(cfg, request.source, w)
    counted = count_parameters(built).total if built else _decoder_count(request.hf_config, w.head == CAUSAL_LM)
    return {
        "config": cfg.to_dict() if cfg is not None else dict(request.hf_config or {}),
        "settings": verify_settings(request) | {"how": out["how"]},
        "parameters": {"built": out["built"], "estimate": counted,
                       "by_module": out["by_module"], "difference": out.get("count_diff", [])},
        "activations": {"measured": m["total"], "estimate": m["estimate"], "by_module": m["breakdown"]},
        "training_peak": {"measured": s["peak"] if s else None, "phase": s["phase"] if s else None,
                          "at_peak": s["at_peak"] if s else None, "at_start": s["at_start"] if s else None,
                          "estimate": modelled.peak if modelled is not None else None,  # albert_core.step.peak
                          "estimate_phase": modelled.phase if modelled is not None else None,
                          "host_bytes": s["host_bytes"] if s else None},
        "training_memory": {"sum_of_parts": est.total if est is not None else None},
        "inference_peak": out.get("inference"),
        "engine_seconds": out.get("engine_seconds"),
        "engine_timings": out.get("engine_timings"),
    }


def _decoder_count(raw: Mapping[str, Any] | None, lm_head: bool = False) -> int | None:
    """The closed-form count where raw is a decoder's config.json (albert_core.decoders), else None: its base model's,
    or with lm_head its causal LM's (the output projection stored only where untied)."""
    from ..decoders import is_decoder
    from ..decoders.decoder_config import from_hf
    from ..decoders.decoder_params import count_decoder

    return count_decoder(from_hf(dict(raw)), lm_head).total if raw is not None and is_decoder(dict(raw)) else None


def verify_settings(request: Request) -> dict[str, Any]:
    """What `verify --json` reports it ran: the workload's settings as the command's flags name them (dtype: the
    precision), real and source, and for a fine-tuned model train, head, num_labels (0 for a head without labels)
    and lora."""
    w = request.workload
    out: dict[str, Any] = {"batch_size": w.batch_size, "seq_len": w.seq_len, "dtype": w.precision,
                           "attention": w.attention, "checkpointing": w.checkpointing, "optimizer": w.optimizer,
                           "real": request.real}
    if w.mode != "full" or w.head != "none":
        out |= {"train": w.mode, "head": w.head,
                "num_labels": w.num_labels if w.head in ("classification", "token") else 0,
                "lora": None if w.lora is None else w.to_dict()["lora"]}
    return out | {"source": request.source}


def finetune_verify_json(cfg: ModelConfig, request: Request) -> dict[str, Any]:
    """verify --train/--head: the fine-tuned model (engine.task_model.build; peft's get_peft_model for lora) measured on
    the engine, beside finetune.trainable's counts and step.step_peak's modelled peak for the same step."""
    from ..engine import core as engine
    from ..engine.measure import MAX_MEASURE_PARAMS
    from ..estimate.activations import family_ops
    from ..processes import child_request
    from ..step.peak import step_peak

    w = request.workload
    run = engine.Run(w, fake=not request.real)
    tr = _trainable(cfg, w)
    if run.fake is False and tr.total > MAX_MEASURE_PARAMS:
        raise ValueError(f"{tr.total:,} parameters are too many to build on real tensors here (at most "
                         f"{MAX_MEASURE_PARAMS:,}): drop --real (fake tensors need no storage)")
    counted: dict[str, int] = {}
    make = child_request.finetune_maker(cfg, w, counted)  # as the Verify page

    inference_modelled = w.mode != "lora" and w.head == "none" and hasattr(family_ops(cfg), "infer_layer")
    try:
        r = engine.measure(make, cfg.vocab_size, run, what=engine.MEASURES)
    except MemoryError:
        raise ValueError("the real-tensor run ran out of memory: drop --real (fake tensors need no storage)") from None
    sp = step_peak(cfg, w)
    s = r.step
    assert s is not None and r.saved is not None
    inf_est = (activation_memory(cfg, w.replace(device="cpu", checkpointing=False), training=False).total
               if inference_modelled else None)
    settings = {k: v for k, v in verify_settings(request).items() if k != "lora"}
    return {
        "config": cfg.to_dict(),
        "settings": settings | {"lora": tr.to_json()["lora"], "how": r.how},
        "parameters": {"built": r.parameters, "estimate": tr.total, "by_module": r.by_module, "difference": [],
                       "trainable": {"built": counted["trainable"], "estimate": tr.trainable},
                       "frozen": {"built": counted["total"] - counted["trainable"], "estimate": tr.frozen}},
        "activations": {"measured": r.saved, "estimate": None, "by_module": engine.saved_breakdown(r.saved_tensors),
                        "note": "no closed form for a fine-tuned model's saved tensors (frozen parts, LoRA, heads)"},
        "training_peak": {"measured": s.peak, "phase": s.phase, "at_peak": s.at_peak, "at_start": s.at_start,
                          "estimate": sp.peak, "estimate_phase": sp.phase, "host_bytes": s.host_bytes,
                          "activations_exact": sp.activations_exact},
        "training_memory": {"sum_of_parts": None},
        "inference_peak": {"total": r.inference, "estimate": inf_est},
        "engine_seconds": r.seconds,
        "engine_timings": r.timings,
    }


def verify_text(d: dict[str, Any]) -> str:
    s, p, a, t = d["settings"], d["parameters"], d["activations"], d["training_peak"]
    name = d["config"].get("name") or d["config"].get("model_type")
    lines = [f"{name}: batch {s['batch_size']}, seq_len {s['seq_len']:,}, {s['dtype']}, {s['attention']} attention"
             f"{', checkpointing' if s['checkpointing'] else ''}, {s['optimizer']}"
             f"{'' if s.get('head', 'none') == 'none' else ', head ' + s['head']}; {s['how']}", ""]

    def row(label: str, measured: int | None, estimate: int | None, fmt: Any = format_bytes) -> str:
        e = "(no closed form)" if estimate is None else f"{fmt(estimate)} ({estimate:,})"
        same = "" if estimate is None or measured is None else ("  equal" if measured == estimate else
                                                                f"  differ by {measured - estimate:+,}")
        return f"{label:<28} measured {fmt(measured) if measured is not None else '-'} ({measured or 0:,})  " \
               f"estimate {e}{same}"

    lines.append(row("parameters", p["built"], p["estimate"], lambda n: f"{n:,}"))
    if "trainable" in p:
        lines.append(f"fine-tuning {s['train']}, head {s['head']}" + (f":{s['num_labels']}" if s["num_labels"] else ""))
        lines.append(row("  trainable", p["trainable"]["built"], p["trainable"]["estimate"], lambda n: f"{n:,}"))
        lines.append(row("  frozen", p["frozen"]["built"], p["frozen"]["estimate"], lambda n: f"{n:,}"))
    for r in p["difference"]:
        lines.append(f"  {r['component']}: built {r['built']:,}, albert_core {r['estimated']:,} ({r['modules']})")
    lines.append(row("activations (saved)", a["measured"], a["estimate"]))
    if t["measured"] is not None:
        gap = None if t["estimate"] is None else t["estimate"] - t["measured"]
        modelled = "" if gap is None else (f"; modelled {format_bytes(t['estimate'])} "
                                           + ("(equal)" if gap == 0 else f"({gap:+,} B)"))
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
    """The `memory` command's numbers; keys name what they hold, bytes and counts as exact integers."""
    from ..step.peak import step_peak

    ft = finetune_settings(args)
    w = workload_of(args, ft, args.device)
    tr = _trainable(cfg, w)
    t = training_memory(cfg, w)
    a = activation_memory(cfg, w)  # the forward's dtype (w.forward_dtype): autocast's, else the weights'
    sp = step_peak(cfg, w.replace(num_gpus=1, sharding="none"))
    sharded = args.num_gpus > 1 and args.sharding != "none"
    # training_memory's peak is step_peak's with the ZeRO stage applied to every moment (equal to sp unsharded)
    peak, phase, moment, at_peak = ((t.peak, t.peak_phase, t.peak_moment, t.at_peak) if t.peak_modelled
                                    else (sp.peak, sp.phase, sp.moment, sp.at_peak))
    settings = {k: getattr(args, k) for k in ("batch_size", "seq_len", "precision", "optimizer", "num_gpus",
                                              "sharding", "attention", "checkpointing", "device")}
    return {
        "config": cfg.to_dict(),
        "settings": settings | {"train": tr.to_json()["mode"], "head": ft["head"], "num_labels": ft["num_labels"]},
        "parameters": {"stored": t.parameters, **tr.to_json()},
        "training_peak": {"estimate": peak, "phase": phase, "moment": moment, "at_peak": at_peak,
                          "at_start": sp.at_start, "dtype": args.precision,
                          "weights_dtype": ("float32" if args.precision.startswith("mixed")
                                            else MASTER.get(args.precision, args.precision)),
                          "activations_exact": sp.activations_exact, "replayed": sp.replayed,
                          "peak_is": t.peak_is if t.peak_modelled else peak_trust(True, sp.replayed, ft["mode"]),
                          "per_device_unsharded": not (sharded and t.peak_modelled),
                          "sharding_modelled": (t.peak_modelled if sharded else None),
                          "source": "albert_core.step.peak.step_peak (the engine's step, modelled)",
                          "note": PRECISION_NOTES[args.precision]},
        "training_memory": {"weights": t.weights, "gradients": t.gradients, "optimizer_state": t.optimizer,
                            "master_weights": t.master_weights, "activations": t.activations,
                            "activations_saved": t.activations_saved, "activations_recompute": t.activations_recompute,
                            "total": t.total, "mode": t.mode, "head": t.head, "trainable": t.trainable,
                            "note": "the sum of the parts (gradients, state and master copy of the trainable "
                                    "tensors; the full base model's saved activations): not the step's peak"},
        "activations": {"total": a.total, "dtype": a.dtype},
        "serving": serving_json(cfg, args, ft) if args.serve is not None else None,
    }


def serving_json(cfg: ModelConfig, args: argparse.Namespace, ft: dict[str, Any]) -> dict[str, Any]:
    """--serve: serving.weight_bytes of the model with --head in that format, beside the usual ÷ rule."""
    fmt, dtype, group = serve_settings(args)
    b = weight_bytes(cfg, fmt, dtype=dtype, group_size=group, quantize_embeddings=args.quantize_embeddings,
                     head=ft["head"], num_labels=max(ft["num_labels"], 1))
    approx = approximate_bytes(cfg, fmt, head=ft["head"], num_labels=max(ft["num_labels"], 1))
    compute = fmt if fmt in ("float32", "bfloat16", "float16") else b.dtype  # weight-only: activations in the rest's dtype
    try:
        eval_w = Workload(batch_size=args.batch_size, seq_len=args.seq_len, precision=compute, attention=args.attention,
                          device=args.device)
        inference: int | None = activation_memory(cfg, eval_w, training=False).total
        why = (f"the base model's eval forward at batch {args.batch_size} x {args.seq_len} in {compute}: the peak of "
               "the activations alive at once, weights not included; a head's logits and the quantized kernels' "
               "temporaries are not in it")
    except ConfigError as e:
        inference, why = None, str(e)
    return b.to_json() | {"approx": approx, "approx_rule": "parameters × 4 bytes ÷ 1, 2, 4 or 8 (accelerate's "
                                                              "estimate-memory)", "vs_approx": b.weights / approx,
                          "inference_activations": inference, "inference_activations_note": why}


def memory_text(d: dict[str, Any]) -> str:
    s, t, p, k = d["settings"], d["training_memory"], d["parameters"], d["training_peak"]
    lines = [f"{d['config']['name']}: training memory per GPU, batch {s['batch_size']} x {s['seq_len']:,}, "
             f"{s['precision']}, {s['optimizer']}, {s['num_gpus']} GPU(s), sharding {s['sharding']}, "
             f"{s['attention']}{', checkpointing' if s['checkpointing'] else ''}, device {s['device']}", ""]
    lora = p["lora"]
    how = s["train"] + (f" r={lora['r']} alpha={lora['lora_alpha']:g} dropout={lora['lora_dropout']:g} on "
                        f"{', '.join(lora['targets'])} ({lora['adapted_modules']} modules)" if lora else "")
    head = s["head"] + (f":{s['num_labels']}" if s["num_labels"] else "")
    lines.append(f"fine-tuning {how}, head {head}")
    lines.append(f"{'trainable':<18} {format_count(p['trainable']):>12}  {p['trainable']:>22,}  "
                 f"{100 * p['trainable'] / p['total']:.3f}% of {p['total']:,} (as peft counts)")
    lines.append(f"{'frozen':<18} {format_count(p['frozen']):>12}  {p['frozen']:>22,}")
    lines.append("")
    lines.append(f"{'step peak':<18} {format_bytes(k['estimate']):>12}  {k['estimate']:>22,}  in the {k['phase']} "
                 f"({k['moment']}); {k['peak_is']}")
    for cat, v in k["at_peak"].items():
        if v:
            lines.append(f"  {cat:<16} {format_bytes(v):>12}  {v:>22,}")
    if k["note"]:
        lines.append(f"  ({k['note']})")
    if k["sharding_modelled"] is False:
        lines.append(f"  (one device, unsharded: {s['sharding']} is applied to the peak only up to "
                     f"{PEAK_MAX_LAYERS} layer applications)")
    lines.append("")
    for key in ("weights", "gradients", "optimizer_state", "master_weights", "activations", "total"):
        lines.append(f"{key:<18} {format_bytes(t[key]):>12}  {t[key]:>22,}")
    lines.append(f"(the sum of the parts, {s['train']}, head {head}; parameters stored: {p['stored']:,})")
    v = d["serving"]
    if v is not None:
        lines += ["", serving_line(v)]
        if v["inference_activations"] is not None:
            lines.append(f"  eval forward activations (peak) {format_bytes(v['inference_activations'])} "
                         f"({v['inference_activations']:,} B), base model, weights not included")
    return "\n".join(lines)


def dumps(d: dict[str, Any]) -> str:
    return json.dumps(d, indent=2)
