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

Written against torch 2.13.0 (requirements.txt pins it); where the torch in use lacks what it overrides, or is
another release, `fake_mode_class()` is FakeTensorMode itself. torch is imported inside the functions.
"""

from __future__ import annotations

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

    class FastKeyFakeTensorMode(base):  # type: ignore[misc, valid-type]  # torch is untyped here (pyproject)
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


# TensorMetadata's fields in torch 2.13, in the order flatten appends them
_FIELDS = ["dtype", "shape", "stride", "device", "layout", "memory_format", "storage_offset", "storage_bytes",
           "requires_grad", "is_quantized", "is_conj", "is_neg", "is_inference", "is_sparse", "is_coalesced",
           "dense_dim", "sparse_dim"]
