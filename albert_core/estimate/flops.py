"""Matmul FLOPs of a forward and a training step, exact Python ints, per component.

Convention: 2 FLOPs per multiply-add, matmuls only (Kaplan et al. 2020, "Scaling Laws for Neural
Language Models", Sec. 2.1 and Table 1); biases, LayerNorm, softmax, activations and embedding
lookups (a gather, no multiply) are left out, as there and as torch.utils.flop_counter counts.
Per layer application with I = 4H this is 24·B·S·H² + 4·B·S²·H (Narayanan et al. 2021, "Efficient
Large-Scale Language Model Training on GPU Clusters", Appendix). Sharing stores fewer parameters
but runs every layer application: compute scales with cfg.layer_applications, not with the
number of stored copies.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from ..config import ModelConfig
from ..families import base, family
from .params import count_parameters

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class FlopCount:
    """Forward FLOPs of one pass over batch_size sequences of seq_len tokens, by component."""

    embedding_projection: int  # ALBERT's E->H projection: 2·B·S·E·H (0 for BERT)
    qkv: int  # query, key, value projections: 3 · 2·B·S·H² per layer application
    attention_scores: int  # Q·Kᵀ: 2·B·S²·H per application (the seq_len² term)
    attention_values: int  # softmax(·)·V: 2·B·S²·H per application (the seq_len² term)
    attention_output: int  # output dense: 2·B·S·H² per application
    ffn: int  # H->I and I->H: 2 · 2·B·S·H·I per application
    pooler: int  # dense on the [CLS] token: 2·B·H² (0 for families without a pooler)
    seq_len: int  # S
    batch_size: int  # B
    relative_position: int = 0  # DeBERTa: position projections of the 2k relative embeddings, c2p and p2c

    @property
    def layers(self) -> int:
        """All layer applications together."""
        return (self.qkv + self.attention_scores + self.attention_values + self.attention_output + self.ffn
                + self.relative_position)

    @property
    def total(self) -> int:
        return self.embedding_projection + self.layers + self.pooler

    @property
    def per_token(self) -> float:
        return self.total / (self.batch_size * self.seq_len)

    def breakdown(self) -> pd.DataFrame:
        """Tidy table: one row per component with its FLOPs (exact ints, object column) and share."""
        import pandas as pd

        rows = [(f.name, _COMPONENT_FORMULA[f.name], getattr(self, f.name)) for f in fields(self)
                if f.name in _COMPONENT_FORMULA]
        df = pd.DataFrame(rows, columns=["component", "formula", "flops"])
        df["flops"] = pd.Series([r[2] for r in rows], dtype=object)  # exact, never int64-overflowed
        total = self.total
        df["pct"] = [100 * r[2] / total if total else 0.0 for r in rows]
        return df


_COMPONENT_FORMULA = {
    "embedding_projection": "2·B·S·E·H",
    "qkv": "N·6·B·S·H²",
    "attention_scores": "N·2·B·S²·H",
    "attention_values": "N·2·B·S²·H",
    "attention_output": "N·2·B·S·H²",
    "ffn": "N·4·B·S·H·I (gated: N·6·B·S·H·I)",
    "pooler": "2·B·H²",
    "relative_position": "N·(p·2·2k·H² + t·2·B·S·H·2k)",
}  # N = layer applications = num_layers × inner_group_num; DeBERTa: p position projections, t terms (c2p, p2c)


def _check(seq_len: int, batch_size: int, cfg: ModelConfig) -> None:
    for name, v in (("seq_len", seq_len), ("batch_size", batch_size)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a whole number of at least 1, got {v!r}")
    if seq_len > cfg.max_position:
        raise ValueError(f"seq_len ({seq_len}) must be at most max_position ({cfg.max_position}): "
                         "raise max_position or shorten the sequence")


def forward_flops(cfg: ModelConfig, seq_len: int, batch_size: int = 1) -> FlopCount:
    """Matmul FLOPs of one forward pass of the family's base model (pooler where it has one, no heads)."""
    _check(seq_len, batch_size, cfg)
    fam = family(cfg.family)
    B, S, E, H, I = batch_size, seq_len, cfg.embedding_dim, cfg.hidden_dim, cfg.intermediate_dim
    N = cfg.layer_applications  # sharing does not reduce compute
    ffn_matrices = base.ffn_matrices(fam)  # H×I matrices in the FFN: 2, or 3 for a gated FFN (GLU)
    relative = base.relative_position_flops(fam)
    return FlopCount(
        # ALBERT's embedding_hidden_mapping_in, ELECTRA's embeddings_project, DeBERTa's embed_proj
        embedding_projection=2 * B * S * E * H if cfg.factorized or E != H else 0,
        qkv=N * 3 * 2 * B * S * H * H,
        attention_scores=N * 2 * B * S * S * H,  # A heads × (S×D)·(D×S), D = H/A
        attention_values=N * 2 * B * S * S * H,  # A heads × (S×S)·(S×D)
        attention_output=N * 2 * B * S * H * H,
        ffn=N * ffn_matrices * (2 * B * S * H * I),
        pooler=2 * B * H * H if count_parameters(cfg).pooler else 0,
        seq_len=S,
        batch_size=B,
        relative_position=N * relative(cfg, S, B) if relative else 0,
    )


def training_flops(cfg: ModelConfig, seq_len: int, batch_size: int = 1, *, recompute: bool = False) -> int:
    """Matmul FLOPs of forward + backward: backward is 2× forward (gradients for inputs and weights),
    so 3× forward (Kaplan et al. 2020 Sec. 2.1, C ≈ 6N per token). With activation recomputation
    (gradient checkpointing of every layer application) the layers run forward once more
    (Narayanan et al. 2021, Appendix: 4× forward for the layers)."""
    f = forward_flops(cfg, seq_len, batch_size)
    return 3 * f.total + (f.layers if recompute else 0)
