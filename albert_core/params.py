"""Exact parameter counts, the breakdown that explains them, and what ALBERT's two cuts save.

Every number is a Python int (exact at any size). The layout mirrors Hugging Face's
BertModel/AlbertModel (pooler included) and albert_core.reference in every sharing mode;
tests compare with sum(p.numel()) of the real modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from .config import ModelConfig

if TYPE_CHECKING:
    import pandas as pd


class ParamGroup(NamedTuple):
    component: str  # embedding | layers | pooler | heads
    sublayer: str  # embeddings, attention, ffn, pooler, mlm_head, nsp_head
    module: str  # name as in Hugging Face's modules
    shape: str  # tensor shape(s), e.g. "30000×128"
    per_copy: int  # parameters in one copy
    copies: int  # copies stored (a shared tensor is stored once per group)

    @property
    def params(self) -> int:
        return self.per_copy * self.copies


def linear(n_in: int, n_out: int) -> int:
    """nn.Linear(n_in, n_out): weight n_out×n_in plus bias n_out."""
    return n_in * n_out + n_out


def layer_norm(n: int) -> int:
    """nn.LayerNorm(n): weight and bias."""
    return 2 * n


def stored_copies(cfg: ModelConfig, sublayer: str) -> int:
    """Copies of the attention or FFN sublayer that are stored.

    HF ALBERT applies num_layers steps of a group of inner_group_num layers: L·inner layer
    applications. A shared sublayer is stored once per (group, inner slot); an unshared one
    once per application. ALBERT paper Sec. 3.1, "cross-layer parameter sharing".
    """
    shared = cfg.sharing == "all" or cfg.sharing == sublayer
    return (cfg.num_groups if shared else cfg.num_layers) * cfg.inner_group_num


def parameter_groups(cfg: ModelConfig, *, heads: bool = False) -> list[ParamGroup]:
    """Every weight-and-bias group of the model, in module order."""
    V, E, H, I = cfg.vocab_size, cfg.embedding_dim, cfg.hidden_dim, cfg.intermediate_dim
    P, T = cfg.max_position, cfg.type_vocab_size
    n_att, n_ffn = stored_copies(cfg, "attention"), stored_copies(cfg, "ffn")
    g = [
        ParamGroup("embedding", "embeddings", "word_embeddings", f"{V}×{E}", V * E, 1),
        ParamGroup("embedding", "embeddings", "position_embeddings", f"{P}×{E}", P * E, 1),
        ParamGroup("embedding", "embeddings", "token_type_embeddings", f"{T}×{E}", T * E, 1),
        ParamGroup("embedding", "embeddings", "embeddings.LayerNorm", f"2×{E}", layer_norm(E), 1),
    ]
    if cfg.factorized:  # ALBERT Sec. 3.1 factorized embedding: V×E + E×H instead of V×H
        g.append(ParamGroup("embedding", "embeddings", "embedding_hidden_mapping_in", f"{E}×{H} + {H}", linear(E, H), 1))
    g += [
        ParamGroup("layers", "attention", "attention.query", f"{H}×{H} + {H}", linear(H, H), n_att),
        ParamGroup("layers", "attention", "attention.key", f"{H}×{H} + {H}", linear(H, H), n_att),
        ParamGroup("layers", "attention", "attention.value", f"{H}×{H} + {H}", linear(H, H), n_att),
        ParamGroup("layers", "attention", "attention.dense", f"{H}×{H} + {H}", linear(H, H), n_att),
        ParamGroup("layers", "attention", "attention.LayerNorm", f"2×{H}", layer_norm(H), n_att),
        ParamGroup("layers", "ffn", "ffn (intermediate)", f"{H}×{I} + {I}", linear(H, I), n_ffn),
        ParamGroup("layers", "ffn", "ffn_output", f"{I}×{H} + {H}", linear(I, H), n_ffn),
        ParamGroup("layers", "ffn", "ffn.LayerNorm", f"2×{H}", layer_norm(H), n_ffn),
        ParamGroup("pooler", "pooler", "pooler.dense", f"{H}×{H} + {H}", linear(H, H), 1),
    ]
    if heads:
        if cfg.factorized:  # AlbertMLMHead: dense H→E, LayerNorm(E), decoder tied to word_embeddings, bias V
            g += [
                ParamGroup("heads", "mlm_head", "predictions.dense", f"{H}×{E} + {E}", linear(H, E), 1),
                ParamGroup("heads", "mlm_head", "predictions.LayerNorm", f"2×{E}", layer_norm(E), 1),
            ]
        else:  # BertLMPredictionHead: transform dense H→H, LayerNorm(H), decoder tied, bias V
            g += [
                ParamGroup("heads", "mlm_head", "predictions.transform.dense", f"{H}×{H} + {H}", linear(H, H), 1),
                ParamGroup("heads", "mlm_head", "predictions.transform.LayerNorm", f"2×{H}", layer_norm(H), 1),
            ]
        g += [
            ParamGroup("heads", "mlm_head", "predictions.bias (decoder weight tied)", f"{V}", V, 1),
            # BERT's next-sentence (NSP) or ALBERT's sentence-order (SOP) classifier, 2 labels
            ParamGroup("heads", "nsp_head", "sop_classifier" if cfg.factorized else "seq_relationship",
                       f"{H}×2 + 2", linear(H, 2), 1),
        ]
    return g


@dataclass(frozen=True)
class ParameterCount:
    """Fields of the source text's analyze_bert_parameters, exact, plus the fine breakdown."""

    embedding: int  # token + position + segment embeddings, LayerNorm, and ALBERT's E→H projection
    per_layer: int  # one transformer layer (attention + FFN + their LayerNorms)
    all_layers: int  # stored for all layers: a shared tensor counted once
    pooler: int
    heads: int  # MLM + NSP/SOP heads when asked for, else 0
    total: int
    cfg: ModelConfig  # what was counted
    with_heads: bool = False  # whether the MLM and NSP/SOP heads are included

    @property
    def embedding_pct(self) -> float:
        return 100 * self.embedding / self.total

    @property
    def layers_pct(self) -> float:
        return 100 * self.all_layers / self.total

    @property
    def pooler_pct(self) -> float:
        return 100 * self.pooler / self.total

    @property
    def groups(self) -> tuple[ParamGroup, ...]:
        """Every weight-and-bias group (built on demand: counting alone needs only the closed form)."""
        return tuple(parameter_groups(self.cfg, heads=self.with_heads))

    def breakdown(self) -> pd.DataFrame:
        """Tidy table: one row per weight-and-bias group, with its share of the total."""
        import pandas as pd

        df = pd.DataFrame(
            [(*grp[:5], grp.copies, grp.params) for grp in self.groups],
            columns=["component", "sublayer", "module", "shape", "per_copy", "copies", "params"],
        )
        df["pct"] = 100 * df["params"].astype(float) / self.total
        return df


def count_parameters(cfg: ModelConfig, *, heads: bool = False) -> ParameterCount:
    """Exact parameter count of cfg (HF BertModel/AlbertModel layout, pooler included).

    The closed form below is the sum of parameter_groups(cfg) component by component;
    tests check both against each other and against the modules PyTorch builds.
    """
    V, E, H, I = cfg.vocab_size, cfg.embedding_dim, cfg.hidden_dim, cfg.intermediate_dim
    embedding = (V + cfg.max_position + cfg.type_vocab_size) * E + layer_norm(E)
    if cfg.factorized:
        embedding += linear(E, H)  # ALBERT Sec. 3.1: V×E + E×H instead of V×H
    attention = 4 * linear(H, H) + layer_norm(H)  # Q, K, V, output dense + LayerNorm
    ffn = linear(H, I) + linear(I, H) + layer_norm(H)  # Vaswani et al. 2017 Sec. 3.3 + LayerNorm
    all_layers = attention * stored_copies(cfg, "attention") + ffn * stored_copies(cfg, "ffn")
    pooler = linear(H, H)
    n_heads = 0
    if heads:  # MLM transform (H→E or H→H) + LayerNorm + decoder bias (weight tied) + 2-way classifier
        width = E if cfg.factorized else H
        n_heads = linear(H, width) + layer_norm(width) + V + linear(H, 2)
    return ParameterCount(
        embedding=embedding, per_layer=attention + ffn, all_layers=all_layers, pooler=pooler, heads=n_heads,
        total=embedding + all_layers + pooler + n_heads, cfg=cfg, with_heads=heads,
    )


def factorization_savings(cfg: ModelConfig) -> int:
    """Parameters saved by the factorized embedding: V×H − (V×E + E×H + H), ALBERT Sec. 3.1.

    Compares the token embedding plus projection against an unfactorized V×H table
    (position and segment tables shrink too, E instead of H wide, and are included).
    """
    bert_like = cfg.replace(family="bert", embedding_dim=cfg.hidden_dim)
    return count_parameters(bert_like).embedding - count_parameters(cfg).embedding


def sharing_savings(cfg: ModelConfig) -> int:
    """Parameters saved by cross-layer sharing against the same config with no sharing."""
    return count_parameters(cfg.replace(sharing="none")).all_layers - count_parameters(cfg).all_layers
