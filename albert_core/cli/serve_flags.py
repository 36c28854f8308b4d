"""`memory --serve` (encoders and decoders alike): its flags as estimate.serving.weight_bytes takes them, and its line
of text."""

from __future__ import annotations

import argparse
from typing import Any

from ..units import format_bytes
from .lora_flags import verb


def serve_settings(args: argparse.Namespace) -> tuple[str, str, int]:
    """--serve, --serve-dtype and --group-size as weight_bytes takes them (format, dtype, group size); ValueError
    naming a flag that the format does not use."""
    fmt = args.serve
    if fmt in ("float32", "bfloat16", "float16"):
        extra = [f for f, v in (("--group-size", args.group_size), ("--serve-dtype", args.serve_dtype),
                                ("--quantize-embeddings", args.quantize_embeddings or None)) if v is not None]
        if extra:
            raise ValueError(f"{', '.join(extra)} only {verb(extra)} with --serve int8, int4 or int4-packed "
                             f"(got --serve {fmt})")
    elif fmt == "int8" and args.group_size is not None:
        raise ValueError("--group-size only applies with --serve int4 or int4-packed (int8 keeps one scale per row)")
    dtype = args.serve_dtype or "bfloat16"
    if fmt == "int4-packed" and dtype != "bfloat16":
        raise ValueError("int4-packed (torchao Int4WeightOnlyConfig) keeps bfloat16 scales and weights: "
                         "use --serve-dtype bfloat16")
    return fmt, dtype, 128 if args.group_size is None else args.group_size


def serving_line(v: dict[str, Any]) -> str:
    """--serve's line: the weights at rest in the format (serving_json), beside the ÷ rule."""
    what = v["format"] + (f" g={v['group_size']}" if v["group_size"] else "")
    if v["format"] in ("int8", "int4", "int4-packed"):
        what += f", rest in {v['dtype']}, embeddings {'quantized' if v['quantize_embeddings'] else 'kept'}"
    return (f"serving {what}: weights {format_bytes(v['weights'])} ({v['weights']:,} B); the ÷ rule says "
            f"{format_bytes(v['approx'])} ({v['vs_approx']:.2f}x)"
            + ("" if v["buildable_on_cpu"] else "; layout arithmetic, torchao cannot build it on the CPU"))
