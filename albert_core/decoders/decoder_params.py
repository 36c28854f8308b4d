"""Where a decoder's parameters are: the token table, the layers, the final norm and the output projection, exactly as
transformers builds them (tests/test_decoders.py: sum(numel) of the built model, to the parameter)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..families.base import ParamGroup
from ..families.modules import Module
from . import family
from .decoder_config import DecoderConfig
from .decoder_family import lm_head_module


@dataclass(frozen=True)
class DecoderCount:
    """The base model's parameters (AutoModel.from_config: no LM head), and the LM head's where asked for."""

    cfg: DecoderConfig
    groups: tuple[ParamGroup, ...]  # the base model's rows, then the LM head's where with_head
    with_head: bool

    def _sum(self, component: str) -> int:
        return sum(g.params for g in self.groups if g.component == component)

    @property
    def embedding(self) -> int:  # the token table (and GPT-2's position table)
        return self._sum("embedding")

    @property
    def layers(self) -> int:
        return self._sum("layers")

    @property
    def per_layer(self) -> int:
        return sum(g.per_copy for g in self.groups if g.component == "layers")

    @property
    def final_norm(self) -> int:
        return self._sum("final_norm")

    @property
    def head(self) -> int:
        """The LM head's own parameters: 0 where tied (it reads the token table), V×H where not."""
        return self._sum("head")

    @property
    def total(self) -> int:
        return sum(g.params for g in self.groups)

    @property
    def token_table(self) -> int:
        """V×H: the table that the output projection reads too where tied."""
        return self.cfg.vocab_size * self.cfg.hidden_dim

    @property
    def embedding_pct(self) -> float:
        return 100 * self.embedding / self.total


def lm_head(c: DecoderConfig) -> ParamGroup:
    """The causal LM's output projection H -> V (nn.Linear, no bias): tied, it is the token table (0 stored copies
    of its own, as named_parameters() and sum(numel) count it); untied, a V×H matrix of its own."""
    return ParamGroup("head", "lm_head", "lm_head" + (" (tied to the token table)" if c.tied else ""),
                      f"{c.hidden_dim}×{c.vocab_size}", c.vocab_size * c.hidden_dim, 0 if c.tied else 1)


def count_decoder(c: DecoderConfig, heads: bool = False) -> DecoderCount:
    """Every parameter of c's base model by module, and with heads its causal LM's output projection too."""
    rows = family(c.family).groups(c)
    return DecoderCount(cfg=c, groups=tuple([*rows, lm_head(c)] if heads else rows), with_head=heads)


def decoder_modules(c: DecoderConfig, causal_lm: bool = False) -> list[tuple[Module, int]]:
    """(module, stored copies) of c's base model, and with causal_lm its output projection (a tied one holds no weight
    of its own; to torchao it is an nn.Linear like any other): what estimate.serving.weight_bytes reads."""
    placed = [*family(c.family).modules(c), *([lm_head_module(c)] if causal_lm else [])]
    return [(p.module, p.copies) for p in placed]


def decoder_cuts(c: DecoderConfig, embedding_dim: int) -> list[dict[str, Any]]:
    """ALBERT's two cuts as a what-if for a decoder, the rows of estimate.params.albert_cuts: what c stores now,
    factorized at E, its layers shared, both.

    Factorized (ALBERT Sec. 3.1): the token table (and GPT-2's position table) E wide and a Linear(E, H) into the
    layers; where the output projection is tied, a Linear(H, E) out of them too, so that the LM head still reads the
    one table (counted here, though the base model has no head: without it the tie would be gone). Shared (ALBERT
    Sec. 3.1; MobileLLM's block-wise sharing, Liu et al. 2024 Sec. 2.3): the attention (with its norms), the FFN (with
    its norms) or all of one layer stored once and run L times. The final norm is kept. transformers builds none of
    these: closed forms, tested against the count of a one-layer model.
    """
    if isinstance(embedding_dim, bool) or not isinstance(embedding_dim, int) or embedding_dim < 1:
        raise ValueError(f"embedding_dim must be a whole number of at least 1, got {embedding_dim!r}")
    E, H = embedding_dim, c.hidden_dim
    now = count_decoder(c)
    rows = [g for g in now.groups if g.component == "embedding"]
    tables = sum(g.params for g in rows) // H  # rows of the tables: V, and GPT-2's positions
    factorized = tables * E + E * H + (H * E if c.tied else 0)
    per = {s: sum(g.per_copy for g in now.groups if g.component == "layers" and g.sublayer == s)
           for s in ("attention", "ffn")}
    L = c.num_layers
    layers = {"attention": per["attention"] + L * per["ffn"], "ffn": L * per["attention"] + per["ffn"],
              "all": per["attention"] + per["ffn"]}
    variants = [("as stored now", H, "none", now.embedding, now.layers),
                (f"factorized, E={E}", E, "none", factorized, now.layers),
                ("shared attention", H, "attention", now.embedding, layers["attention"]),
                ("shared FFN", H, "ffn", now.embedding, layers["ffn"]),
                ("shared all", H, "all", now.embedding, layers["all"]),
                (f"both: E={E}, shared all", E, "all", factorized, layers["all"])]
    out: list[dict[str, Any]] = []
    for variant, e, sharing, emb, lay in variants:
        total = emb + lay + now.final_norm
        out.append({"variant": variant, "embedding_dim": e, "sharing": sharing, "embedding": emb, "layers": lay,
                    "final_norm": now.final_norm, "total": total, "saved": now.total - total,
                    "saved_pct": 100 * (now.total - total) / now.total})
    return out
