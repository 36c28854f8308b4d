"""Bytes as polynomials in batch and sequence length, from one trace of the real model (issue 54, point 5).

The engine (core.py) runs Hugging Face's own module under FakeTensorMode; here the same run is made once with the
input's batch B and sequence S as symbols of a torch ShapeEnv (torch.fx.experimental.symbolic_shapes), so every
storage's bytes are sympy expressions in B and S and the bytes a training forward saves come out as one exact
polynomial, for any model transformers builds from a config.json (encoders and decoders alike) and no hand-written
copy of its forward. Where the model's code branches on a size, PyTorch records a guard (S <= max_position,
S >= a sliding window): the polynomial holds wherever its guards hold, and `Trace.holds(B, S)` says whether they do.
A symbol stands for a size of at least 2 (PyTorch specializes 0 and 1: a size-1 dimension broadcasts and its views
merge, so B = 1 saves other storages): trace B = 1 with a workload of batch 1, which keeps B the number 1.

Config sizes (hidden, intermediate, heads, layers) stay the config's integers: one trace serves one config at every
(B, S). torch is imported inside the functions.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .types import EngineError

if TYPE_CHECKING:
    from ..workload import Workload

HINT = (3, 37)  # (B, S) a trace runs at by default: sizes no code has a special case for (1, 2, powers of two)


@dataclass(frozen=True)
class Polynomial:
    """sum(c * B**i * S**j) over its terms ((i, j, c), highest power first), exact integers."""

    terms: tuple[tuple[int, int, int], ...]

    def __call__(self, batch_size: int, seq_len: int) -> int:
        return sum(c * batch_size**i * seq_len**j for i, j, c in self.terms)

    def __str__(self) -> str:
        def term(i: int, j: int, c: int) -> str:
            vars_ = [v + (f"^{n}" if n > 1 else "") for v, n in (("B", i), ("S", j)) if n]
            return "·".join(([f"{abs(c):,}"] if abs(c) != 1 or not vars_ else []) + vars_)

        out = ""
        for i, j, c in self.terms:
            out += ((" - " if out else "-") if c < 0 else " + " if out else "") + term(i, j, c)
        return out or "0"


@dataclass(frozen=True)
class Trace:
    """What one symbolic run of a training forward gave: the saved bytes' polynomial and where it holds."""

    saved: Polynomial  # bytes autograd saves for backward (parameters excluded, each storage once): engine.saved_bytes
    guards: tuple[str, ...]  # relations between B and S the model's code assumed, in sympy's words ("S <= 512")
    ranges: tuple[tuple[str, int, int | None], ...]  # (size, lowest, highest or None) where the trace holds
    model_type: str
    attention: str
    seconds: float  # the trace's wall time

    def holds(self, batch_size: int, seq_len: int) -> bool:
        """Whether (B, S) is inside the ranges and every guard holds there: the polynomial is the model's bytes."""
        return _holds(self.guards, self.ranges, batch_size, seq_len)


def _holds(guards: tuple[str, ...], ranges: tuple[tuple[str, int, int | None], ...], batch_size: int,
           seq_len: int) -> bool:
    import sympy

    values = {"B": batch_size, "S": seq_len}
    if any(not lo <= values[n] <= (values[n] if hi is None else hi) for n, lo, hi in ranges):
        return False
    b, s = sympy.symbols("B S", integer=True, positive=True)
    return all(bool(sympy.sympify(g, locals={"B": b, "S": s}).subs({b: batch_size, s: seq_len})) for g in guards)


def trace_saved(hf: dict[str, Any], w: Workload | None = None) -> Trace:
    """The bytes a training-mode forward of hf's base model (AutoModel.from_config of a config.json dict) saves for
    backward under w (its precision, attention and checkpointing; its batch and length are the hint the symbols
    run at, so the polynomial holds there), as a Polynomial in B and S. EngineError when transformers cannot build
    the config."""
    import torch

    from .building import autocast, build_auto, fake_build, prepare, tensor_mode
    from .core import saved_bytes
    from .types import Run

    w = w or _default_workload()
    start = time.perf_counter()
    env, symbol = _shape_env()
    with tensor_mode(True, shape_env=env):
        with fake_build():  # peft's adapters moved to their layer's device: fake tensors cannot be swapped in place
            model = prepare(build_auto(hf, w.attention, w.head, w.trained_lora), Run(w, fake=True), True)
        B, S = symbol("B", w.batch_size), symbol("S", w.seq_len)
        ids = torch.zeros((B, S), dtype=torch.long)
        total, _ = saved_bytes(model, ids, autocast(w.precision))
    names = _names(B, S)
    return Trace(saved=_polynomial(total, names), guards=_guards(env, names), ranges=_ranges(env, B, S),
                 model_type=str(hf.get("model_type")), attention=w.attention, seconds=time.perf_counter() - start)


def _names(B: Any, S: Any) -> dict[Any, str]:
    """Each size symbol's sympy expression -> its name (a size fixed at 1 is no symbol)."""
    return {x.node.expr: n for x, n in ((B, "B"), (S, "S")) if not isinstance(x, int)}


def _shape_env() -> tuple[Any, Callable[[str, int], Any]]:
    """A ShapeEnv and a maker of its size symbols: symbol(name, hint) is a SymInt, or the int 1 for a hint of 1 (a
    size-1 dimension is its own case: module docstring)."""
    from torch._dynamo.source import ConstantSource
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv

    env = ShapeEnv()

    def symbol(name: str, hint_value: int) -> Any:
        if hint_value == 1:
            return 1
        sym = env.create_symbol(hint_value, source=ConstantSource(name), dynamic_dim=DimDynamic.DYNAMIC)
        return env.create_symintnode(sym, hint=hint_value)

    return env, symbol


def _ranges(env: Any, B: Any, S: Any) -> tuple[tuple[str, int, int | None], ...]:
    return tuple((n, 1, 1) if isinstance(x, int) else (n, *_range(env, x.node.expr)) for x, n in ((B, "B"), (S, "S")))


def _range(env: Any, sym: Any) -> tuple[int, int | None]:
    """(lowest, highest or None) the ShapeEnv allows a symbol: 2 and unbounded unless a guard narrowed it."""
    import sympy
    from torch.utils._sympy.numbers import int_oo

    r = env.var_to_range[sym]
    hi = None if r.upper in (int_oo, sympy.oo) else int(r.upper)
    return int(r.lower), hi


@dataclass(frozen=True)
class StepTrace:
    """What one symbolic run of a training step gave (engine.step_peak's step: forward, loss, backward, the
    optimizer's step 2): the live bytes after each op, as polynomials, those no other one bounds from above kept."""

    candidates: tuple[Polynomial, ...]  # the step's peak at (B, S) is the largest of them there
    events: int  # storages made or freed in the step (the dispatch mode's clock)
    distinct: int  # distinct live totals after an op
    guards: tuple[str, ...]
    ranges: tuple[tuple[str, int, int | None], ...]
    seconds: float

    def peak(self, batch_size: int, seq_len: int) -> int:
        """The step's peak bytes at (B, S) (where holds(B, S))."""
        return max(c(batch_size, seq_len) for c in self.candidates)

    def holds(self, batch_size: int, seq_len: int) -> bool:
        return _holds(self.guards, self.ranges, batch_size, seq_len)


def trace_step(hf: dict[str, Any], w: Workload | None = None) -> StepTrace:
    """The training step's live bytes as polynomials in B and S: the engine's step under w (core.step_peak: its
    precision, attention, checkpointing and optimizer with its default arguments; w's batch and length the hint)
    run once with B and S as symbols."""
    import torch

    from .building import build_auto, fake_build, prepare, tensor_mode
    from .core import _run_step, _tie, _unreached
    from .types import Run

    w = w or _default_workload()
    start_time = time.perf_counter()
    env, symbol = _shape_env()
    run = Run(w, fake=True)
    with tensor_mode(True, shape_env=env):
        torch.manual_seed(run.seed)
        with fake_build():
            model = build_auto(hf, w.attention, w.head, w.trained_lora)
        _tie(model)
        model = prepare(model, run, True)
        B, S = symbol("B", w.batch_size), symbol("S", w.seq_len)
        ids = torch.zeros((B, S), dtype=torch.long)
        mode, start, owner, _ = _run_step(model, ids, run)
        untouched = sum(start[k].nbytes for k in _unreached(owner))  # state a real step 1 would not have made
        lives = [e - untouched for e in mode.lives]
        events = mode.clock
        del model, mode, start, owner
    names = _names(B, S)
    polys = {_polynomial(e, names) for e in lives}
    return StepTrace(candidates=_undominated(polys), events=events, distinct=len(polys), guards=_guards(env, names),
                     ranges=_ranges(env, B, S), seconds=time.perf_counter() - start_time)


def _default_workload() -> Workload:
    """float32, eager, AdamW on the CPU at the HINT sizes: the engine's plainest step."""
    from ..workload import Workload

    return Workload(HINT[0], HINT[1], "float32", "eager", device="cpu")


def _undominated(polys: set[Polynomial]) -> tuple[Polynomial, ...]:
    """The polynomials no other one is at least as large as in every coefficient (the monomials B^i·S^j are positive,
    so such a one is at least as large at every (B, S)): the candidates for a peak."""
    coeffs = [dict(((i, j), c) for i, j, c in p.terms) for p in polys]
    keys = sorted({k for c in coeffs for k in c})
    rows = sorted({tuple(c.get(k, 0) for k in keys) for c in coeffs}, reverse=True)
    kept: list[tuple[int, ...]] = []
    for r in rows:  # a row that dominates r sorts before it
        if not any(all(a >= b for a, b in zip(k, r, strict=True)) for k in kept):
            kept.append(r)
    return tuple(Polynomial(tuple(sorted(((i, j, c) for (i, j), c in zip(keys, r, strict=True) if c), reverse=True)))
                 for r in kept)


def _polynomial(total: Any, names: dict[Any, str]) -> Polynomial:
    """A SymInt, its sympy expression or an int (bytes that depend on neither size) as a Polynomial in the symbols
    named B and S."""
    import sympy

    if isinstance(total, int):
        return Polynomial(((0, 0, total),) if total else ())
    expr = total.node.expr if hasattr(total, "node") else total  # a SymInt, or its sympy expression already
    unknown = expr.free_symbols - set(names)
    if unknown:
        raise EngineError(f"the saved bytes depend on sizes other than B and S: {sorted(map(str, unknown))}")
    gens = [k for k in names if k in expr.free_symbols]
    if not gens:
        return Polynomial(((0, 0, int(expr)),) if int(expr) else ())
    poly = sympy.Poly(sympy.expand(expr), *gens)
    power = {"B": 0, "S": 1}
    terms = tuple(sorted(((sum(e for g, e in zip(gens, m, strict=True) if power[names[g]] == 0),
                           sum(e for g, e in zip(gens, m, strict=True) if power[names[g]] == 1), int(c))
                          for m, c in poly.terms()), reverse=True))
    return Polynomial(terms)


def _guards(env: Any, names: dict[Any, str]) -> tuple[str, ...]:
    """The ShapeEnv's guards written in B and S (its own symbols renamed), each once."""
    import sympy

    rename = {k: sympy.Symbol(v, integer=True, positive=True) for k, v in names.items()}
    out: dict[str, None] = {}
    for g in env.guards:
        expr = g.expr.xreplace(rename)
        out.setdefault(str(sympy.simplify(expr) if len(expr.free_symbols) == 1 else expr), None)  # -S <= -7: S >= 7
    return tuple(out)
