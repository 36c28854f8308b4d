"""albert_core: the model of record for BERT/ALBERT parameters, memory and compute.

Pure computation; torch is imported only by the modules that build or measure real
models (reference, build, measure), and only when they are used.
"""

from .config import FAMILIES, HIDDEN_ACTS, SHARING_MODES, ConfigError, ModelConfig
from .hf import from_hf_config, hf_expressible, to_hf_config
from .params import ParameterCount, count_parameters, factorization_savings, sharing_savings
from .presets import DEFAULT_PRESET, PRESETS

__all__ = [
    "FAMILIES", "HIDDEN_ACTS", "SHARING_MODES", "ConfigError", "ModelConfig",
    "from_hf_config", "hf_expressible", "to_hf_config",
    "ParameterCount", "count_parameters", "factorization_savings", "sharing_savings",
    "DEFAULT_PRESET", "PRESETS",
]
