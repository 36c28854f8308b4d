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
