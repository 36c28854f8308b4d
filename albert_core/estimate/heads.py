"""Task heads: what `AutoModelFor{SequenceClassification,TokenClassification,MaskedLM}` adds to the base model.

Heads: "none" (the base model, AutoModel), "classification" (num_labels), "token" (num_labels) and "mlm"
(the family's own masked-LM head; its decoder weight is the word-embedding table, tied as Hugging Face
ties it, so only the decoder's bias is new). Some task models build their base without its pooler
(BERT/ALBERT token and MLM models, every RoBERTa head: add_pooling_layer=False), which this subtracts.
The modules themselves are listed in albert_core.estimate.hf_modules; tests/test_heads.py checks every total
against sum(p.numel()) of the model transformers builds, on random configs of every family. No torch here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import ModelConfig
from .hf_modules import HEADS, Module, head_modules, other_modules, pooler_dropped
from .params import count_parameters

__all__ = ["HEADS", "HeadCount", "check_head", "check_labels", "head_parameters", "parse_head"]

MAX_LABELS = 1 << 20  # a classifier over more labels than this is a vocabulary, not a label set


@dataclass(frozen=True)
class HeadCount:
    """Parameters of the base model with a task head, exact (what the AutoModelFor... class builds)."""

    head: str  # none | classification | token | mlm
    num_labels: int  # classifier outputs (classification, token); 0 for none and mlm
    base: int  # count_parameters(cfg).total: the base model with its pooler where it has one
    pooler_dropped: int  # parameters of the pooler the task model does not build (0 where it keeps it)
    head_params: int  # parameters the head adds (an MLM decoder's tied weight not counted again)
    modules: tuple[Module, ...]  # the head's modules, as the task model names them
    tied_decoder: int  # elements of the MLM decoder weight shared with the word-embedding table (0 otherwise)

    @property
    def total(self) -> int:
        """sum(p.numel()) of the task model."""
        return self.base - self.pooler_dropped + self.head_params


def head_parameters(cfg: ModelConfig, head: str = "none", num_labels: int = 2) -> HeadCount:
    """Exact parameters of cfg with `head`: base model minus a dropped pooler plus the head's own modules.

    num_labels: the classifier's outputs for "classification" and "token" (Hugging Face's default is 2);
    ignored for "none" and "mlm". Bad input raises ValueError saying what to change.
    """
    head = check_head(head)
    if head in ("classification", "token"):
        check_labels(num_labels)
    else:
        num_labels = 0
    mods = head_modules(cfg, head, max(num_labels, 1))
    dropped = 0
    if pooler_dropped(cfg, head):
        dropped = sum(m.numel for m in other_modules(cfg) if m.path in ("pooler", "pooler.dense"))
    tied = sum(m.n_in * m.n_out for m in mods if m.tied)  # decoder weight: the V×E word-embedding table
    return HeadCount(head=head, num_labels=num_labels, base=count_parameters(cfg).total, pooler_dropped=dropped,
                     head_params=sum(m.numel for m in mods), modules=tuple(mods), tied_decoder=tied)


def parse_head(text: str) -> tuple[str, int]:
    """'none' | 'classification:N' | 'token:N' | 'mlm' (as the command line writes it) -> (head, num_labels).

    'classification' and 'token' without ':N' take Hugging Face's default of 2 labels.
    """
    if not isinstance(text, str):
        raise ValueError(f"head must be text like 'classification:3', got {type(text).__name__}")
    name, _, n = text.strip().partition(":")
    head = check_head(name)
    if head in ("none", "mlm"):
        if n:
            raise ValueError(f"head '{head}' takes no number of labels; write '{head}'")
        return head, 0
    if not n:
        return head, 2
    try:
        labels = int(n)
    except ValueError:
        raise ValueError(f"the number of labels in '{text}' must be a whole number, like '{head}:3'") from None
    return head, check_labels(labels)


def check_head(head: object) -> str:
    if head not in HEADS:
        raise ValueError(f"head must be one of {', '.join(HEADS)}, got {head!r}")
    return str(head)


def check_labels(n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_LABELS:
        raise ValueError(f"num_labels must be a whole number from 1 to {MAX_LABELS:,}, got {n!r}")
    return n
