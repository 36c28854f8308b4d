"""Fine-tuning parameters and serving sizes of three encoders, written to docs/finetune-serving.md.

    python scripts/finetune_tables.py [--out docs/finetune-serving.md]

Every number comes from albert_core.estimate.finetune.trainable, heads.head_parameters and serving.weight_bytes
(each tested against peft / transformers / torchao in tests/test_finetune.py, test_heads.py, test_serving.py).
Pure arithmetic: no torch, runs in a second.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from albert_core.choices import LoraSpec  # noqa: E402
from albert_core.estimate.finetune import trainable  # noqa: E402
from albert_core.estimate.hf_modules import embedding_modules  # noqa: E402
from albert_core.estimate.params import count_parameters  # noqa: E402
from albert_core.estimate.serving import approximate_bytes, weight_bytes  # noqa: E402
from albert_core.presets import PRESETS  # noqa: E402
from albert_core.units import format_bytes, format_count  # noqa: E402

MODELS = ("bert-base", "xlm-roberta-base", "deberta-v3-base")
MARKER = "<!-- benchmarks/finetune_table.py -->"  # from here on the file is kept as it is
QV = {"deberta-v2": ("query_proj", "value_proj")}  # peft's default targets for the model type (query, value elsewhere)


def _n(n: int) -> str:
    return f"{n:,} ({format_count(n)})"


def trainable_table(head: str, labels: int) -> list[str]:
    out = ["| model | embeddings share | mode | trainable | frozen | all params (as peft counts) | trainable % |",
           "|---|---|---|---|---|---|---|"]
    for name in MODELS:
        cfg = PRESETS[name]
        emb = sum(m.numel for m in embedding_modules(cfg))
        share = f"{100 * emb / count_parameters(cfg).total:.1f}%"
        for mode, lora in (("full", None), ("frozen-embeddings", None),
                           ("lora", LoraSpec(r=8, lora_alpha=16, targets=QV.get(cfg.family, ("query", "value")))),
                           ("bitfit", None)):
            t = trainable(cfg, mode, head=head, num_labels=labels, lora=lora)
            label = f"LoRA r=8 on {', '.join(t.targets)}" if mode == "lora" else mode
            out.append(f"| {name} | {share} | {label} | {_n(t.trainable)} | {_n(t.frozen)} | {_n(t.total)} "
                       f"| {t.trainable_pct:.3f}% |")
    return out


def serving_table() -> list[str]:
    out = ["| model | format | rest kept in | embeddings | weights | parameters × 4 ÷ rule | ratio | built on the CPU |",
           "|---|---|---|---|---|---|---|---|"]
    for name in MODELS:
        cfg = PRESETS[name]
        for fmt, dtype, qe in (("float32", "float32", False), ("bfloat16", "bfloat16", False),
                               ("int8", "bfloat16", False), ("int8", "bfloat16", True),
                               ("int4", "bfloat16", False), ("int4", "bfloat16", True),
                               ("int4-packed", "bfloat16", False), ("int4-packed", "bfloat16", True)):
            b = weight_bytes(cfg, fmt, dtype=dtype, group_size=128, quantize_embeddings=qe)
            approx = approximate_bytes(cfg, fmt)
            emb = "n/a" if fmt in ("float32", "bfloat16") else ("quantized" if qe else dtype)
            out.append(f"| {name} | {fmt}{' g=128' if fmt.startswith('int4') else ''} | {b.dtype} | {emb} "
                       f"| {b.weights:,} B ({format_bytes(b.weights)}) | {format_bytes(approx)} | {b.weights / approx:.2f} "
                       f"| {'yes' if b.buildable_on_cpu else 'no: arithmetic'} |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/finetune-serving.md")
    args = ap.parse_args()
    lines = [
        "# Fine-tuning parameters and serving sizes",
        "",
        "Written by `python scripts/finetune_tables.py`; every number is albert_core's, and each function is tested "
        "against the real thing: trainable counts against peft 0.21.2's `get_nb_trainable_parameters` "
        "(tests/test_finetune.py), head counts against transformers 5.23's `AutoModelFor...` (tests/test_heads.py), "
        "serving bytes against the storage of models torchao 0.18.0 quantizes on the CPU (tests/test_serving.py). "
        "The training step's peak for these modes comes with the measurement engine (issue 18, item 1).",
        "",
        "## Trainable parameters, sequence classification with 2 labels",
        "",
        "peft's `PeftModelForSequenceClassification` puts `classifier` and `score` in `modules_to_save`: the classifier "
        "trains as a copy beside its frozen original, so *all params* counts it twice (and RoBERTa's whole "
        "`classifier` head, dense + out_proj). LoRA adds r·(in + out) per adapted Linear. BitFit: every bias, plus the "
        "new classifier in full.",
        "",
        *trainable_table("classification", 2),
        "",
        "## Serving sizes (weights at rest, base model)",
        "",
        "int8: torchao `Int8WeightOnlyConfig()` (int8 per weight, a float32 scale and an int8 zero point per row). "
        "int4: `IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(128))`, the int4 torchao builds on "
        "the CPU, which keeps one int4 value per byte. int4-packed: `Int4WeightOnlyConfig(group_size=128)`, two values "
        "per byte, which torchao 0.18 builds only with CUDA (tinygemm) or the mslk kernels: its bytes are the layout's "
        "arithmetic. Embedding tables are not quantized by torchao's default filter (nn.Linear only); "
        "\"quantized\" applies the same config to every nn.Embedding. The ÷ rule is accelerate's estimate-memory "
        "(parameters × 4 bytes ÷ 1, 2, 4, 8).",
        "",
        *serving_table(),
        "",
    ]
    out = Path(args.out)
    old = out.read_text() if out.exists() else ""
    kept = old[old.index(MARKER):] if MARKER in old else ""  # benchmarks/finetune_table.py's section, written by hand
    out.write_text("\n".join(lines) + ("\n" + kept if kept else ""))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
