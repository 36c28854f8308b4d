"""Exact parameter counts, the breakdown that explains them, and what ALBERT's two cuts save.

Every number is a Python int (exact at any size). Each family's layout lives in its module in
albert_core/families/ and mirrors Hugging Face's base model of that family (BertModel, AlbertModel,
RobertaModel, ...); for bert and albert also albert_core.engine.reference in every sharing mode. Tests
compare with sum(p.numel()) of the real modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config import ModelConfig
from ..families import Family, family
from ..families.base import Heads, ParamGroup, layer_norm
from ..families.base import linear as linear  # re-exported: params.linear
from ..layout import stored_copies as stored_copies  # re-exported: params.stored_copies

if TYPE_CHECKING:
    import pandas as pd


def _family(cfg: ModelConfig) -> Family:
    return family(cfg.family)


def parameter_groups(cfg: ModelConfig, *, heads: bool = False) -> list[ParamGroup]:
    """Every weight-and-bias group of the model, in module order (the family module lists them)."""
    fam = _family(cfg)
    g = fam.groups(cfg, stored_copies(cfg, "attention"), stored_copies(cfg, "ffn"))
    if heads:
        g += _heads_family(cfg).heads_groups(cfg)
    return g


def _heads_family(cfg: ModelConfig) -> Heads:
    """The family module when it models the pretraining heads, else ValueError saying so."""
    fam = _family(cfg)
    if fam.HEADS is not None or not isinstance(fam, Heads):  # HEADS is None where Heads is defined (a test)
        raise ValueError(f"heads: for family '{cfg.family}', {fam.HEADS}")
    return fam


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
    """Exact parameter count of cfg (Hugging Face's base model of its family; BERT/ALBERT/RoBERTa with the pooler).

    The family's closed form (families/<name>.sizes) is the sum of its parameter_groups component by
    component; tests check both against each other and against the modules PyTorch builds. heads=True
    adds the MLM and NSP/SOP heads (bert, albert); other families refuse it with a ValueError.
    """
    fam = _family(cfg)
    embedding, per_layer, all_layers, pooler = fam.sizes(cfg, stored_copies(cfg, "attention"), stored_copies(cfg, "ffn"))
    n_heads = _heads_family(cfg).heads_size(cfg) if heads else 0
    return ParameterCount(
        embedding=embedding, per_layer=per_layer, all_layers=all_layers, pooler=pooler, heads=n_heads,
        total=embedding + all_layers + pooler + n_heads, cfg=cfg, with_heads=heads,
    )


def factorization_savings(cfg: ModelConfig) -> int:
    """Parameters saved by the factorized embedding: V×H − (V×E + E×H + H), ALBERT Sec. 3.1.

    Compares the token embedding plus projection against an unfactorized V×H table
    (position and segment tables shrink too, E instead of H wide, and are included).
    ELECTRA and DeBERTa: against the same config with embedding_size = hidden_size.
    Families whose embedding is H wide save nothing (0).
    """
    if cfg.factorized:  # ALBERT: against BERT with its sizes (an H-wide table, no E -> H mapping)
        unfactorized = cfg.replace(family="bert", embedding_dim=cfg.hidden_dim)
    elif family(cfg.family).OWN_EMBEDDING_WIDTH:
        unfactorized = cfg.replace(embedding_dim=cfg.hidden_dim)
    else:
        return 0
    return count_parameters(unfactorized).embedding - count_parameters(cfg).embedding


def sharing_savings(cfg: ModelConfig) -> int:
    """Parameters saved by cross-layer sharing against the same config with no sharing."""
    return count_parameters(cfg.replace(sharing="none")).all_layers - count_parameters(cfg).all_layers


def albert_twin(cfg: ModelConfig) -> ModelConfig:
    """An ALBERT with cfg's sizes (V, E, H, L, A, I, P, dropouts, activation, sharing), for ALBERT-only views.

    The family's own fields go back to their defaults and a family without a segment table gets one row
    (ALBERT always has one); cfg itself when it is an ALBERT.
    """
    if cfg.family == "albert":  # a family name: this is the ALBERT twin of any config
        return cfg
    keep = ("name", "vocab_size", "embedding_dim", "hidden_dim", "num_layers", "num_heads", "intermediate_dim",
            "dropout", "attention_dropout", "max_position", "hidden_act", "sharing", "num_groups", "inner_group_num")
    return ModelConfig(family="albert", type_vocab_size=max(1, cfg.type_vocab_size),
                       **{k: getattr(cfg, k) for k in keep})


# the lookup tables an embedding block holds, by module name (every family's, families/*.py)
_TABLES = ("word_embeddings", "position_embeddings", "token_type_embeddings", "tok_embeddings")


def embedding_table_rows(cfg: ModelConfig) -> int:
    """Rows of cfg's token, position and segment tables together (what ALBERT's factorization narrows)."""
    rows = 0
    for g in parameter_groups(cfg):
        if g.component == "embedding" and g.module.endswith(_TABLES):
            rows += int(g.shape.split("×")[0])
    return rows


def albert_cuts(cfg: ModelConfig, embedding_dim: int) -> list[dict[str, Any]]:
    """ALBERT's two cuts as a what-if for any family: what cfg stores now, factorized at E, shared, both.

    Factorized at E (ALBERT Sec. 3.1): cfg's embedding block replaced by ALBERT's, the same tables
    (token, position, segment rows) E wide + LayerNorm(E) + Linear(E, H). Shared (Sec. 3.1, cross-layer
    sharing): the attention, the FFN, or all of every layer stored once (one group). The layers'
    own extras (DeBERTa's relative embeddings, ModernBERT's final norm) and the pooler are kept.
    One dict per variant: variant, embedding_dim, sharing, embedding, layers, pooler, total, saved, saved_pct.
    """
    if isinstance(embedding_dim, bool) or not isinstance(embedding_dim, int) or embedding_dim < 1:
        raise ValueError(f"embedding_dim must be a whole number of at least 1, got {embedding_dim!r}")
    E, H = embedding_dim, cfg.hidden_dim  # E > H is allowed: it shows the factorization costing parameters
    now = count_parameters(cfg)
    factorized = embedding_table_rows(cfg) * E + layer_norm(E) + linear(E, H)  # ALBERT Sec. 3.1
    layers = {m: count_parameters(cfg.replace(sharing=m, num_groups=1, inner_group_num=1)).all_layers
              for m in ("attention", "ffn", "all")}
    own_e = cfg.embedding_dim
    rows = [("as stored now", own_e, cfg.sharing, now.embedding, now.all_layers),
            (f"factorized, E={E}", E, cfg.sharing, factorized, now.all_layers),
            ("shared attention", own_e, "attention", now.embedding, layers["attention"]),
            ("shared FFN", own_e, "ffn", now.embedding, layers["ffn"]),
            ("shared all", own_e, "all", now.embedding, layers["all"]),
            (f"both: E={E}, shared all", E, "all", factorized, layers["all"])]
    out = []
    for variant, e, sharing, emb, lay in rows:
        total = emb + lay + now.pooler
        out.append({"variant": variant, "embedding_dim": e, "sharing": sharing, "embedding": emb, "layers": lay,
                    "pooler": now.pooler, "total": total, "saved": now.total - total,
                    "saved_pct": 100 * (now.total - total) / now.total})
    return out
