"""albert_core: the model of record for encoder parameters, memory and compute, through ALBERT's lens.

Families (albert_core/families/): bert, albert, roberta (xlm-roberta, camembert), distilbert,
electra, deberta-v2, modernbert, mpnet. The parts, by role: estimate/ (the analytical model), replay/ (what autograd
keeps, replayed), engine/ (the measurement engine), processes/ (its build processes and their queue), formats/ (config.json, the Hub, uploads, the
URL), cli/. Pure computation; torch is imported only by engine/'s modules that build or measure real models, and
only when they are used; huggingface_hub only when a config is fetched by Hub id (formats/hub.py).
"""

from .config import FAMILIES, HIDDEN_ACTS, SHARING_MODES, ConfigError, ModelConfig
from .estimate.activations import activation_memory, activation_sweep, attention_quadratic_memory
from .estimate.flops import forward_flops, training_flops
from .estimate.gpus import GPUS
from .estimate.params import ParameterCount, albert_cuts, count_parameters, factorization_savings, sharing_savings
from .estimate.sweeps import embedding_sweep, sharing_sweep, sweep
from .formats.hf import from_hf_config, hf_expressible, to_hf_config
from .presets import DEFAULT_PRESET, PRESET_FAMILIES, PRESETS
from .step.compare import compare_table
from .step.fit import fit_table, max_batch_size, max_position_that_fits, max_seq_len
from .step.training import training_memory
from .workload import Workload

__all__ = [
    "FAMILIES", "HIDDEN_ACTS", "SHARING_MODES", "ConfigError", "ModelConfig", "Workload",
    "from_hf_config", "hf_expressible", "to_hf_config",
    "ParameterCount", "albert_cuts", "count_parameters", "factorization_savings", "sharing_savings",
    "DEFAULT_PRESET", "PRESET_FAMILIES", "PRESETS", "compare_table",
    "activation_memory", "activation_sweep", "attention_quadratic_memory", "training_memory",
    "GPUS", "fit_table", "max_batch_size", "max_position_that_fits", "max_seq_len",
    "forward_flops", "training_flops", "embedding_sweep", "sharing_sweep", "sweep",
]
