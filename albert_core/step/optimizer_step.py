"""The optimizer step's temporaries, replayed per tensor as torch.optim allocates them (albert_core.step.peak's
optimizer-step candidate; the module docstring there says what each optimizer allocates). No torch here.
"""

from __future__ import annotations

from ..estimate.finetune import Tensor

CUDA_BLOCK = 512  # c10/cuda/CUDACachingAllocator.cpp: kMinBlockSize, every allocation rounded up to it


# ---- the optimizer step, replayed per tensor ------------------------------------------------------------------
def optimizer_temporaries(ts: list[Tensor], optimizer: str, nbytes: int, foreach: bool = False,
                          cuda: bool = False) -> int:
    """The most bytes of temporaries alive at once during optimizer.step() for the trainable tensors in
    named_parameters() order, elements of nbytes: torch/optim's single-tensor paths (the CPU's default), or
    with foreach=True its multi-tensor paths (CUDA's default; see foreach_temporaries). cuda: each tensor
    rounded up as the caching allocator hands it out (cuda_rounded)."""
    train = [t for t in ts if t.trainable]
    if foreach:
        return foreach_temporaries(train, optimizer, nbytes, cuda)
    if optimizer == "sgd":
        return 0  # buf.mul_(momentum).add_(grad); param.add_(buf, alpha=-lr): all in place
    if optimizer == "adamw":
        best, prev = 0, 0
        for t in train:  # exp_avg_sq.sqrt() and its quotient, the previous denom still bound
            best = max(best, prev + 2 * t.numel)
            prev = t.numel
        return best * nbytes
    live: dict[str, int] = {}  # local name -> elements alive (survives into the next iteration until rebound)
    best = 0

    def now(extra: int = 0) -> None:
        nonlocal best
        best = max(best, sum(live.values()) + extra)

    def rebind(name: str, n: int) -> None:
        live["_new"] = n  # the new value exists before the old one is dropped
        now()
        live[name] = live.pop("_new")

    for t in train:
        now(1)  # param.norm(2): a 0-d tensor, freed after .item()
        if len(t.shape) == 2:
            n, m = t.shape
            rebind("row_mean", n)  # torch.norm(grad, dim=-1, keepdim=True): (n, 1)
            rebind("col_mean", m)  # (1, m)
            rebind("var_estimate", n * m)  # row_var @ col_var; the previous update (same storage) still bound
            now(1)  # row_var.mean(dim=-2, keepdim=True): (1, 1), freed after div_
        else:
            rebind("grad_squared", t.numel)  # grad * grad
            rebind("var_estimate", t.numel)  # variance.clone()
        live.pop("update", None)  # update = var_estimate.clamp_(...).rsqrt_(): the previous update dropped
        live["update"] = live.pop("var_estimate")
        now(1)  # update.norm(2): 0-d
    return best * nbytes


def foreach_temporaries(train: list[Tensor], optimizer: str, nbytes: int, cuda: bool = False) -> int:
    """torch.optim's multi-tensor step (foreach=True, the default on CUDA: optimizer.py
    _default_to_fused_or_foreach), its temporaries at their most, for the trainable tensors `train` (one
    device and dtype: one group), bytes. Each foreach op returns one tensor per input; a list stays alive
    until its name is rebound, in the next group's iteration.
    AdamW (adam.py _multi_tensor_adam, not capturable): exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs),
    then divided and added to in place: one state-sized tensor per parameter.
    SGD with momentum (sgd.py _multi_tensor_sgd): _foreach_mul_, _foreach_add_: none.
    Adafactor (_adafactor.py _multi_tensor_adafactor), its groups split by matrix or vector in the order their
    first tensor comes: a matrix group's row_means (n, 1) each, freed, col_means (1, m), freed, var_estimates =
    row_var @ col_var (n, m) with row_var_means (1, 1); a vector group's grads_squared = _foreach_mul (n),
    freed, var_estimates = clones (n); the previous group's updates (its var_estimates) stay bound until
    `updates = var_estimates`; p.norm(2) and update.norm(2) are 0-d, freed after .item()."""
    def size(numels: list[int]) -> int:
        return sum(cuda_rounded(n * nbytes) if cuda else n * nbytes for n in numels)

    if optimizer == "sgd" or not train:
        return 0
    if optimizer == "adamw":
        return size([t.numel for t in train])
    groups: dict[bool, list[Tensor]] = {}
    for t in train:
        groups.setdefault(len(t.shape) > 1, []).append(t)
    best, prev = 0, 0
    for matrix, g in groups.items():
        scalar = size([1])  # a 0-d norm
        best = max(best, prev + scalar)  # alphas: p.norm(2).item()
        if matrix:
            best = max(best, prev + size([t.shape[0] for t in g]), prev + size([t.shape[1] for t in g]))
            est = size([t.numel for t in g])
            best = max(best, prev + est + size([1] * len(g)))  # var_estimates beside row_var_means
        else:
            est = size([t.numel for t in g])
            best = max(best, prev + est)  # grads_squared, then var_estimates (the clones)
        best = max(best, est + scalar)  # update.norm(2).item(), the previous group's updates dropped
        prev = est
    return best


def foreach_adamw_temporaries(ts: list[Tensor], nbytes: int) -> int:
    """CUDA's default AdamW (foreach, torch/optim/adam.py _multi_tensor_adam): torch._foreach_sqrt(exp_avg_sqs)
    over a whole device/dtype group, one state-sized copy of every trainable tensor (then divided in place)."""
    return foreach_temporaries([t for t in ts if t.trainable], "adamw", nbytes)


def cuda_rounded(nbytes: int) -> int:
    """One storage as the CUDA caching allocator hands it out: rounded up to a multiple of 512 bytes."""
    return -(-nbytes // CUDA_BLOCK) * CUDA_BLOCK if nbytes else 0
