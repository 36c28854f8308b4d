"""The value sets a workload chooses from, and LoRA's settings: no albert_core imports (the bottom of the graph).

A Workload (workload.py) holds one value of each set; the analytical model, the engine, the URL, the CLI and the
sidebar read the sets from here, so a new choice is added once.
"""

from __future__ import annotations

from dataclasses import dataclass

# ---- precisions ------------------------------------------------------------------------------------------------
DTYPES = ("float32", "bfloat16", "float16", "mixed_bf16", "mixed_fp16")  # a forward's (mixed_*: torch.autocast)
# a training step's two mixed precisions besides autocast's (mixed_*): the model cast to 16 bits, its optimizer over
# float32 master copies of the trainable weights (Micikevicius et al. 2018, Sec. 3.1); the forward is the cast one's
MASTER = {"bf16_master": "bfloat16", "fp16_master": "float16"}
STEP_DTYPES = DTYPES + tuple(MASTER)  # what a training step (step/peak.py, engine/core.py) runs
PRECISIONS = STEP_DTYPES  # float32, bfloat16, float16, mixed_bf16, mixed_fp16, bf16_master, fp16_master

# ---- how the step runs -------------------------------------------------------------------------------------------
ATTENTIONS = ("eager", "sdpa")  # transformers' attn_implementation
DEVICES = ("cuda", "cpu")
DEFAULT_DEVICE = "cuda"  # what people plan memory for; "cpu" is what albert_core.engine.measure measures here
OPTIMIZERS = ("adamw", "sgd", "adafactor")  # torch.optim.AdamW, SGD (momentum), Adafactor
SHARDINGS = ("none", "zero1", "zero2", "zero3", "fsdp")  # ZeRO stages (Rajbhandari et al. 2020), FSDP as ZeRO-3

# ---- fine-tuning -------------------------------------------------------------------------------------------------
CAUSAL_LM = "causal-lm"  # a decoder's head: AutoModelForCausalLM on its own loss (engine.building.build_auto)
CONFIG_JSON_MODES = ("full", "lora")  # how a config.json's model (a decoder's) trains on the engine
MODES = ("full", "frozen-embeddings", "frozen-layers", "lora", "bitfit")
MAX_RANK = 1 << 16
LORA_BIAS = ("none", "all", "lora_only")  # peft LoraConfig.bias


def parse_mode(text: str) -> tuple[str, int]:
    """'full' | 'frozen-embeddings' | 'frozen-layers:K' | 'lora' | 'bitfit' -> (mode, K)."""
    if not isinstance(text, str):
        raise ValueError(f"training mode must be text like 'frozen-layers:4', got {type(text).__name__}")
    name, sep, k = text.strip().partition(":")
    if name not in MODES:
        raise ValueError(f"training mode must be one of full, frozen-embeddings, frozen-layers:K, lora, bitfit; got {text!r}")
    if name != "frozen-layers":
        if sep:
            raise ValueError(f"training mode '{name}' takes no number; write '{name}'")
        return name, 0
    try:
        return name, int(k)
    except ValueError:
        raise ValueError(f"frozen-layers needs the number of layers to freeze, like 'frozen-layers:4'; got {text!r}") from None


@dataclass(frozen=True)
class LoraSpec:
    """peft LoraConfig's fields that this explorer models. targets=None: peft's default for the model type."""

    r: int = 8
    lora_alpha: float = 8  # scales the update by alpha / r; no parameters
    lora_dropout: float = 0.0  # dropout on LoRA's input; no parameters (it keeps a copy of the input: activations)
    targets: tuple[str, ...] | None = None
    bias: str = "none"  # peft LoraConfig.bias: "none", "all" (every bias trains) or "lora_only" (the adapted layers')

    def __post_init__(self) -> None:
        problems = []
        if self.bias not in LORA_BIAS:
            problems.append(f"LoRA bias must be one of {', '.join(LORA_BIAS)}, got {self.bias!r}")
        if isinstance(self.r, bool) or not isinstance(self.r, int) or not 1 <= self.r <= MAX_RANK:
            problems.append(f"LoRA rank r must be a whole number from 1 to {MAX_RANK:,}, got {self.r!r}")
        if isinstance(self.lora_alpha, bool) or not isinstance(self.lora_alpha, int | float) or not self.lora_alpha > 0:
            problems.append(f"lora_alpha must be a number above 0, got {self.lora_alpha!r}")
        d = self.lora_dropout
        if isinstance(d, bool) or not isinstance(d, int | float) or not 0 <= d < 1:
            problems.append(f"lora_dropout must be a probability from 0 up to (not including) 1, got {d!r}")
        if self.targets is not None and (not isinstance(self.targets, tuple) or not self.targets
                                         or not all(isinstance(t, str) and t.strip() for t in self.targets)):
            problems.append(f"LoRA targets must be module names like ('query', 'value'), got {self.targets!r}")
        if problems:
            raise ValueError("; ".join(problems))
