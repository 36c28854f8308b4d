"""GPU memory sizes, in bytes, as the driver reports them (what a training job can address at most).

"GB" on a datasheet is not one unit: NVIDIA's "80 GB" A100 reports 81,920 MiB (80 GiB) in
nvidia-smi, while the "80 GB" H100 reports 81,559 MiB and the "141 GB" H200 143,771 MiB (140.4 GiB;
141·10^9 bytes would be 131.3 GiB). We use the total memory nvidia-smi reports (MiB × 2^20), listed for
these GPUs in modal-labs/modal-client PR #2797 ("nvidia quotes GB on their GPUs not GiB"): H100 81559MiB,
A100 80GB 81920MiB, A100 40GB 40960MiB, A10 23028MiB, L4 23034MiB, T4 15360MiB; the H200's 143771MiB is
what nvidia-smi prints for "NVIDIA H200" in published logs (SXM, "0MiB / 143771MiB"; until 2026-12-05 this
table used the datasheet's 141·10^9 bytes, 9.1 GiB less, and planned H200 fits short). The CUDA context and
the caching allocator's fragmentation take a few hundred MiB more of it: pass `overhead_bytes` to the fit
planner to hold that back.
"""

from __future__ import annotations

MIB = 1 << 20

GPUS: dict[str, int] = {
    "T4 16 GB": 15360 * MIB,  # 16,106,127,360 bytes (15.0 GiB)
    "L4 24 GB": 23034 * MIB,  # 24,152,899,584 bytes (22.5 GiB)
    "A10 24 GB": 23028 * MIB,  # 24,146,608,128 bytes (22.5 GiB)
    "A100 40 GB": 40960 * MIB,  # 42,949,672,960 bytes (40.0 GiB)
    "A100 80 GB": 81920 * MIB,  # 85,899,345,920 bytes (80.0 GiB)
    "H100 80 GB": 81559 * MIB,  # 85,520,809,984 bytes (79.6 GiB)
    "H200 141 GB": 143771 * MIB,  # 150,754,820,096 bytes (140.4 GiB)
}

# CUDA compute capability of each GPU (NVIDIA's "CUDA GPUs - Compute Capability" table): bfloat16 tensor cores came
# with Ampere, 8.0 (NVIDIA A100 Tensor Core GPU Architecture whitepaper, "BF16"); the T4 is Turing, 7.5
COMPUTE_CAPABILITY: dict[str, tuple[int, int]] = {
    "T4 16 GB": (7, 5),
    "L4 24 GB": (8, 9),
    "A10 24 GB": (8, 6),
    "A100 40 GB": (8, 0),
    "A100 80 GB": (8, 0),
    "H100 80 GB": (9, 0),
    "H200 141 GB": (9, 0),
}
BF16_PRECISIONS = ("bfloat16", "mixed_bf16", "bf16_master")
FP16_OF = {"bfloat16": "float16", "mixed_bf16": "mixed_fp16", "bf16_master": "fp16_master"}  # the same bytes


def precision_note(gpu: str, precision: str) -> str | None:
    """What the GPU says of the precision, where it matters: bfloat16 on a GPU without bfloat16 tensor cores
    (compute capability below 8.0). The bytes are the same; the speed, and on some ops the support, are not.
    None where there is nothing to say (or the GPU is not in COMPUTE_CAPABILITY)."""
    cc = COMPUTE_CAPABILITY.get(gpu)
    if cc is None or cc >= (8, 0) or precision not in BF16_PRECISIONS:
        return None
    # torch.cuda.is_bf16_supported(including_emulation=True), PyTorch's default, only allocates a bfloat16 tensor
    # below 8.0, so it (and transformers' bf16 check, which calls it) says yes
    return (f"The {gpu} (compute capability {cc[0]}.{cc[1]}) has no bfloat16 tensor cores (Ampere, 8.0, brought "
            f"them): {precision} runs far slower there than {FP16_OF[precision]}, which holds the same bytes (the "
            "memory here is the same) and needs a loss scaler; torch.cuda.is_bf16_supported() says True all the same.")
