"""The fine-tuned model, built in PyTorch: Hugging Face's task model (AutoModelFor...) with requires_grad set as
albert_core.estimate.finetune counts it, or peft's get_peft_model for LoRA; and its parameters counted as peft
counts them. torch, transformers and peft are imported inside the functions.
"""

from __future__ import annotations

from typing import Any

from ..choices import LoraSpec, parse_mode
from ..config import ModelConfig
from ..estimate.finetune import PEFT_TASK, resolved_targets
from ..estimate.heads import check_head
from ..estimate.hf_modules import head_modules
from ..families import attention_run, family
from .building import on_device


def build(cfg: ModelConfig, mode: str = "full", *, head: str = "none", num_labels: int = 2,
          lora: LoraSpec | None = None, device: str = "meta", attention: str | None = None) -> Any:
    """The real model of `trainable(...)`'s setup: Hugging Face's task model with requires_grad set, or
    for lora peft's get_peft_model (targets None: peft picks its own default). torch/peft imported here.
    attention: "eager" or "sdpa" as models.hf_model takes it (a family without sdpa runs its own); None:
    transformers' default for the class."""
    from ..formats.hf import hf_expressible

    name, k = parse_mode(mode)
    head = check_head(head)
    if not hf_expressible(cfg):
        raise ValueError(f"build: Hugging Face builds sharing '{cfg.sharing}' of family '{cfg.family}' unshared, so its "
                         "model would not be the one trainable() counts; choose sharing 'none' (or an ALBERT sharing all)")
    model = task_model(cfg, head, num_labels, device, attention)
    if name == "lora":
        from ..estimate.serving import quiet_torchao

        quiet_torchao()  # peft imports torchao when it is installed
        import warnings

        from peft import LoraConfig, get_peft_model

        lora = lora or LoraSpec()
        conf = LoraConfig(task_type=PEFT_TASK[head], r=lora.r, lora_alpha=lora.lora_alpha, lora_dropout=lora.lora_dropout,
                          target_modules=list(resolved_targets(cfg, lora)) if lora.targets is not None else None,
                          bias=lora.bias)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=FutureWarning)  # transformers: is_gradient_checkpointing
            return get_peft_model(model, conf)
    base = getattr(model, model.base_model_prefix) if head != "none" else model
    if name in ("frozen-embeddings", "frozen-layers"):
        base.embeddings.requires_grad_(False)
    if name == "frozen-layers":  # the stored layers that the first k layer steps run (hf_modules._layer_modules)
        L, G, fam = cfg.num_layers, cfg.num_groups, family(cfg.family)
        owners = {int(i / (L / G)) if cfg.sharing != "none" else i for i in range(k)}  # ALBERT: group int(i / (L / G))
        for owner in sorted(owners):
            for j in range(cfg.inner_group_num):
                base.get_submodule(fam.layer_prefix(cfg, owner, j).rstrip(".")).requires_grad_(False)
    if name == "bitfit":
        head_names = {m.path for m in head_modules(cfg, head, max(num_labels, 1))} if head in ("classification", "token") else set()
        for n, p in model.named_parameters():
            p.requires_grad = n.endswith(".bias") or n.rsplit(".", 1)[0] in head_names
    return model


def task_model(cfg: ModelConfig, head: str, num_labels: int, device: str, attention: str | None = None) -> Any:
    """AutoModel / AutoModelFor... of head, from hf.hf_dict(cfg), on device (meta: no memory); attention as build."""
    from ..estimate.serving import quiet_torchao

    quiet_torchao()  # transformers imports torchao on a model build when it is installed
    from transformers import (
        AutoConfig,
        AutoModel,
        AutoModelForMaskedLM,
        AutoModelForSequenceClassification,
        AutoModelForTokenClassification,
    )
    from transformers.utils import logging as hf_logging

    from ..formats.hf import hf_dict

    hf_logging.set_verbosity_error()
    cls = {"none": AutoModel, "classification": AutoModelForSequenceClassification,
           "token": AutoModelForTokenClassification, "mlm": AutoModelForMaskedLM}[head]
    conf = AutoConfig.for_model(**hf_dict(cfg), num_labels=max(num_labels, 1))
    kw = {}
    if attention is not None:
        from ..config import require_choice
        from .models import ATTENTION_IMPLS

        require_choice("attention", attention, ATTENTION_IMPLS)
        kw["attn_implementation"] = attention_run(cfg.family, attention)  # DeBERTa-v2: its own attention, eager
    with on_device(device):
        return cls.from_config(conf, **kw)


def count_built(model: Any) -> tuple[int, int]:
    """(trainable, all) over named_parameters(), as peft's get_nb_trainable_parameters sums them."""
    train = total = 0
    for _, p in model.named_parameters():
        total += p.numel()
        train += p.numel() if p.requires_grad else 0
    return train, total
