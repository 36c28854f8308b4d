"""Build real PyTorch models from a ModelConfig. Imports torch and transformers only when called.

`hf_model` builds Hugging Face's BertModel/AlbertModel (pooler included) from to_hf_config(cfg);
`reference_model` builds albert_core.reference, which also expresses attention-only and
FFN-only sharing. On the meta device either builds instantly at any size, with no memory.
"""

from __future__ import annotations

from typing import Any

from .config import ModelConfig, require_choice
from .hf import hf_built_config, hf_dict
from .params import stored_copies

ATTENTION_IMPLS = ("eager", "sdpa")
MAX_BUILD_LAYERS = 2048  # layer modules built on the meta device for the app; beyond this a build takes minutes


def layer_modules(cfg: ModelConfig, kind: str) -> int:
    """Layers whose weights a build creates: the larger of the stored attention and FFN copies.

    kind "hf" builds the layout of hf_built_config(cfg); "reference" builds cfg itself. This,
    not the number of layer applications, is what makes a build slow.
    """
    built = hf_built_config(cfg) if kind == "hf" else cfg
    return max(stored_copies(built, "attention"), stored_copies(built, "ffn"))


def hf_model(cfg: ModelConfig, *, device: str = "meta", attention: str = "eager", heads: bool = False) -> Any:
    """Hugging Face's BertModel/AlbertModel (or *ForPreTraining with heads=True) for cfg."""
    import torch
    from transformers import AlbertConfig, AlbertForPreTraining, AlbertModel, BertConfig, BertForPreTraining, BertModel
    from transformers.utils import logging as hf_logging

    require_choice("attention", attention, ATTENTION_IMPLS)
    hf_logging.set_verbosity_error()
    d = hf_dict(cfg)
    if cfg.family == "bert":
        conf, cls = BertConfig(**d), (BertForPreTraining if heads else BertModel)
    else:
        conf, cls = AlbertConfig(**d), (AlbertForPreTraining if heads else AlbertModel)
    conf._attn_implementation = attention
    with torch.device(device):
        model = cls(conf)
    return model


def reference_model(cfg: ModelConfig, *, device: str = "meta", attention: str = "eager") -> Any:
    """albert_core.reference.ReferenceModel for cfg, any sharing mode."""
    import torch

    from .reference import ReferenceModel

    with torch.device(device):
        return ReferenceModel(cfg, attention=attention)


def count_built(model: Any) -> int:
    """sum(p.numel()) over unique parameters, as PyTorch stores them (shared tensors once)."""
    return sum(p.numel() for p in model.parameters())
