"""The engine's FakeTensorMode computes its dispatch cache's key faster (albert_core/engine/fakekey.py): the key must be
FakeTensorMode's own, item for item. Every key asked for while the engine measures real models (training step with
its optimizer, eval forward; several families, dtypes, attentions and optimizers) is computed both ways and compared;
a key FakeTensorMode would refuse to build (it bypasses its cache) is refused both ways."""

from __future__ import annotations

import pytest
from torch._subclasses.fake_tensor import FakeTensorMode, _BypassDispatchCache

from albert_core.engine import core as engine
from albert_core.engine.fakekey import fake_mode_class
from albert_core.engine.measure import default_kind, maker
from albert_core.presets import PRESETS
from albert_core.workload import Workload

BASE = FakeTensorMode._prep_args_for_hash


class _Reference:
    """FakeTensorMode's own _prep_args_for_hash, run for `mode` (its recursion kept in FakeTensorMode's code)."""

    def __init__(self, mode):
        self.mode = mode

    def is_our_fake(self, t) -> bool:
        return self.mode.is_our_fake(t)

    def _prep_args_for_hash(self, result, args, state, ids) -> None:
        BASE(self, result, args, state, ids)


def _both(mode, state, args):
    out = []
    for f in (lambda r: type(mode)._prep_args_for_hash(mode, r, args, state, []),
              lambda r: BASE(_Reference(mode), r, args, state, [])):
        r: list = []
        try:
            f(r)
            out.append(r)
        except _BypassDispatchCache as e:
            out.append(("bypass", str(e)))
    return out


CASES = [("bert-base", "float32", "eager", "adamw"), ("albert-base", "mixed_bf16", "sdpa", "adafactor"),
         ("deberta-v3-base", "float32", "eager", "sgd"), ("ModernBERT-base", "float32", "sdpa", "adamw"),
         ("distilbert-base-uncased", "fp16_master", "eager", "adamw"), ("roberta-base", "bfloat16", "sdpa", "sgd")]


@pytest.mark.parametrize(("name", "precision", "attention", "opt"), CASES)
def test_the_fast_key_is_fakeTensorModes_key(monkeypatch, name, precision, attention, opt):
    cls = fake_mode_class()
    assert cls is not FakeTensorMode and issubclass(cls, FakeTensorMode)  # the verified torch: the fast key in use
    cfg = PRESETS[name].replace(num_layers=2)
    seen = {"keys": 0, "tensors": 0}
    real_cache_key = cls._cache_key

    def checking(self, state, func, args, kwargs):
        for part in (args, kwargs):
            if part:
                fast, ref = _both(self, state, part)
                assert fast == ref, (func, fast, ref)
                seen["tensors"] += sum(1 for a in (part.values() if isinstance(part, dict) else part)
                                       if type(a).__name__ == "FakeTensor")
        seen["keys"] += 1
        return real_cache_key(self, state, func, args, kwargs)

    monkeypatch.setattr(cls, "_cache_key", checking)
    w = Workload(2, 32, precision, attention, device="cpu", optimizer=opt)
    r = engine.measure(maker(cfg, default_kind(cfg), attention), cfg.vocab_size, engine.Run(w))
    assert r.step is not None and r.saved > 0
    assert seen["keys"] > 500 and seen["tensors"] > 500, seen  # the whole step went through it


def _described(t) -> tuple:
    """All a FakeTensor output is: its metadata, dispatch keys, and FakeTensor's attributes (the mode by identity)."""
    import torch

    attrs = tuple(sorted((k, id(v) if k == "fake_mode" else v) for k, v in t.__dict__.items()))
    return (type(t), tuple(t.shape), t.stride(), t.storage_offset(), t.dtype, t.device, t.layout, t.requires_grad,
            t.untyped_storage().nbytes(), str(torch._C._dispatch_keys(t)), t.is_leaf, attrs)


@pytest.mark.parametrize(("name", "precision", "attention", "opt"), CASES[:4])
def test_a_cache_hits_output_is_the_one_fakeTensorMode_makes(monkeypatch, name, precision, attention, opt):
    """The fast path for a cache hit's new tensor (fakekey._fresh_fake) makes the tensor FakeTensorMode's own code
    makes from the same cache entry, on every hit of a real model's training step and eval forward."""
    cls = fake_mode_class()
    assert "_get_output_tensor_from_cache_entry" in vars(cls)  # the verified torch: the fast path in use
    fast, own = cls._get_output_tensor_from_cache_entry, FakeTensorMode._get_output_tensor_from_cache_entry
    seen = {"fresh": 0, "views": 0, "other": 0}

    def checking(self, state, entry, key, func, args):
        out = fast(self, state, entry, key, func, args)
        ref = own(self, state, entry, key, func, args)
        if entry.inplace_idx is None and entry.metadata is not None:  # a new tensor: equal to the one torch makes
            assert _described(out) == _described(ref), func
            if getattr(func, "is_view", False):  # ... on the same storage as its input, as torch's
                assert out.untyped_storage()._cdata == ref.untyped_storage()._cdata == \
                    args[entry.view_idx].untyped_storage()._cdata, func
                seen["views"] += 1
            seen["fresh"] += 1
        else:  # in-place (the input itself) or a constant: torch's own code
            assert out is ref, func
            seen["other"] += 1
        return out

    monkeypatch.setattr(cls, "_get_output_tensor_from_cache_entry", checking)
    cfg = PRESETS[name].replace(num_layers=3)  # layers 2 and 3 hit the cache on layer 1's entries
    w = Workload(2, 32, precision, attention, device="cpu", optimizer=opt)
    r = engine.measure(maker(cfg, default_kind(cfg), attention), cfg.vocab_size, engine.Run(w))
    assert r.step is not None and r.saved > 0
    assert seen["fresh"] > 200 and seen["views"] > 50 and seen["other"] > 20, seen


def test_in_place_foreach_ops_on_fake_tensors_make_nothing_and_a_mismatch_still_raises():
    """The engine's mode returns at once for an in-place foreach op over consistent fake tensors (an optimizer's step;
    dispatch._in_place_foreach); what FakeTensorMode would refuse still reaches it and is refused."""
    import torch

    from albert_core.engine import dispatch

    ops = torch.ops.aten
    assert dispatch._in_place_foreach(ops._foreach_add_.Scalar) and dispatch._in_place_foreach(ops._foreach_lerp_.Scalar)
    assert dispatch._in_place_foreach(ops._foreach_addcdiv_.ScalarList)
    assert not dispatch._in_place_foreach(ops._foreach_sqrt.default)  # makes new tensors
    assert not dispatch._in_place_foreach(ops._foreach_add.Scalar) and not dispatch._in_place_foreach(ops.add_.Tensor)
    mode = dispatch._live_storages()({}, lambda: "")
    with engine.tensor_mode(True):
        a, b = [torch.zeros(3, 4), torch.zeros(5)], [torch.ones(3, 4), torch.ones(5)]
        with mode:
            torch._foreach_lerp_(a, b, 0.1)
            torch._foreach_add_(a, torch.tensor(1.0))
            before = len(mode.all)
            torch._foreach_addcmul_(a, b, b, value=2.0)
            assert len(mode.all) == before  # no storage made
            with pytest.raises(RuntimeError):
                torch._foreach_lerp_(a, [torch.ones(3, 4), torch.ones(6)], 0.1)  # a shape that does not match
