"""Fine-tuning on one 24 GB GPU: full against frozen embeddings against LoRA, modelled and measured; serving sizes.

    .venv/bin/python benchmarks/finetune_table.py [--models bert-base,xlm-roberta-base,deberta-v3-base]
        [--batch-size 16] [--seq-len 512] [--no-engine]

For each model at batch × seq_len, mixed bf16 (torch.autocast over float32 weights, as the engine runs it),
sdpa attention (DeBERTa-v2 has no sdpa path in transformers 5.23 and runs its own), AdamW, the base model
with a sequence-classification head of 2 labels, dropout as the preset has it:

* trainable parameters, as peft's get_nb_trainable_parameters counts them (finetune.trainable);
* the step's peak modelled for CUDA (step.step_peak, device="cuda": 1-byte dropout masks), whether it fits
  the GPU (gpus.GPUS: the smaller of the two 24 GB GPUs listed there, with no overhead held back for the
  CUDA context) and the largest batch whose modelled peak fits (a search on step_peak);
* beside it, the engine's peak of the same step, measured on fake tensors with PyTorch's CPU kernels
  (engine.measure on engine.task_model.build's model, peft's get_peft_model for LoRA), and step_peak with
  device="cpu", the modelled number for exactly that step.

Then the weights at rest per serving format (serving.weight_bytes) against parameters × 4 ÷ 1, 2, 4, 8.
Prints markdown; docs/finetune-serving.md holds its output.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import machine_line  # noqa: E402

from albert_core.engine import core as engine  # noqa: E402
from albert_core.engine import task_model  # noqa: E402
from albert_core.estimate import finetune  # noqa: E402
from albert_core.estimate.gpus import GPUS  # noqa: E402
from albert_core.estimate.serving import approximate_bytes, weight_bytes  # noqa: E402
from albert_core.presets import PRESETS  # noqa: E402
from albert_core.step.peak import StepPeakEstimate, step_peak  # noqa: E402
from albert_core.units import format_bytes, format_count  # noqa: E402
from albert_core.workload import Workload  # noqa: E402

MODELS = ("xlm-roberta-base", "deberta-v3-base", "bert-base")
# peft 0.21.2's default LoRA targets for the model types (finetune.PEFT_DEFAULT_TARGETS): query and value
QV = {"deberta-v2": ("query_proj", "value_proj")}
GPU = min((n for n in GPUS if n.endswith(" 24 GB")), key=GPUS.__getitem__)  # the smaller "24 GB": what surely fits
HEAD, LABELS = "classification", 2
DTYPE, ATTENTION, OPTIMIZER = "mixed_bf16", "sdpa", "adamw"
MAX_BATCH = 1 << 14


def modes(cfg) -> list[tuple[str, str, finetune.LoraSpec | None]]:
    lora = finetune.LoraSpec(r=8, lora_alpha=16, targets=QV.get(cfg.family, ("query", "value")))
    return [("full", "full", None), ("frozen embeddings", "frozen-embeddings", None),
            (f"LoRA r=8 ({', '.join(lora.targets or ())})", "lora", lora)]


def peak(cfg, mode: str, lora, batch: int, seq_len: int, device: str) -> StepPeakEstimate:
    return step_peak(cfg, Workload(batch, seq_len, DTYPE, ATTENTION, False, device, OPTIMIZER, None, mode, HEAD, LABELS,
                                   lora))


def largest_batch(cfg, mode: str, lora, seq_len: int, budget: int) -> int:
    """The largest batch whose modelled CUDA peak is at most budget (0 if batch 1 does not fit); the peak grows
    with the batch, so doubling then bisection."""
    def fits(b: int) -> bool:
        return peak(cfg, mode, lora, b, seq_len, "cuda").peak <= budget

    if not fits(1):
        return 0
    lo, hi = 1, 2
    while hi <= MAX_BATCH and fits(hi):
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def measured(cfg, mode: str, lora, batch: int, seq_len: int) -> tuple[engine.StepPeak, float]:
    run = engine.Run(Workload(batch, seq_len, DTYPE, ATTENTION, device="cpu", optimizer=OPTIMIZER))
    t0 = time.perf_counter()
    r = engine.measure(lambda: task_model.build(cfg, mode, head=HEAD, num_labels=LABELS, lora=lora, device="cpu",
                                              attention=ATTENTION), cfg.vocab_size, run, what=("step",))
    assert r.step is not None
    return r.step, time.perf_counter() - t0


def training_table(models: list[str], batch: int, seq_len: int, use_engine: bool) -> list[str]:
    budget = GPUS[GPU]
    out = [f"| model | mode | trainable | modelled peak, CUDA | fits {GPU} | largest batch | "
           "engine peak (fake tensors, CPU kernels) | modelled, CPU | modelled − engine | phase (engine) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for name in models:
        cfg = PRESETS[name]
        for label, mode, lora in modes(cfg):
            t = finetune.trainable(cfg, mode, head=HEAD, num_labels=LABELS, lora=lora)
            cuda = peak(cfg, mode, lora, batch, seq_len, "cuda")
            cpu = peak(cfg, mode, lora, batch, seq_len, "cpu")
            best = largest_batch(cfg, mode, lora, seq_len, budget)
            cells = [name, label, f"{t.trainable:,} ({format_count(t.trainable)}, {t.trainable_pct:.2f}%)",
                     f"{format_bytes(cuda.peak)} ({cuda.phase})", "yes" if cuda.peak <= budget else "no", str(best)]
            if use_engine:
                m, secs = measured(cfg, mode, lora, batch, seq_len)
                diff = (cpu.peak - m.peak) / m.peak
                cells += [f"{format_bytes(m.peak)} ({m.peak:,} B)", format_bytes(cpu.peak), f"{100 * diff:+.1f}%",
                          m.phase]
                print(f"  measured {name} {mode}: {m.peak:,} B in {secs:.1f} s", file=sys.stderr)
            else:
                cells += ["-", format_bytes(cpu.peak), "-", "-"]
            out.append("| " + " | ".join(cells) + " |")
    return out


def serving_table(models: list[str]) -> list[str]:
    formats = (("float32", "float32"), ("bfloat16", "bfloat16"), ("int8", "bfloat16"), ("int4", "bfloat16"),
               ("int4-packed", "bfloat16"))
    out = ["| model | format | weights, embeddings kept | weights, embeddings quantized | parameters × 4 ÷ rule "
           "| kept / rule | built on the CPU |", "|---|---|---|---|---|---|---|"]
    for name in models:
        cfg = PRESETS[name]
        for fmt, dtype in formats:
            kept = weight_bytes(cfg, fmt, dtype=dtype, group_size=128, head=HEAD, num_labels=LABELS)
            quant = (weight_bytes(cfg, fmt, dtype=dtype, group_size=128, quantize_embeddings=True, head=HEAD,
                                  num_labels=LABELS) if fmt.startswith("int") else None)
            rule = approximate_bytes(cfg, fmt, head=HEAD, num_labels=LABELS)
            label = fmt + (" g=128" if fmt.startswith("int4") else "")
            out.append(f"| {name} | {label} | {format_bytes(kept.weights)} ({kept.weights:,} B) | "
                       + (f"{format_bytes(quant.weights)} ({quant.weights:,} B)" if quant else "n/a")
                       + f" | {format_bytes(rule)} | {kept.weights / rule:.2f} | "
                       + ("yes" if kept.buildable_on_cpu else "no: layout arithmetic") + " |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--no-engine", action="store_true", help="the modelled columns only (no torch)")
    args = ap.parse_args()
    models = args.models.split(",")
    print(machine_line())  # the date, CPU and Python
    print(f"\nBatch {args.batch_size} × {args.seq_len}, {DTYPE} (autocast, float32 weights), {ATTENTION}, "
          f"{OPTIMIZER}, head {HEAD}:{LABELS}; {GPU} = {GPUS[GPU]:,} B ({format_bytes(GPUS[GPU])}), no overhead.\n")
    print("\n".join(training_table(models, args.batch_size, args.seq_len, not args.no_engine)))
    print("\nServing, weights at rest (rest kept in bfloat16 for int8/int4; group size 128):\n")
    print("\n".join(serving_table(models)))


if __name__ == "__main__":
    main()
