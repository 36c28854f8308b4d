"""The engine's dispatch mode: every storage an op creates, from the tick it is born to the tick PyTorch frees it
(LiveStorages, built on torch.utils._python_dispatch.TorchDispatchMode), by module and category, with the values
fake tensors cannot know (a LayerNorm's statistics, tensors of ones), and the safe points where a Stop may be
raised. torch is imported inside the functions.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from .types import CATEGORIES, EngineError

# A safe point: called before each op the engine's dispatch mode sees and between a build's parts. The warm
# measurement process (child_warm.serve) sets it to raise its Stop there, where an exception passes through PyTorch's
# dispatcher as any op's error does; raised from a signal handler instead, it could land under a C++ frame that
# cannot pass it on (a destructor, a noexcept callback), and torch aborts ("terminate called after throwing an
# instance of 'python_error'": 2 of 28 time-limit stops beside two busy loops, 2026-12-03).
safe_point: Callable[[], None] = lambda: None  # noqa: E731



# ---- the dispatch mode ---------------------------------------------------------------------------

class _Rec:
    __slots__ = ("born", "died", "nbytes", "category")

    def __init__(self, born: int, nbytes: int, category: str):
        self.born, self.died, self.nbytes, self.category = born, -1, nbytes, category


def _key(t: Any) -> int:
    return int(t.untyped_storage()._cdata)


class _Storages:
    """The bookkeeping of LiveStorages (below): records by storage, a clock, the live bytes and their peak."""

    def __init__(self, existing: dict[int, tuple[int, str]], module: Callable[[], str]):
        self.clock = 0
        self.recs: dict[int, _Rec] = {}  # storage key -> its current record
        self.all: list[_Rec] = []
        for k, (n, cat) in existing.items():
            r = _Rec(0, n, cat)
            self.recs[k] = r
            self.all.append(r)
        self.live = sum(r.nbytes for r in self.all)
        self.peak, self.peak_tick, self.phase, self.peak_phase = self.live, 0, "forward", "forward"
        self.module, self.peak_module = module, ""
        self.ones = _Ones()  # fake tensors known to hold only ones (True)
        self.lives: set[Any] | None = None  # a set: every live total kept, none compared (see observe)

    def _free(self, key: int, rec: _Rec) -> None:
        self.clock += 1
        rec.died = self.clock
        self.live -= rec.nbytes
        if self.recs.get(key) is rec:
            del self.recs[key]

    def record(self, t: Any) -> _Rec | None:
        """The record of t's storage: the existing one, or a new one born now (freed when PyTorch frees it)."""
        st = t.untyped_storage()
        k = int(st._cdata)
        if k in self.recs:
            return self.recs[k]
        self.clock += 1
        rec = _Rec(self.clock, st.nbytes(), "temporaries")
        self.recs[k] = rec
        self.all.append(rec)
        self.live += rec.nbytes
        weakref.finalize(st, self._free, k, rec)
        return rec

    def observe(self) -> None:
        if self.lives is not None:  # sizes are symbols (engine/trace.py): every live total is a candidate, kept as
            live = self.live  # its sympy expression; comparing two would make PyTorch fix the symbols' relation
            self.lives.add(getattr(getattr(live, "node", None), "expr", live))  # (a guard)
            return
        if self.live > self.peak:
            self.peak, self.peak_tick, self.peak_phase = self.live, self.clock, self.phase
            self.peak_module = self.module()

    def alive_at_peak(self) -> dict[str, int]:
        out = dict.fromkeys(CATEGORIES, 0)
        for r in self.all:
            if r.born <= self.peak_tick and (r.died < 0 or r.died > self.peak_tick):
                out[r.category] += r.nbytes
        return out


def _known_value(mode: _Storages, t: Any) -> bool | int | float | None:
    """What .item() of a fake tensor is where the run knows it, else None (then PyTorch says it cannot know)."""
    import torch

    if t in mode.ones:  # a mask the model made of ones: torch.all(mask) (see _follow_ones)
        return True if t.dtype == torch.bool else 1 if not t.is_floating_point() else 1.0
    if mode.phase == "optimizer step":
        # .item() in an optimizer step (Adafactor's param.norm(2).item(), torch/optim/_adafactor.py) feeds
        # Python arithmetic on a learning rate, never a shape or an allocation
        return False if t.dtype == torch.bool else 1 if not t.is_floating_point() else 1.0
    return None


_COMPUTES: dict[Any, bool] = {}


def _computes(func: Any) -> bool:
    """Whether an op is an aten op that returns a tensor: a safe point. Not a query of a tensor's metadata
    (prim.device, aten.sym_size, aten.is_contiguous ...), which PyTorch's C++ getters call where an exception cannot
    pass (a Stop raised at prim.device aborted the process: 6 of 6 aborts in 80 stops beside two busy loops)."""
    import torch

    known = _COMPUTES.get(func)
    if known is None:
        known = _COMPUTES[func] = func.namespace == "aten" and any(
            isinstance(r.type, torch.TensorType) for r in func._schema.returns)
    return known


def _live_storages() -> Any:
    """The one TorchDispatchMode class (built on first use: torch is imported only here)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    queries = _fake_queries()
    local_scalar, layer_norm = torch.ops.aten._local_scalar_dense.default, torch.ops.aten.native_layer_norm.default
    pad = torch.ops.aten.constant_pad_nd.default
    tensor = torch.Tensor

    class LiveStorages(_Storages, TorchDispatchMode):  # type: ignore[misc]  # torch is untyped here (pyproject)
        """Every storage an op creates, from the tick it is born to the tick PyTorch frees it."""

        @classmethod
        def _should_skip_dynamo(cls) -> bool:  # no _disable_dynamo wrapper per op (torch/utils/_python_dispatch.py
            return False  # TorchDispatchMode.__init_subclass__): the engine never compiles, and it cost 3% of a run

        def __init__(self, existing: dict[int, tuple[int, str]], module: Callable[[], str]):
            TorchDispatchMode.__init__(self)
            _Storages.__init__(self, existing, module)

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            query = queries.get(func)
            if query is not None and not kwargs and all(type(a) is FakeTensor for a in args):
                return query(args)  # a fake tensor's metadata, as FakeTensorMode answers it (_fake_queries)
            if _in_place_foreach(func) and _fakes_in_step(args, kwargs, FakeTensor):
                return None  # nothing to make: an in-place foreach op's outputs are its inputs (see _in_place_foreach)
            if _computes(func):  # before the op: a Stop leaves nothing half-recorded
                safe_point()
            if func is local_scalar and isinstance(args[0], FakeTensor):
                value = _known_value(self, args[0])
                if value is not None:
                    return value
            kwargs = kwargs or {}
            if func is pad and _symbolic(args[0]):  # FakeTensorMode's constant_pad_nd asks sizes as ints (aten.size),
                res = torch._refs.constant_pad_nd(*args, **kwargs)  # which fixes a symbol (a causal LM's labels'
            else:  # pad): its reference, one output of the same size (a fill and a copy into it), keeps B and S free
                res = func(*args, **kwargs)
            if isinstance(res, tensor):  # most ops: one tensor out
                _follow_ones(self.ones, func, args, kwargs, res)
                self.record(res)
            else:
                if func is layer_norm:
                    res = _layer_norm_stats(args, res)
                flat = res if type(res) in (tuple, list) and all(type(t) is not tuple and type(t) is not list
                                                                 for t in res) else tree_flatten(res)[0]
                for t in flat:
                    if isinstance(t, tensor):
                        self.record(t)
            self.observe()
            return res

    return LiveStorages


def _symbolic(t: Any) -> bool:
    """Whether a tensor's sizes hold symbols (engine/trace.py's run)."""
    import torch

    return isinstance(t, torch.Tensor) and any(not isinstance(n, int) for n in t.shape)


_IN_PLACE_FOREACH: dict[Any, bool] = {}


def _in_place_foreach(func: Any) -> bool:
    """Whether an op is an in-place foreach op (aten::_foreach_add_, _lerp_, _addcdiv_ ...: an optimizer's step over
    every parameter at once): it writes into its first argument's tensors and returns nothing
    (native_functions.yaml: `Tensor(a!)[] self ... -> ()`), so on fake tensors, which hold no values, it makes
    nothing. FakeTensorMode still runs each tensor's meta kernel in Python (torch/_subclasses/fake_impls.py
    foreach_run_and_map_input_device) only to check shapes: 0.2 s an op for bert-base's 201 parameters, a third of
    a small model's whole measurement (2026-12-07). The engine checks what can differ (_fakes_in_step) and returns."""
    known = _IN_PLACE_FOREACH.get(func)
    if known is None:
        schema = func._schema
        first = schema.arguments[0] if schema.arguments else None
        known = _IN_PLACE_FOREACH[func] = (
            func.namespace == "aten" and schema.name.startswith("aten::_foreach_") and schema.name.endswith("_")
            and not schema.returns and first is not None and first.alias_info is not None
            and first.alias_info.is_write and str(first.type) == "List[Tensor]")
    return known


def _fakes_in_step(args: Any, kwargs: Any, fake: Any) -> bool:
    """An in-place foreach op's arguments as an optimizer passes them: a list of fake tensors, other lists of as many
    fake tensors of the same shapes, dtypes and devices (or numbers), and scalars (numbers or 0-d fake tensors).
    Anything else (real tensors, a broadcast, a mismatch that should raise) goes through FakeTensorMode."""
    selves = args[0] if args else None
    if type(selves) is not list or not selves or any(type(t) is not fake for t in selves):
        return False
    for a in (*args[1:], *(kwargs or {}).values()):
        if type(a) in (list, tuple):
            if len(a) != len(selves):
                return False
            for x, t in zip(a, selves, strict=True):
                if type(x) is fake:
                    if x.shape != t.shape or x.dtype != t.dtype or x.device != t.device:
                        return False
                elif type(x) not in (int, float, bool):
                    return False
        elif type(a) is fake:
            if a.dim() != 0:
                return False
        elif type(a) not in (int, float, bool, type(None)):
            return False
    return True


def _fake_queries() -> dict[Any, Callable[[Any], Any]]:
    """The metadata queries FakeTensorMode answers first, before anything else it does (torch/_subclasses/
    fake_tensor.py FakeTensorMode.dispatch: `if func in _DISPATCH_META_HANDLERS: return ...(args)`): prim.device
    above all, which PyTorch's C++ asks of every fake tensor it touches (3,589 of a bert-base backward's 5,292
    dispatched ops, 2026-12-06). The engine's mode answers them the same way without the round trip through the
    dispatcher and FakeTensorMode's Python; none creates a storage. Empty where torch has no such table."""
    try:
        from torch._subclasses.fake_tensor import _DISPATCH_META_HANDLERS
    except ImportError:
        return {}
    return dict(_DISPATCH_META_HANDLERS)


class _Ones:
    """A set of tensors by identity (a WeakSet would compare tensors with ==, elementwise), dropped when freed."""

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref[Any]] = {}

    def add(self, t: Any) -> None:
        key = id(t)

        def gone(_: Any) -> None:
            self._refs.pop(key, None)

        self._refs[key] = weakref.ref(t, gone)

    def __contains__(self, t: Any) -> bool:
        r = self._refs.get(id(t))
        return r is not None and r() is t


# ops whose output holds only ones when their tensor input does (views, copies, casts, reductions by all)
_KEEP_ONES = ("view", "_unsafe_view", "reshape", "expand", "unsqueeze", "squeeze", "slice", "select", "permute",
              "t", "transpose", "clone", "contiguous", "_to_copy", "to", "all", "alias", "detach", "lift_fresh",
              "repeat", "expand_copy", "view_copy")


_NAMES: dict[Any, str] = {}  # an op's name (its overload packet's), looked up once


def _follow_ones(ones: Any, func: Any, args: Any, kwargs: dict[str, Any], res: Any) -> None:
    """Constant propagation of all-ones tensors, just far enough for the masks a model makes of torch.ones.

    A model given no attention_mask builds one of ones and Hugging Face's masking code asks torch.all(mask)
    (transformers/masking_utils.py _ignore_bidirectional_mask_sdpa) to drop it: with this the fake run answers
    as the real one does. Sources: ones, ones_like, new_ones, full with 1; then the ops above and ==1, !=0, >0.
    """
    import torch

    if not isinstance(res, torch.Tensor):
        return
    name = _NAMES.get(func)
    if name is None:
        name = _NAMES[func] = func.overloadpacket.__name__
    if name in ("ones", "ones_like", "new_ones") or (name in ("full", "full_like", "new_full", "fill")
                                                      and _scalar(args, kwargs, -1) == 1):
        ones.add(res)
    elif args and isinstance(args[0], torch.Tensor) and args[0] in ones:
        if name in _KEEP_ONES or (name == "eq" and _scalar(args, kwargs, 1) == 1) or \
                (name in ("ne", "gt") and _scalar(args, kwargs, 1) == 0):
            ones.add(res)


def _scalar(args: Any, kwargs: dict[str, Any], i: int) -> Any:
    v = kwargs.get("fill_value", kwargs.get("value", kwargs.get("other")))
    if v is None and len(args) > abs(i) - (1 if i < 0 else 0):
        v = args[i]
    return v if isinstance(v, int | float | bool) else None


def _layer_norm_stats(args: Any, res: Any) -> Any:
    """native_layer_norm's mean and rstd as the CPU kernel makes them: float32 for a 16-bit input with a float32
    weight (aten/src/ATen/native/layer_norm.cpp, mixed_type; under autocast, ALBERT's LayerNorm meets bf16 input).

    The meta kernel that fake tensors run gives them the input's dtype; on real tensors this changes nothing.
    """
    import torch

    x, weight = args[0], args[2] if len(args) > 2 else None
    out, mean, rstd = res
    if (x.device.type == "cpu" and x.dtype in (torch.bfloat16, torch.float16) and weight is not None
            and weight.dtype == torch.float32 and mean.dtype != torch.float32):
        return out, torch.empty_like(mean, dtype=torch.float32), torch.empty_like(rstd, dtype=torch.float32)
    return res


def _module_stack(model: Any) -> tuple[list[str], list[Any]]:
    """Forward pre/post hooks that keep the name of the innermost running module."""
    stack: list[str] = []
    handles = []

    def pop(mod: Any, args: Any, output: Any) -> None:
        if stack:
            stack.pop()

    def push(name: str) -> Callable[[Any, Any], None]:
        def hook(mod: Any, args: Any) -> None:
            stack.append(name)
        return hook

    for name, mod in model.named_modules():
        handles.append(mod.register_forward_pre_hook(push(name)))
        handles.append(mod.register_forward_hook(pop))
    return stack, handles


@contextlib.contextmanager
def _stopped_by(model: Any) -> Iterator[None]:
    """Turn what stops PyTorch (a data-dependent op under fake tensors, ...) into an EngineError naming it."""
    try:
        yield
    except EngineError:
        raise
    except Exception as e:  # noqa: BLE001 - re-raised with the op and the model named
        from torch._subclasses.fake_tensor import DataDependentOutputException, UnsupportedOperatorException

        name = type(model).__name__
        if isinstance(e, DataDependentOutputException | UnsupportedOperatorException):
            op = getattr(e, "func", None)
            raise EngineError(
                f"{name} could not run on fake tensors: the op {op} needs the tensors' values "
                f"({type(e).__name__}); measure it on real tensors (Verify's 'real tensors', `verify --real`) "
                "at a size this machine can hold") from e
        if isinstance(e, MemoryError) or "can't allocate" in str(e).lower():
            raise
        raise EngineError(f"{name} stopped with {type(e).__name__}: {str(e)[:300]}") from e
