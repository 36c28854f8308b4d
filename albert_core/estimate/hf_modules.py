"""The modules Hugging Face builds for a config, by their qualified names, without torch.

One `Module` per nn.Linear / nn.Embedding / nn.LayerNorm / bare nn.Parameter that holds parameters
(or, for a tied MLM decoder, that holds none of its own), with the name `model.named_modules()` gives
it, for the base model (`AutoModel`) or a task model (`AutoModelFor{SequenceClassification,
TokenClassification,MaskedLM}`). Layers appear once per *stored* copy: ALBERT's shared layers are one
module object in PyTorch (`named_parameters()` yields them once), and so here. For the sharing modes only
the explorer models (hf.hf_expressible false: BERT sharing all, attention-only sharing ...) the modules
follow cfg's own layout (params.stored_copies), named as their first copy would be: counts then equal
params.count_parameters(cfg), not the unshared model Hugging Face would build from to_hf_config.

Its users: heads.py (what a head adds and which pooler it drops), finetune.py (what each fine-tuning
mode trains, LoRA's targets by name), serving.py (which weights a quantizer replaces). tests/test_heads.py
checks `named_parameters(...)` name by name and size by size against the models transformers builds.

Where each family's modules sit is the family's (families/<name>.py: embedding_modules, layer_prefix,
sublayer_modules, other_modules, head_modules, BASE_PREFIX, POOLER_DROPPED_FOR; families/modules.py: Module); this
module puts them together for a config, its sharing layout and a head, without asking which family it is.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import fields
from functools import lru_cache
from typing import Any

from ..config import ModelConfig
from ..families import family
from ..families.modules import Module

__all__ = ["HEADS", "BoundedCache", "Module", "base_modules", "embedding_modules", "head_modules", "layer_module_counts",
           "layer_modules", "layers_key", "model_module_counts", "model_modules", "named_parameters", "other_modules",
           "pooler_dropped", "prefix"]

HEADS = ("none", "classification", "token", "mlm")


def embedding_modules(cfg: ModelConfig) -> list[Module]:
    """The modules inside the base model's `embeddings` module (what frozen-embeddings freezes)."""
    return family(cfg.family).embedding_modules(cfg)


def _sublayers(c: ModelConfig, p: str, first: bool) -> tuple[list[Module], list[Module]]:
    """(attention, ffn) modules of one stored layer at path prefix p; first: the model's first stored layer."""
    return family(c.family).sublayer_modules(c, p, first)


@lru_cache(maxsize=32)  # ModelConfig is frozen; a page asks for several modes of one config
def _layer_prefix(c: ModelConfig, owner: int, j: int) -> str:
    """Module path prefix of the stored layer `owner`'s inner layer j (ALBERT: group owner's albert_layers.j; the
    others stack the inner layers: layer owner * inner_group_num + j)."""
    return family(c.family).layer_prefix(c, owner, j)


def layers_key(cfg: ModelConfig) -> tuple[Any, ...]:
    """cfg's fields but its name and max_position: what the layers' modules depend on (no layer module of any
    family has a size or a name that depends on the positions: only the embeddings' position table and
    DeBERTa's rel_embeddings, in other_modules, do). The Fit planner asks for a config at many max_positions."""
    return tuple(getattr(cfg, f.name) for f in fields(cfg) if f.name not in ("name", "max_position"))


class BoundedCache:
    """The last `size` values computed, by key; thread-safe (one server, many sessions' script threads). For values
    keyed by something other than their arguments, where functools.lru_cache cannot serve."""

    def __init__(self, size: int) -> None:
        self.size, self._items, self._lock = size, OrderedDict[Any, Any](), threading.Lock()

    def get(self, key: Any, make: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = make()  # outside the lock: two threads may both make it, and the same value is kept
        with self._lock:
            self._items[key] = value
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value


_LAYERS = BoundedCache(4)  # a 4,096-layer config's list holds about 65,000 modules


def layer_modules(cfg: ModelConfig) -> tuple[tuple[Module, ...], ...]:
    """The modules each of the num_layers layer steps brings, in order; a shared module only at the first
    step that runs it, so every stored tensor appears once (params.stored_copies copies of each sublayer).

    Step i runs group int(i / (L / num_groups)) (AlbertTransformer.forward), all inner_group_num layers of it.
    Names are Hugging Face's: for the layouts it builds (hf.hf_expressible) exactly its modules; for the
    sharing modes only the explorer models, a shared module keeps the name of its first copy.
    Kept for the last few configs by layers_key (the same at every max_position).
    """
    steps: tuple[tuple[Module, ...], ...] = _LAYERS.get(layers_key(cfg), lambda: _layer_modules(cfg))
    return steps


def _layer_modules(cfg: ModelConfig) -> tuple[tuple[Module, ...], ...]:
    c = cfg
    L, G, inner = c.num_layers, c.num_groups, c.inner_group_num
    att_shared, ffn_shared = c.sharing in ("all", "attention"), c.sharing in ("all", "ffn")
    seen: set[tuple[str, int, int]] = set()
    steps = []
    for i in range(L):
        g = int(i / (L / G))
        step: list[Module] = []
        for j in range(inner):
            owners = {"attention": g if att_shared else i, "ffn": g if ffn_shared else i}
            parts = {}
            for sub, owner in owners.items():
                p = _layer_prefix(c, owner, j)
                parts[sub] = _sublayers(c, p, owner * inner + j == 0)[0 if sub == "attention" else 1]
            for sub, owner in owners.items():
                if (sub, owner, j) not in seen:
                    seen.add((sub, owner, j))
                    step += parts[sub]
        steps.append(tuple(step))
    return tuple(steps)


def layer_module_counts(cfg: ModelConfig) -> list[tuple[Module, int]]:
    """layer_modules' modules with multiplicity, without walking the layer applications (any depth): each sublayer's
    modules at its first stored copy once, and at its second for the other stored_copies - 1 (they differ only
    in ModernBERT's first layer, whose attn_norm is nn.Identity). Summed, exactly layer_modules (tests hold them equal)."""
    from ..layout import stored_copies

    c, inner = cfg, cfg.inner_group_num
    first, second = _layer_prefix(c, 0, 0), _layer_prefix(c, 1 // inner, 1 % inner)  # stored layers 0 and 1
    out: list[tuple[Module, int]] = []
    for side, sub in enumerate(("attention", "ffn")):
        copies = stored_copies(c, sub)
        out += [(m, 1) for m in _sublayers(c, first, True)[side]]
        if copies > 1:
            out += [(m, copies - 1) for m in _sublayers(c, second, False)[side]]
    return out


def model_module_counts(cfg: ModelConfig, head: str = "none", num_labels: int = 2) -> list[tuple[Module, int]]:
    """model_modules with multiplicity (layer_module_counts for the layers): the same modules summed, at any depth."""
    p = prefix(cfg, head)
    base = [(m, 1) for m in embedding_modules(cfg)] + layer_module_counts(cfg) + [(m, 1) for m in other_modules(cfg)]
    if pooler_dropped(cfg, head):
        base = [(m, n) for m, n in base if m.path not in ("pooler", "pooler.dense")]
    return ([(Module(p + m.path, m.kind, m.n_in, m.n_out, m.bias, m.tied), n) for m, n in base]
            + [(m, 1) for m in head_modules(cfg, head, num_labels)])


def other_modules(cfg: ModelConfig) -> list[Module]:
    """The base model's modules outside `embeddings` and the layers (projections, shared tables, final norm, pooler)."""
    return family(cfg.family).other_modules(cfg)


def pooler_dropped(cfg: ModelConfig, head: str) -> bool:
    """Whether the task model builds its base model without the pooler (add_pooling_layer=False)."""
    return head != "none" and head in family(cfg.family).POOLER_DROPPED_FOR


def head_modules(cfg: ModelConfig, head: str, num_labels: int = 2) -> list[Module]:
    """The modules the task model adds beside its base model (not prefixed), tied decoders included."""
    if head not in HEADS:
        raise ValueError(f"head must be one of {', '.join(HEADS)}, got {head!r}")
    return [] if head == "none" else family(cfg.family).head_modules(cfg, head, num_labels)


def base_modules(cfg: ModelConfig, head: str = "none") -> list[Module]:
    """The base model's modules as the task model holds them (pooler dropped where it is), unprefixed."""
    mods = [*embedding_modules(cfg), *(m for layer in layer_modules(cfg) for m in layer), *other_modules(cfg)]
    if pooler_dropped(cfg, head):
        mods = [m for m in mods if m.path not in ("pooler", "pooler.dense")]
    return mods


def prefix(cfg: ModelConfig, head: str) -> str:
    """'' for the base model, else the task model's attribute for it plus a dot ('bert.', 'model.', ...)."""
    return "" if head == "none" else family(cfg.family).BASE_PREFIX + "."


def model_modules(cfg: ModelConfig, head: str = "none", num_labels: int = 2) -> list[Module]:
    """Every module of the model (base prefixed as the task model names it, then the head's), as named_modules()."""
    p = prefix(cfg, head)
    base = [Module(p + m.path, m.kind, m.n_in, m.n_out, m.bias, m.tied) for m in base_modules(cfg, head)]
    return base + head_modules(cfg, head, num_labels)


def named_parameters(cfg: ModelConfig, head: str = "none", num_labels: int = 2) -> dict[str, int]:
    """name -> numel of every parameter, as dict(model.named_parameters()) would give (tied ones once)."""
    return {name: n for m in model_modules(cfg, head, num_labels) for name, n in m.params}
