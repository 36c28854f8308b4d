"""Where a decoder's parameters are: the token table, the layers, the final norm and the output projection, exactly as
transformers builds them (tests/test_decoders.py: sum(numel) of the built model, to the parameter)."""

from __future__ import annotations

from dataclasses import dataclass

from ..families.base import ParamGroup
from . import family
from .decoder_config import DecoderConfig


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
