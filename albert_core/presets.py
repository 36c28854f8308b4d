"""Published BERT and ALBERT configurations.

bert-base/large: the config.json of bert-{base,large}-uncased. bert-xlarge: ALBERT paper
(Lan et al., ICLR 2020) Table 1, H=2048, L=24, with the paper's FFN size 4H and H/64 heads.
albert-*: the config.json of albert-*-v2 (dropouts 0, hidden_act gelu_new).
"""

from __future__ import annotations

from .config import ModelConfig


def _bert(name: str, hidden: int, layers: int, heads: int) -> ModelConfig:
    return ModelConfig(
        name=name, family="bert", vocab_size=30522, embedding_dim=hidden, hidden_dim=hidden,
        num_layers=layers, num_heads=heads, intermediate_dim=4 * hidden, dropout=0.1,
        attention_dropout=0.1, max_position=512, type_vocab_size=2, hidden_act="gelu",
        sharing="none", num_groups=1, inner_group_num=1,
    )


def _albert(name: str, hidden: int, layers: int, heads: int) -> ModelConfig:
    return ModelConfig(
        name=name, family="albert", vocab_size=30000, embedding_dim=128, hidden_dim=hidden,
        num_layers=layers, num_heads=heads, intermediate_dim=4 * hidden, dropout=0.0,
        attention_dropout=0.0, max_position=512, type_vocab_size=2, hidden_act="gelu_new",
        sharing="all", num_groups=1, inner_group_num=1,
    )


PRESETS: dict[str, ModelConfig] = {
    "bert-base": _bert("bert-base", 768, 12, 12),
    "bert-large": _bert("bert-large", 1024, 24, 16),
    "bert-xlarge": _bert("bert-xlarge", 2048, 24, 32),
    "albert-base": _albert("albert-base", 768, 12, 12),
    "albert-large": _albert("albert-large", 1024, 24, 16),
    "albert-xlarge": _albert("albert-xlarge", 2048, 24, 16),
    "albert-xxlarge": _albert("albert-xxlarge", 4096, 12, 64),
}

DEFAULT_PRESET = "albert-base"
