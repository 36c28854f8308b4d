"""LoRA as peft builds it: LoraConfig's modelled fields (LoraSpec), peft's default targets per model type, the names a
target list means in each family (albert_core.estimate.finetune counts what they adapt). No torch, no peft here.
"""

from __future__ import annotations

from ..choices import LoraSpec
from ..config import ModelConfig
from ..families import NAMES, family
from ..families.base import lora_aliases
from .hf_modules import model_modules

# peft 0.21.2's default LoRA targets for every model type the families read (each family's LORA_TARGETS, from
# src/peft/utils/constants.py, TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING); tests/test_finetune.py checks
# them against the installed peft. None: peft has no default (it raises).
PEFT_DEFAULT_TARGETS: dict[str, tuple[str, ...] | None] = {
    t: targets for name in NAMES for t, targets in family(name).LORA_TARGETS.items()}
MODULES_TO_SAVE = ("classifier", "score")  # peft PeftModelFor{SequenceClassification,TokenClassification}
PEFT_TASK = {"none": "FEATURE_EXTRACTION", "classification": "SEQ_CLS", "token": "TOKEN_CLS", "mlm": None}

def parse_targets(text: str) -> tuple[str, ...]:
    """'query,value' -> ('query', 'value')."""
    targets = tuple(t.strip() for t in str(text).split(",") if t.strip())
    if not targets:
        raise ValueError(f"LoRA targets must be module names separated by commas, like 'query,value'; got {text!r}")
    return targets


def model_type(cfg: ModelConfig) -> str:
    """The config.json model_type Hugging Face builds cfg as (hf.to_hf_config writes the family's first)."""
    return family(cfg.family).MODEL_TYPES[0]


def default_targets(cfg: ModelConfig) -> tuple[str, ...]:
    """peft's default LoRA targets for cfg's model type, or a ValueError naming what to pass."""
    t = family(cfg.family).LORA_TARGETS[model_type(cfg)]
    if t is None:
        names = ", ".join(lora_candidates(cfg))
        raise ValueError(f"peft has no default LoRA targets for model type '{model_type(cfg)}': name the modules "
                         f"to adapt (for example {_example(cfg)}); this model's Linear modules: {names}")
    return t


def lora_targets(cfg: ModelConfig, targets: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """(the targets peft is given for cfg, the (given, used) names mapped): one of BERT's names (query, key, value)
    that cfg's family never has becomes its module of the same meaning (the family's LORA_ALIASES: query_proj in
    DeBERTa-v2, q_lin in DistilBERT, ModernBERT's fused Wqkv for any of the three); every other name is kept, so
    one target list serves every compared model."""
    aliases = lora_aliases(family(cfg.family))
    out: dict[str, None] = {}
    mapped: list[tuple[str, str]] = []
    for t in targets:
        used = aliases.get(t, (t,))
        out.update(dict.fromkeys(used))
        if used != (t,):
            mapped.append((t, ",".join(used)))
    return tuple(out), tuple(mapped)


def resolved_targets(cfg: ModelConfig, lora: LoraSpec) -> tuple[str, ...]:
    """The target names peft gets for cfg: lora.targets mapped (lora_targets), or peft's default for the model type."""
    return lora_targets(cfg, lora.targets)[0] if lora.targets is not None else default_targets(cfg)


def _example(cfg: ModelConfig) -> str:
    """LoRA's usual targets in cfg's own names: the first layer's query and value Linears (q_lin,v_lin; q,v;
    Wqkv where one Linear makes all three), asked of the family's module layout."""
    att = [m.path.rsplit(".", 1)[-1] for m in family(cfg.family).sublayer_modules(cfg, "", True)[0]
           if m.kind == "linear"]
    return ",".join((att[0], att[2])) if len(att) >= 4 else att[0]


def lora_candidates(cfg: ModelConfig, head: str = "none") -> tuple[str, ...]:
    """The last name part of every nn.Linear peft could adapt in cfg's model (layers, projections, head)."""
    seen: dict[str, None] = {}
    for m in model_modules(cfg, head):
        if m.kind == "linear" and not m.tied:
            seen.setdefault(m.path.rsplit(".", 1)[-1], None)
    return tuple(seen)
