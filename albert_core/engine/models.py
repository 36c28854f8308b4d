"""Build real PyTorch models from a ModelConfig. Imports torch and transformers only when called.

`hf_model` builds Hugging Face's base model of the family (the family module names the class) from to_hf_config(cfg);
`reference_model` builds albert_core.engine.reference, which also expresses attention-only and
FFN-only sharing. On the meta device either builds instantly at any size, with no memory.
"""

from __future__ import annotations

from typing import Any

from ..config import ModelConfig, require_choice
from ..estimate.params import stored_copies
from ..families import attention_run, family
from ..formats.hf import hf_built_config, hf_dict
from .building import on_device

ATTENTION_IMPLS = ("eager", "sdpa")
MAX_BUILD_LAYERS = 2048  # layer modules built on the meta device for the app; beyond this a build takes minutes
# layer applications one measurement runs: a shared layer is built once but runs num_layers times, each op dispatched
# on fake tensors: albert-base's eval forward and training step took 4.3 s and 14.7 s at 384 applications (about 50 ms
# an application, 2-core AMD EPYC), so 10,000 ran past the 180 s limit of a build (ui/jobs.py); 1,024 take about 50 s
MAX_MEASURE_APPLICATIONS = 1024


def layer_modules(cfg: ModelConfig, kind: str) -> int:
    """Layers whose weights a build creates: the larger of the stored attention and FFN copies.

    kind "hf" builds the layout of hf_built_config(cfg); "reference" builds cfg itself. This,
    not the number of layer applications, is what makes a build slow.
    """
    built = hf_built_config(cfg) if kind == "hf" else cfg
    return max(stored_copies(built, "attention"), stored_copies(built, "ffn"))


def hf_model(cfg: ModelConfig, *, device: str = "meta", attention: str = "eager", heads: bool = False) -> Any:
    """Hugging Face's base model of cfg's family (BertModel, AlbertModel, RobertaModel, ...), or with
    heads=True BertForPreTraining/AlbertForPreTraining (other families refuse heads)."""
    from ..estimate.serving import quiet_torchao

    quiet_torchao()  # transformers imports torchao on a model build where it is installed (requirements-dev.txt)
    from transformers.utils import logging as hf_logging

    require_choice("attention", attention, ATTENTION_IMPLS)
    fam = family(cfg.family)
    attention = attention_run(cfg.family, attention)  # DebertaV2Model has no sdpa path (HF refuses it): eager
    if heads and fam.HEADS is not None:
        raise ValueError(f"heads: for family '{cfg.family}', {fam.HEADS}")
    hf_logging.set_verbosity_error()
    conf_cls, model_cls = fam.hf_classes(heads)
    conf = conf_cls(**hf_dict(cfg))
    conf._attn_implementation = attention
    with on_device(device):
        model = model_cls(conf)
    return model


def reference_model(cfg: ModelConfig, *, device: str = "meta", attention: str = "eager") -> Any:
    """albert_core.engine.reference.ReferenceModel for cfg, any sharing mode."""
    from .reference import ReferenceModel

    with on_device(device):
        return ReferenceModel(cfg, attention=attention)


def count_built(model: Any) -> int:
    """sum(p.numel()) over unique parameters, as PyTorch stores them (shared tensors once)."""
    return sum(p.numel() for p in model.parameters())


def applications_error(cfg: ModelConfig) -> str | None:
    """Why cfg is not measured (too many layer applications for one measurement: MAX_MEASURE_APPLICATIONS),
    or None. Its parameters are still counted: what is slow is running the layers, not building them."""
    apps = cfg.layer_applications
    if apps <= MAX_MEASURE_APPLICATIONS:
        return None
    stored = cfg.effective_groups  # layers with weights of their own; fewer than the applications when shared
    shared = f" ({stored:,} stored layer{'s' if stored > 1 else ''}, run {apps:,} times)" if stored < apps else ""
    return (f"measuring {cfg.name} runs {apps:,} layer applications{shared}, and this server measures at most "
            f"{MAX_MEASURE_APPLICATIONS:,} in one build (each runs every op of a layer, about 50 ms on fake "
            f"tensors): lower num_layers to {MAX_MEASURE_APPLICATIONS // cfg.inner_group_num:,} or fewer; sharing layers saves "
            "weights, not the time or activations of running them")
