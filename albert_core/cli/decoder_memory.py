"""`memory` for a decoder (albert_core.decoders): what one training step of the model transformers builds needs,
measured by the engine on fake tensors (no hand-written copy of its forward), with the causal LM's output projection
and its own loss by default, so that the logits' float32 upcast for the loss is in the numbers.

    python -m albert_core memory --preset Qwen2.5-0.5B --batch-size 8 --seq-len 2048 [--precision mixed_bf16]
        [--optimizer adamw] [--attention eager|sdpa] [--checkpointing] [--head causal-lm|none]
        [--train full|lora] [--lora-r 8] [--lora-alpha 8] [--lora-dropout 0] [--lora-targets q_proj,v_proj]
        [--gpu "L4 24 GB"] [--serve bfloat16|int8|int4|...] [--group-size 128] [--quantize-embeddings] [--json]

The parts are exact: weights are what was built (the stored count of decoders.decoder_params, and LoRA's adapters)
and gradients what trains, times the precision's element bytes; the optimizer state is what torch.optim holds at
step 2's start; the saved activations and the step's peak are the engine's (engine.core.saved_bytes, step_peak) on
PyTorch's CPU kernels, and the loss's share of the saved bytes is what the LM head and the loss save (their rows of
the engine's breakdown). The KV cache beside it is decoders.decoder_serving's at batch × seq_len. --gpu: the largest
batch that fits, and the longest sequence at the batch asked (largest_batch: one symbolic trace, its answers
measured). --serve: the weights at rest in that format, as torchao stores them (estimate.serving.weight_bytes). A
decoder is measured for one device, fully trained or with LoRA: frozen layers and ZeRO are the encoders' for now
(said, not ignored).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..choices import CAUSAL_LM, CONFIG_JSON_MODES
from ..decoders.decoder_config import DecoderConfig
from ..decoders.decoder_loss import head_bytes
from ..decoders.decoder_params import count_decoder
from ..decoders.decoder_presets import trains_as_causal_lm
from ..decoders.decoder_serving import has_cache, kv_cache
from ..engine.types import Request
from ..step.training import PRECISION_NOTES, weight_element_bytes
from ..units import format_bytes, format_count
from .lora_flags import lora_of
from .serve_flags import serve_settings, serving_line


def decoder_head(dec: DecoderConfig, given: str | None) -> str:
    """--head for a decoder: causal-lm (its output projection and next-token loss) unless it is an embedding model
    (decoder_presets.trains_as_causal_lm), trained without one; 'none' measures the base model alone."""
    head = (given or "").strip() or (CAUSAL_LM if trains_as_causal_lm(dec) else "none")
    if head not in ("none", CAUSAL_LM):
        raise ValueError(f"--head for a decoder is {CAUSAL_LM} (its output projection and next-token loss) or none "
                         f"(the base model), got {head!r}")
    return head


def refuse_encoder_flags(args: argparse.Namespace) -> None:
    """ValueError naming the flags of `memory` and `verify` that a decoder's measurement does not take yet (never
    silently ignored): it is measured for one device, fully trained or with LoRA."""
    given = [flag for flag, name, rest in (("--num-gpus", "num_gpus", 1), ("--sharding", "sharding", "none"))
             if str(getattr(args, name, rest)).strip() != str(rest)]
    train = getattr(args, "train", "full").strip()
    if train not in CONFIG_JSON_MODES:
        given.append(f"--train {train}")
    if given:
        raise ValueError(f"{', '.join(given)}: a decoder is measured for one device, fully trained or with LoRA, so "
                         f"far (drop {', '.join(given)}); its frozen layers and ZeRO are the encoders' for now")


def decoder_workload(dec: DecoderConfig, args: argparse.Namespace, default_head: str | None = None) -> Any:
    """The Workload of a decoder's `memory` or `verify` flags, on the engine's CPU: its head (decoder_head; --head
    left out: default_head, else the decoder's own), full or LoRA (lora_flags.lora_of)."""
    from ..workload import Workload

    refuse_encoder_flags(args)
    lora = lora_of(args, args.train.strip())
    return Workload(batch_size=args.batch_size, seq_len=args.seq_len, precision=args.precision,
                    attention=args.attention, checkpointing=args.checkpointing, device="cpu",
                    optimizer=args.optimizer, head=decoder_head(dec, args.head or default_head),
                    mode="lora" if lora else "full", lora=lora)


def decoder_memory_json(dec: DecoderConfig, args: argparse.Namespace) -> dict[str, Any]:
    """The numbers of `memory` for a decoder; bytes and counts as exact integers."""
    from ..processes import child_request

    # the engine measures PyTorch's CPU kernels (fake tensors); a decoder has no CUDA replay beside it yet
    w = decoder_workload(dec, args)
    if args.seq_len > dec.max_position:
        raise ValueError(f"--seq-len ({args.seq_len:,}) is past {dec.name}'s max_position_embeddings "
                         f"({dec.max_position:,}): shorten it")
    gpu = _gpu(args)
    out = child_request.run(Request(w, hf_config=dec.to_hf()))
    if "count_error" in out:
        raise ValueError(out["count_error"])
    m, s = out["measurement"], out["step"]
    n = count_decoder(dec, heads=w.head == CAUSAL_LM).total
    built, trained = out["built"], out.get("trainable_built") or out["built"]
    wb = weight_element_bytes(args.precision)
    loss_part = head_bytes(m["breakdown"])
    kv = kv_cache(dec, args.batch_size, args.seq_len) if has_cache(dec) else None
    lora = w.to_dict()["lora"]
    return {
        "config": dec.to_hf() | {"name": dec.name},
        "settings": {"batch_size": args.batch_size, "seq_len": args.seq_len, "precision": args.precision,
                     "optimizer": args.optimizer, "attention": args.attention, "checkpointing": args.checkpointing,
                     "head": w.head, "train": w.mode, "lora": lora, "device": "cpu (the engine's kernels)",
                     "how": out["how"]},
        "parameters": {"stored": n, "built": built, "trainable": trained, "adapters": built - n if lora else 0},
        "training_memory": {"weights": built * wb, "gradients": trained * wb,
                            "optimizer_state": s["at_start"].get("optimizer state", 0),
                            "master_weights": trained * 4 if args.precision.endswith("_master") else 0,
                            "activations_saved": m["total"]},
        "activations": {"total": m["total"], "head_and_loss": loss_part if w.head == CAUSAL_LM else 0,
                        "by_module": m["breakdown"]},
        "training_peak": {"measured": s["peak"], "phase": s["phase"], "at_peak": s["at_peak"],
                          "note": PRECISION_NOTES[args.precision],
                          "source": "albert_core.engine.core.step_peak (the engine's step: forward, loss, backward, "
                                    f"{args.optimizer}'s step 2)"},
        "kv_cache": None if kv is None else {"dtype": kv.dtype, "batch_size": kv.batch_size, "tokens": kv.prompt,
                                             "total": kv.total, "per_token_all_layers": kv.per_token_all_layers},
        "fit": None if gpu is None else largest_batch(dec, w, *gpu),
        "serving": None if getattr(args, "serve", None) is None else decoder_serving_json(dec, args, w.head),
    }


def decoder_serving_json(dec: DecoderConfig, args: argparse.Namespace, head: str) -> dict[str, Any]:
    """--serve: the weights at rest in that format as torchao stores them (serving.weight_bytes: a quantized tied
    output projection is a copy beside the token table; GPT-2's Conv1D stays in the base dtype), beside the ÷ rule."""
    from ..estimate.serving import approximate_bytes, decoder_notes, weight_bytes

    fmt, dtype, group = serve_settings(args)
    b = weight_bytes(dec, fmt, dtype=dtype, group_size=group, quantize_embeddings=args.quantize_embeddings, head=head)
    approx = approximate_bytes(dec, fmt, head=head)
    why = decoder_notes(dec, fmt, head, args.quantize_embeddings, b.dtype)  # where the bytes part from the ÷ rule
    return b.to_json() | {"approx": approx, "approx_rule": "parameters × 4 bytes ÷ 1, 2, 4 or 8 (accelerate's "
                                                              "estimate-memory)", "vs_approx": b.weights / approx,
                          "why": why}


def _gpu(args: argparse.Namespace) -> tuple[str, int] | None:
    from ..estimate.gpus import GPUS

    name = getattr(args, "gpu", None)
    if name is None:
        return None
    if name not in GPUS:
        raise ValueError(f"--gpu must be one of {', '.join(repr(g) for g in GPUS)}, got {name!r}")
    return name, GPUS[name]


def largest_batch(dec: DecoderConfig, w: Any, gpu: str, budget: int) -> dict[str, Any]:
    """The largest batch whose training step fits `budget` bytes at w's seq_len: one symbolic trace of the step
    (engine.trace.trace_step, B a symbol, S the length asked) gives its peak at every batch of 2 or more as the
    largest of a few polynomials in B; batch 1 (its own case: a size-1 dimension) and the answer's neighbours are
    measured by the engine, so the answer stands on two measurements."""
    from ..engine.trace import trace_step
    from ..processes import child_request

    hf = dec.to_hf()

    def measured(b: int) -> int:
        return int(child_request.run(Request(w.replace(batch_size=b), hf_config=hf))["step"]["peak"])

    step = trace_step(hf, w.replace(batch_size=3))
    S = w.seq_len
    best = 0
    if step.holds(2, S) and step.peak(2, S) <= budget:
        lo, hi = 2, 4
        while step.holds(hi, S) and step.peak(hi, S) <= budget:
            lo, hi = hi, hi * 2
        while hi - lo > 1:  # peak(lo) fits, peak(hi) does not (or the trace does not hold there)
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if step.holds(mid, S) and step.peak(mid, S) <= budget else (lo, mid)
        best = lo
    one = measured(1)
    if best == 0 and one <= budget:
        best = 1
    at = {b: (one if b == 1 else measured(b)) for b in (best, best + 1) if b >= 1}
    return {"gpu": gpu, "budget": budget, "seq_len": S, "largest_batch": best,
            "measured_peaks": {str(b): p for b, p in at.items()},
            "trace": {"candidates": len(step.candidates), "seconds": round(step.seconds, 1),
                      "guards": list(step.guards)},
            "fits": best >= 1 and all((p <= budget) == (b <= best) for b, p in at.items()),
            "longest": _longest_context(step, dec, w, budget, hf)}


def _longest_context(step: Any, dec: DecoderConfig, w: Any, budget: int, hf: dict[str, Any]) -> dict[str, Any] | None:
    """The longest sequence whose step fits `budget` at w's batch (2 or more: the same trace, S a symbol), searched
    where the trace holds, up to max_position; it and the next length measured by the engine. None at batch 1."""
    from ..processes import child_request

    B = w.batch_size
    if B < 2:
        return None

    def fits(n: int) -> bool:
        return bool(step.holds(B, n) and step.peak(B, n) <= budget)

    lo, hi = 1, dec.max_position + 1  # fits(lo) (or lo = 1: nothing fits), not fits(hi) (or past max_position)
    if fits(w.seq_len):
        lo = w.seq_len
    else:
        hi = w.seq_len
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    if lo < 2:
        return None
    at = {n: int(child_request.run(Request(w.replace(seq_len=n), hf_config=hf))["step"]["peak"])
          for n in (lo, lo + 1) if n <= dec.max_position}
    return {"batch_size": B, "seq_len": lo, "max_position": dec.max_position,
            "measured_peaks": {str(n): p for n, p in at.items()},
            "fits": all((p <= budget) == (n <= lo) for n, p in at.items())}


def decoder_memory_text(d: dict[str, Any]) -> str:
    s, p, t, a, k = d["settings"], d["parameters"], d["training_memory"], d["activations"], d["training_peak"]
    name = d["config"]["name"]
    lines = [f"{name}: one training step, batch {s['batch_size']} x {s['seq_len']:,}, {s['precision']}, "
             f"{s['optimizer']}, {s['attention']}{', checkpointing' if s['checkpointing'] else ''}, head {s['head']}, "
             f"{s['train']}; "
             f"measured on the engine ({s['how']}, PyTorch's CPU kernels)", ""]
    if s["lora"]:
        lo = s["lora"]
        lines.append(f"{'parameters':<22} {format_count(p['built']):>12}  {p['built']:>22,}  the model "
                     f"({p['stored']:,}) and LoRA's adapters ({p['adapters']:,}: r={lo['r']} on "
                     f"{', '.join(lo['targets']) if lo['targets'] else 'peft default targets'})")
        lines.append(f"{'trainable':<22} {format_count(p['trainable']):>12}  {p['trainable']:>22,}  "
                     f"{100 * p['trainable'] / p['built']:.3f}% (as peft counts)")
    else:
        lines.append(f"{'parameters':<22} {format_count(p['stored']):>12}  {p['stored']:>22,}  all trained"
                     + ("" if p["built"] == p["stored"] else f" (built {p['built']:,}: differ)"))
    lines.append("")
    lines.append(f"{'step peak':<22} {format_bytes(k['measured']):>12}  {k['measured']:>22,}  in the {k['phase']}")
    for cat, v in k["at_peak"].items():
        if v:
            lines.append(f"  {cat:<20} {format_bytes(v):>12}  {v:>22,}")
    lines.append(f"  ({k['note']})")
    lines.append("")
    for key in ("weights", "gradients", "optimizer_state", "master_weights", "activations_saved"):
        lines.append(f"{key:<22} {format_bytes(t[key]):>12}  {t[key]:>22,}")
    if s["head"] == CAUSAL_LM:
        lines.append(f"  {'of which LM head, loss':<20} {format_bytes(a['head_and_loss']):>12}  "
                     f"{a['head_and_loss']:>22,}  (the loss's float32 log-softmax of B x S x vocab, and what the "
                     "output projection reads)")
    f = d["fit"]
    if f is not None:
        peaks = ", ".join(f"batch {b}: {format_bytes(v)} ({v:,} B)" for b, v in f["measured_peaks"].items())
        lines += ["", f"fits one {f['gpu']} ({format_bytes(f['budget'])}) at {f['seq_len']:,} tokens: "
                      + (f"up to batch {f['largest_batch']:,}" if f["largest_batch"] else "not even batch 1")
                      + f" (one symbolic trace of the step, {f['trace']['seconds']} s; the engine measured {peaks})"]
        if not f["fits"] and f["largest_batch"]:
            lines.append("  the engine's measurements and the trace disagree here: trust the measured peaks")
        g = f["longest"]
        if g is not None:
            peaks = ", ".join(f"{int(n):,} tokens: {format_bytes(v)} ({v:,} B)" for n, v in g["measured_peaks"].items())
            lines.append(f"  at batch {g['batch_size']:,}, the longest sequence that fits: {g['seq_len']:,} tokens"
                         + (" (its max_position)" if g["seq_len"] == g["max_position"] else "") + " "
                         f"(the same trace; the engine measured {peaks})"
                         + ("" if g["fits"] else "; the measurements and the trace disagree: trust the measured peaks"))
    kv = d["kv_cache"]
    if kv is not None:
        lines += ["", f"serving: KV cache at batch {kv['batch_size']} x {kv['tokens']:,} tokens, {kv['dtype']}: "
                      f"{format_bytes(kv['total'])} ({kv['total']:,} B; {kv['per_token_all_layers']:,} B a token "
                      "while every layer holds it)"]
    if d.get("serving") is not None:
        lines += ["", serving_line(d["serving"]), *(f"  {w}" for w in d["serving"]["why"])]
    return "\n".join(lines)
