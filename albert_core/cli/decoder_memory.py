"""`memory` for a decoder (albert_core.decoders): what one training step of the model transformers builds needs,
measured by the engine on fake tensors (no hand-written copy of its forward), with the causal LM's output projection
and its own loss by default, so that the logits' float32 upcast for the loss is in the numbers.

    python -m albert_core memory --preset Qwen2.5-0.5B --batch-size 8 --seq-len 2048 [--precision mixed_bf16]
        [--optimizer adamw] [--attention eager|sdpa] [--checkpointing] [--head causal-lm|none] [--json]

The parts are exact: weights and gradients are the stored count (decoders.decoder_params) times the precision's
element bytes, the optimizer state is what torch.optim holds at step 2's start, the saved activations and the step's
peak are the engine's (engine.core.saved_bytes, step_peak) on PyTorch's CPU kernels, and the loss's share of the
saved bytes is what the LM head and the loss save (their module in the engine's breakdown). The KV cache beside it is
decoders.decoder_serving's at batch × seq_len. A decoder is measured for one device, fully trained: LoRA, frozen
layers, ZeRO and --serve are the encoders' for now (said, not ignored).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..choices import CAUSAL_LM
from ..decoders.decoder_config import DecoderConfig
from ..decoders.decoder_loss import HEAD_MODULES
from ..decoders.decoder_params import count_decoder
from ..decoders.decoder_presets import trains_as_causal_lm
from ..decoders.decoder_serving import has_cache, kv_cache
from ..engine.types import Request
from ..step.training import PRECISION_NOTES, weight_element_bytes
from ..units import format_bytes, format_count


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
    silently ignored): it is measured for one device, fully trained."""
    given = [flag for flag, name, rest in (("--num-gpus", "num_gpus", 1), ("--sharding", "sharding", "none"),
                                           ("--serve", "serve", None), ("--train", "train", "full"),
                                           *((f"--lora-{n.replace('_', '-')}", f"lora_{n}", None)
                                             for n in ("r", "alpha", "dropout", "targets")))
             if str(getattr(args, name, rest)).strip() != str(rest)]
    if given:
        raise ValueError(f"{', '.join(given)}: a decoder is measured for one device and fully trained so far "
                         f"(drop {', '.join(given)}); its LoRA, frozen layers, ZeRO and quantized serving are the "
                         "encoders' for now")


def decoder_memory_json(dec: DecoderConfig, args: argparse.Namespace) -> dict[str, Any]:
    """The numbers of `memory` for a decoder; bytes and counts as exact integers."""
    from ..processes import child_request
    from ..workload import Workload

    refuse_encoder_flags(args)
    head = decoder_head(dec, args.head)
    if args.seq_len > dec.max_position:
        raise ValueError(f"--seq-len ({args.seq_len:,}) is past {dec.name}'s max_position_embeddings "
                         f"({dec.max_position:,}): shorten it")
    # the engine measures PyTorch's CPU kernels (fake tensors); a decoder has no CUDA replay beside it yet
    w = Workload(batch_size=args.batch_size, seq_len=args.seq_len, precision=args.precision, attention=args.attention,
                 checkpointing=args.checkpointing, device="cpu", optimizer=args.optimizer, head=head)
    out = child_request.run(Request(w, hf_config=dec.to_hf()))
    if "count_error" in out:
        raise ValueError(out["count_error"])
    m, s = out["measurement"], out["step"]
    n = count_decoder(dec, heads=head == CAUSAL_LM).total
    wb = weight_element_bytes(args.precision)
    loss_part = sum(r["bytes"] for r in m["breakdown"] if r["module"] in HEAD_MODULES)
    kv = kv_cache(dec, args.batch_size, args.seq_len) if has_cache(dec) else None
    return {
        "config": dec.to_hf() | {"name": dec.name},
        "settings": {"batch_size": args.batch_size, "seq_len": args.seq_len, "precision": args.precision,
                     "optimizer": args.optimizer, "attention": args.attention, "checkpointing": args.checkpointing,
                     "head": head, "train": "full", "device": "cpu (the engine's kernels)",
                     "how": out["how"]},
        "parameters": {"stored": n, "built": out["built"], "trainable": n},
        "training_memory": {"weights": n * wb, "gradients": n * wb,
                            "optimizer_state": s["at_start"].get("optimizer state", 0),
                            "master_weights": n * 4 if args.precision.endswith("_master") else 0,
                            "activations_saved": m["total"]},
        "activations": {"total": m["total"], "head_and_loss": loss_part if head == CAUSAL_LM else 0,
                        "by_module": m["breakdown"]},
        "training_peak": {"measured": s["peak"], "phase": s["phase"], "at_peak": s["at_peak"],
                          "note": PRECISION_NOTES[args.precision],
                          "source": "albert_core.engine.core.step_peak (the engine's step: forward, loss, backward, "
                                    f"{args.optimizer}'s step 2)"},
        "kv_cache": None if kv is None else {"dtype": kv.dtype, "batch_size": kv.batch_size, "tokens": kv.prompt,
                                             "total": kv.total, "per_token_all_layers": kv.per_token_all_layers},
    }


def decoder_memory_text(d: dict[str, Any]) -> str:
    s, p, t, a, k = d["settings"], d["parameters"], d["training_memory"], d["activations"], d["training_peak"]
    name = d["config"]["name"]
    lines = [f"{name}: one training step, batch {s['batch_size']} x {s['seq_len']:,}, {s['precision']}, "
             f"{s['optimizer']}, {s['attention']}{', checkpointing' if s['checkpointing'] else ''}, head {s['head']}; "
             f"measured on the engine ({s['how']}, PyTorch's CPU kernels)", ""]
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
    kv = d["kv_cache"]
    if kv is not None:
        lines += ["", f"serving: KV cache at batch {kv['batch_size']} x {kv['tokens']:,} tokens, {kv['dtype']}: "
                      f"{format_bytes(kv['total'])} ({kv['total']:,} B; {kv['per_token_all_layers']:,} B a token "
                      "while every layer holds it)"]
    return "\n".join(lines)
