"""The modules Hugging Face builds, as values: what a family's module layout is made of (no torch, no config).

One `Module` per nn.Linear / nn.Embedding / nn.LayerNorm / bare nn.Parameter that holds parameters (or, for a tied
MLM decoder, that holds none of its own), with the name `model.named_modules()` gives it. Each family module says
where its modules sit (embedding_modules, layer_prefix, sublayer_modules, other_modules, head_modules: the Family
contract, base.py); albert_core.estimate.hf_modules puts them together for a config and a head.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config_fields import ConfigFields


@dataclass(frozen=True)
class Module:
    """One parameter-holding module as PyTorch names it.

    kind: "linear" (nn.Linear n_in -> n_out: weight n_out×n_in, bias n_out), "conv1d" (transformers' Conv1D, GPT-2's
    projections: the same n_in -> n_out, its weight stored n_in×n_out; not an nn.Linear), "embedding" (nn.Embedding
    n_in rows × n_out wide), "norm" (nn.LayerNorm(n_out): weight, bias when `bias`), "param" (a bare
    nn.Parameter of n_out elements, named `path` itself). tied: the weight is another module's (an MLM
    decoder's is the word-embedding table), so it is not listed again; its bias, when `bias`, is its own.
    """

    path: str
    kind: str
    n_in: int
    n_out: int
    bias: bool = True
    tied: bool = False

    @property
    def params(self) -> tuple[tuple[str, int], ...]:
        """(name, numel) of the parameters this module owns, named as named_parameters() names them."""
        if self.kind == "param":
            return ((self.path, self.n_out),)
        weight = self.n_out if self.kind == "norm" else self.n_in * self.n_out
        own = [] if self.tied else [(f"{self.path}.weight", weight)]
        if self.bias and self.kind != "embedding":
            own.append((f"{self.path}.bias", self.n_out))
        return tuple(own)

    @property
    def numel(self) -> int:
        return sum(n for _, n in self.params)


Sublayers = tuple[list[Module], list[Module]]  # (attention, ffn) modules of one stored layer


def lin(path: str, n_in: int, n_out: int, bias: bool = True) -> Module:
    return Module(path, "linear", n_in, n_out, bias)


def conv1d(path: str, n_in: int, n_out: int) -> Module:
    """transformers' Conv1D(n_out, n_in) (pytorch_utils.Conv1D): weight n_in×n_out, bias n_out."""
    return Module(path, "conv1d", n_in, n_out, True)


def norm(path: str, n: int, bias: bool = True) -> Module:
    return Module(path, "norm", n, n, bias)


def emb(path: str, rows: int, width: int) -> Module:
    return Module(path, "embedding", rows, width, False)


def param(path: str, n: int) -> Module:
    """A bare nn.Parameter of n elements (an MLM decoder's bias held by its head)."""
    return Module(path, "param", n, n)


def tied(path: str, n_in: int, n_out: int, bias: bool) -> Module:
    """An MLM decoder whose weight is the word-embedding table (tie_word_embeddings): only its bias is its own."""
    return Module(path, "linear", n_in, n_out, bias, tied=True)


def bert_embedding_modules(c: ConfigFields) -> list[Module]:
    """BertEmbeddings (and ALBERT's, RoBERTa's, ELECTRA's: E wide); RoBERTa's table has pad_token_id + 1 more rows."""
    V, E, P, T = c.vocab_size, c.embedding_dim, c.max_position + c.position_offset, c.type_vocab_size
    return [emb("embeddings.word_embeddings", V, E), emb("embeddings.position_embeddings", P, E),
            emb("embeddings.token_type_embeddings", T, E), norm("embeddings.LayerNorm", E)]


def bert_sublayer_modules(c: ConfigFields, p: str, qkv: tuple[str, ...] = ("query", "key", "value")) -> Sublayers:
    """BertLayer (and RobertaLayer, ElectraLayer, DebertaV2Layer with its own projection names) at prefix p."""
    H, I = c.hidden_dim, c.intermediate_dim
    return ([*(lin(f"{p}attention.self.{m}", H, H) for m in qkv), lin(f"{p}attention.output.dense", H, H),
             norm(f"{p}attention.output.LayerNorm", H)],
            [lin(f"{p}intermediate.dense", H, I), lin(f"{p}output.dense", I, H), norm(f"{p}output.LayerNorm", H)])


def stacked_prefix(path: str, c: ConfigFields, owner: int, j: int) -> str:
    """The prefix of stored layer `owner`'s inner layer j where layers are one list (encoder.layer.{k}. ...)."""
    return f"{path}{owner * c.inner_group_num + j}."
