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
