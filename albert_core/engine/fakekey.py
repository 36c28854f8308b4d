"""FakeTensorMode with its dispatch cache's key computed in fewer Python calls: the same key, item for item.

A fake-tensor op's cost is mostly FakeTensorMode's Python (issue 52), and about a third of it the cache key
(torch/_subclasses/fake_tensor.py FakeTensorMode._cache_key -> _prep_args_for_hash): every argument goes through
a chain of isinstance checks, and every fake tensor through extract_tensor_metadata (three sparse-layout checks, a
TensorMetadata dataclass) and TensorMetadata._flatten_into (dataclasses.fields, each shape and stride element
through the same chain again). Here the plain values (ints, floats, dtypes, devices ...) take one type lookup, and a
strided fake tensor of this mode is flattened straight into the key: the items extract_tensor_metadata and
_flatten_into would append, in their order. Anything else (a sparse or symbolic tensor, another mode's tensor, a
constant, a SymInt, a function) goes to FakeTensorMode's own code, which also decides when to bypass the cache.
tests/test_fakekey.py holds both keys equal on every op of real models' training steps.

Two more of FakeTensorMode's per-op costs are cut the same way, each held equal to FakeTensorMode's own by the same
tests: a cache hit's output tensor is made without the generator context manager and FakeTensor.__new__'s checks
(`_fresh_fake`), and `__torch_dispatch__` runs without torch's two wrappers around it (dynamo's eval-frame switch and
a debug counter).

Written against torch 2.13.0 (requirements.txt pins it); where the torch in use lacks what it overrides, or is
another release, `fake_mode_class()` is FakeTensorMode itself. torch is imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

VERIFIED_TORCH = "2.13."  # the release whose _prep_args_for_hash and TensorMetadata this mirrors

_CLASS: list[Any] = []  # the class, made once


def fake_mode_class() -> Any:
    """FakeTensorMode with the faster key where this torch is the verified release, else FakeTensorMode."""
    if not _CLASS:
        _CLASS.append(_make())
    return _CLASS[0]


def _make() -> Any:
    import dataclasses

    import torch
    from torch._subclasses import fake_tensor as ft

    base = ft.FakeTensorMode
    fields = [f.name for f in dataclasses.fields(ft.TensorMetadata)] if hasattr(ft, "TensorMetadata") else []
    if not torch.__version__.startswith(VERIFIED_TORCH) or fields != _FIELDS \
            or not hasattr(base, "_prep_args_for_hash"):
        return base
    from torch._prims_common import suggest_memory_format

    slow = base._prep_args_for_hash
    raw_dispatch = _unwrapped(base.__dict__["__torch_dispatch__"])
    slow_output = base._get_output_tensor_from_cache_entry
    debug = ft.FakeTensorConfig
    op_cls = torch._ops.OpOverload
    fake_cls, strided = ft.FakeTensor, torch.strided
    size_cls = torch.Size
    plain = frozenset({int, float, bool, str, type(None), torch.dtype, torch.device, torch.layout,
                       torch.memory_format})

    def flatten(result: list[object], t: Any) -> None:
        """extract_tensor_metadata(t)._flatten_into(result, ...) for a strided, non-symbolic fake tensor."""
        fmt = suggest_memory_format(t)
        if not t.is_contiguous(memory_format=fmt):
            fmt = None
        shape, stride = t.shape, t.stride()
        result.append(t.dtype)
        result.append(size_cls)  # shape: a torch.Size, flattened as _prep_args_for_hash flattens a tuple
        result.append(f"length_{len(shape)}")
        for v in shape:
            result.append(int)
            result.append(v)
        result.append(type(stride))
        result.append(f"length_{len(stride)}")
        for v in stride:
            result.append(int)
            result.append(v)
        result += (t.device, t.layout, fmt, t.storage_offset(), t.untyped_storage().nbytes(), t.requires_grad,
                   t.is_quantized, t.is_conj(), t.is_neg(), t.is_inference(), t.is_sparse, None, None, None)

    fresh = _fresh_fake(ft)

    class FastKeyFakeTensorMode(base):  # type: ignore[misc, valid-type]  # torch is untyped here (pyproject)
        def _get_output_tensor_from_cache_entry(self, state: Any, entry: Any, key: Any, func: Any,
                                                args: Any) -> Any:
            """A cache hit's new output tensor (most ops), as FakeTensorMode's own makes it, in fewer steps."""
            md = entry.metadata
            view = isinstance(func, op_cls) and func.is_view  # its output goes onto its input's storage
            if (md is None or entry.inplace_idx is not None or self.shape_env is not None or md.is_conj or md.is_neg
                    or md.layout is not strided or debug.debug or (view and type(args[entry.view_idx]) is not fake_cls)):
                return slow_output(self, state, entry, key, func, args)  # in-place, symbolic shapes ...: its own
            return fresh(self, md, args[entry.view_idx].untyped_storage() if view else None)

        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False  # no dynamo wrapper around __torch_dispatch__: the engine never compiles (below)

        # FakeTensorMode's own __torch_dispatch__ without its two wrappers (torch/_compile.py _disable_dynamo, which
        # switches the eval frame off and on around every op, and torch/utils/_stats.py count, a debug counter)
        __torch_dispatch__ = raw_dispatch

        def _prep_args_for_hash(self, result: list[object], args: Any, state: Any,
                                id_hashed_objects: list[object]) -> None:
            kind = type(args)
            if kind is dict or not (kind is tuple or kind is list):
                slow(self, result, args, state, id_hashed_objects)  # a dict's keys and values: rare
                return
            result.append(kind)
            result.append(f"length_{len(args)}")
            for arg in args:
                t = type(arg)
                if t in plain:
                    result.append(t)
                    result.append(arg)
                elif (t is fake_cls and arg.fake_mode is self and arg.constant is None and arg.layout is strided
                      and not arg._has_symbolic_sizes_strides):
                    flatten(result, arg)
                else:  # FakeTensorMode's own handling of this one argument (an iterator: no length prefix)
                    slow(self, result, iter((arg,)), state, id_hashed_objects)

    FastKeyFakeTensorMode.__name__ = FastKeyFakeTensorMode.__qualname__ = "FakeTensorMode"
    return FastKeyFakeTensorMode


def _fresh_fake(ft: Any) -> Callable[[Any, Any, Any], Any]:
    """fresh(mode, metadata, storage): the new FakeTensor that FakeTensorMode._get_output_tensor_from_cache_entry makes
    for a cache hit that is not in-place and has no symbolic size: torch.empty_strided on the meta device inside
    in_kernel_invocation_manager (set_ onto the input's storage for a view op), then FakeTensor(mode, empty, device).
    Here the same calls without the generator context manager, and FakeTensor.__new__'s attributes set in one update
    (its checks hold by construction: a meta tensor of this mode, a device FakeTensor normalized when it made the
    cached output)."""
    import torch

    fake_cls, make = ft.FakeTensor, torch.Tensor._make_subclass
    empty_strided = torch.empty_strided
    no_dispatch, keep_keys = torch._C._DisableTorchDispatch, torch._C._PreserveDispatchKeyGuard
    meta_tls = torch._C._set_meta_in_tls_dispatch_include
    throw, warn = torch._C._set_throw_on_mutable_data_ptr, torch._C._set_warn_deprecated_on_mutable_data_ptr
    memos = [name for name, v in vars(fake_cls).items() if isinstance(v, ft.SymNumberMemoDescriptor)]
    blank = {"constant": None, "pytype": None, "dispatch_keys": None, "real_tensor": None}
    blank.update((f"_{m}{end}", None) for m in memos for end in ("", "_vc", "_epoch"))

    def fresh(mode: Any, md: Any, storage: Any) -> Any:
        prev = mode.in_kernel_invocation
        with no_dispatch(), keep_keys():
            mode.in_kernel_invocation = True
            meta_tls(True)
            try:
                empty = empty_strided(md.shape, md.stride, dtype=md.dtype, layout=md.layout, device="meta",
                                      requires_grad=md.requires_grad)
                if storage is not None:  # a view: the new tensor on its input's storage
                    empty.set_(storage, md.storage_offset, md.shape, md.stride)
            finally:
                mode.in_kernel_invocation = prev
        t = make(fake_cls, empty, empty.requires_grad, dispatch_device=True, device_for_backend_keys=md.device)
        (warn if mode._allow_unsafe_data_ptr_access else throw)(t)
        d = t.__dict__
        d.update(blank)
        d["_fake_device"] = md.device
        d["fake_mode"] = mode
        return t

    return fresh


def _unwrapped(fn: Any) -> Any:
    """The function under functools.wraps wrappers (torch's _disable_dynamo and count set __wrapped__)."""
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return fn


# TensorMetadata's fields in torch 2.13, in the order flatten appends them
_FIELDS = ["dtype", "shape", "stride", "device", "layout", "memory_format", "storage_offset", "storage_bytes",
           "requires_grad", "is_quantized", "is_conj", "is_neg", "is_inference", "is_sparse", "is_coalesced",
           "dense_dim", "sparse_dim"]
