"""What every family module is and uses: the Family contract, the ParamGroup row, nn.Linear/nn.LayerNorm
sizes, shared key rules.

No torch here: sizes follow the PyTorch modules' definitions (nn.Linear: weight out×in + bias out;
nn.LayerNorm: weight + bias; nn.Embedding: rows×width).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, cast, runtime_checkable

from ..values import short

if TYPE_CHECKING:
    from ..config_fields import ConfigFields
    from ..replay.liveness import Infer
    from ..replay.symbolic import Replay, Tensor
    from .modules import Module, Sublayers

# config.json key -> (values that mean "off", what to change)
Refusals = dict[str, tuple[tuple[object, ...], str]]


@dataclass(frozen=True)
class OwnField:
    """One of a family's own ModelConfig fields (config_fields.ConfigFields declares it, with its type and default):
    its rules and its help, which config.validate, albert_core.estimate.sweeps and the sidebar read, so that each is
    written once."""

    help: str  # what it is, for the sidebar (the family's name goes before it)
    lo: int | None = None  # a whole number: the lowest value allowed; None: not a whole number
    hi: int = 0  # a whole number: the highest
    unset: bool = False  # -1 allowed too, below lo: Hugging Face's "not set" (DeBERTa's spans)
    step: int = 1  # the sidebar's step
    choices: tuple[str, ...] = ()  # text: the values allowed


class ParamGroup(NamedTuple):
    component: str  # embedding | layers | pooler | heads
    sublayer: str  # embeddings, attention, ffn, encoder, pooler, mlm_head, nsp_head
    module: str  # name as in Hugging Face's modules
    shape: str  # tensor shape(s), e.g. "30000×128"
    per_copy: int  # parameters in one copy
    copies: int  # copies stored (a shared tensor is stored once per group)

    @property
    def params(self) -> int:
        return self.per_copy * self.copies


class MlmHead(NamedTuple):
    """A family's own *ForMaskedLM head as the step's replay records it (transformers 5.23)."""

    dense: str  # the transform's Linear: H -> H, or H -> E where e_wide
    activation: str | None  # its activation; None: config.hidden_act
    norm: str  # its LayerNorm
    decoder: str  # the decoder, whose weight is the word-embedding table (tied)
    bias: str | None  # the decoder's bias, as named_parameters() names it
    e_wide: bool = False  # the head is E wide: the decoder reads the E-wide table (ALBERT, ELECTRA, DeBERTa legacy)


@dataclass(frozen=True)
class Step:
    """What the training step's model (albert_core.step.peak, and its op-by-op replays backward*.py) asks of a family."""

    # the module replaying the forward and backward: "backward", "backward_deberta", "backward_modernbert"; "bounds":
    # none yet (peak.py's lower-bound candidates)
    recorder: str
    # named_parameters() order where a module's __init__ defines a module after the ones it reads first:
    # (the parameters' name pattern, the last parameter they follow)
    parameter_order: tuple[tuple[str, str], ...] = ()
    hf_checkpointing: bool = True  # whether Hugging Face's model supports gradient checkpointing
    embeddings_scope_trains: bool = False  # a trainable op recorded under the embeddings' scope (ALBERT's E -> H)
    # the BERT-style recorder (bert_forward.bert_style_forward):
    layer: str = "BertLayer"  # or "AlbertLayerGroup" (AlbertLayers in groups), "TransformerBlock" (DistilBERT)
    # a family's own encoder recording: the albert_core.replay module whose ENCODER (bert_forward.Encoder) records the
    # layers and what the encoder holds through them ("mpnet_forward"); None: the layers `layer` names
    encoder: str | None = None
    positions_from_ids: bool = False  # RobertaEmbeddings: position ids made from input_ids, token types B×S
    projection: str | None = None  # the E -> H Linear after the embeddings, where other_modules builds it
    projection_rebinds: bool = False  # its output is the embedding output the model holds (ELECTRA)
    pooler: str | None = None  # the pooler's Linear (where the task model keeps it: POOLER_DROPPED_FOR)
    classifier: str = "pooled"  # the classification head: "pooled" (on the pooler's output), "pre_classifier"
    # (DistilBERT: first token, pre_classifier, ReLU), "tanh" or "gelu" (Roberta/ElectraClassificationHead)
    classifier_dropout: float | None = None  # the heads' dropout (ALBERT's classifier_dropout_prob); None: dropout
    mlm: MlmHead | None = None


@runtime_checkable
class Family(Protocol):
    """What a family module defines (albert_core/families/<name>.py); the type checker holds every module to it
    (the TYPE_CHECKING block at the end of each module), and isinstance(module, Family) checks that the names are
    there.

    The closed forms (sizes, heads_size, linear, layer_norm) are plain arithmetic: albert_core.estimate.sweeps runs them
    on numpy arrays of field values, a whole grid at once, in place of a ModelConfig's ints.
    """

    @property
    def NAME(self) -> str: ...  # the family's name, one of albert_core.names.FAMILIES
    @property
    def MODEL_TYPES(self) -> tuple[str, ...]: ...  # config.json model_types read as it (the first is written)
    @property
    def LORA_TARGETS(self) -> dict[str, tuple[str, ...] | None]: ...  # peft's default targets for each MODEL_TYPES
    @property
    def FIELDS(self) -> Mapping[str, OwnField]: ...  # ModelConfig fields of this family beyond the common ones
    @property
    def OWN_EMBEDDING_WIDTH(self) -> bool: ...  # whether embedding_dim may differ from hidden_dim
    @property
    def SEGMENT_TABLE(self) -> bool | None: ...  # True: type_vocab_size >= 1; False: it must be 0; None: either
    @property
    def HEADS(self) -> str | None: ...  # None when count_parameters(heads=True) is modelled (Heads), else why not
    @property
    def HF_KEYS(self) -> dict[str, str]: ...  # ModelConfig field -> config.json key
    @property
    def HF_DEFAULTS(self) -> dict[str, object]: ...  # config.json key -> the HF config class's default
    @property
    def REQUIRED(self) -> tuple[str, ...]: ...  # config.json keys without a default
    @property
    def REFUSED(self) -> Refusals: ...  # config.json keys whose other values are not modelled

    def validate(self, c: ConfigFields, /) -> list[str]:
        """The family's own rules, each message saying what to change."""
    def sizes(self, c: ConfigFields, n_att: int, n_ffn: int, /) -> tuple[int, int, int, int]:
        """(embedding, per_layer, all_layers, pooler): the closed form, with n_att and n_ffn stored copies."""
    def groups(self, c: ConfigFields, n_att: int, n_ffn: int, /) -> list[ParamGroup]:
        """The ParamGroup rows of the breakdown, module names as Hugging Face names them."""
    def from_hf(self, d: dict[str, object], kw: dict[str, Any], problems: list[str], /) -> None:
        """Family-specific keys of config.json d into kw (ModelConfig fields); what is wrong into problems."""
    def to_hf(self, c: ConfigFields, /) -> dict[str, object]:
        """The family's config.json keys beyond HF_KEYS."""
    def hf_classes(self, heads: bool, /) -> tuple[type, type]:
        """(config class, model class) of Hugging Face transformers (imported when called: torch stays lazy)."""
    # the ops its training forward runs, for albert_core.estimate.activations' replay (replay/symbolic.py)
    def replay_embeddings(self, r: Replay, cfg: ConfigFields, /) -> Tensor: ...
    def replay_layer(self, r: Replay, cfg: ConfigFields, x: Tensor, attention: str, /) -> Tensor: ...
    def replay_pooler(self, r: Replay, cfg: ConfigFields, y: Tensor, /) -> None: ...
    def weight_copy_elements(self, cfg: ConfigFields, checkpointing: bool, /) -> int:
        """Elements of autocast's cached 16-bit weight copies that Linear layers save."""
    # the modules Hugging Face builds, by qualified name (modules.py; albert_core.estimate.hf_modules puts them together)
    @property
    def BASE_PREFIX(self) -> str: ...  # the attribute under which an AutoModelFor... model holds the base model
    @property
    def POOLER_DROPPED_FOR(self) -> tuple[str, ...]: ...  # task heads whose model builds no pooler
    def embedding_modules(self, c: ConfigFields, /) -> list[Module]:
        """The modules inside the base model's `embeddings` module."""
    def layer_prefix(self, c: ConfigFields, owner: int, j: int, /) -> str:
        """The path prefix of stored layer `owner`'s inner layer j ('encoder.layer.3.')."""
    def sublayer_modules(self, c: ConfigFields, p: str, first: bool, /) -> Sublayers:
        """(attention, ffn) modules of one stored layer at prefix p; first: the model's first stored layer."""
    def other_modules(self, c: ConfigFields, /) -> list[Module]:
        """The base model's modules outside `embeddings` and the layers (projections, shared tables, norms, pooler)."""
    def head_modules(self, c: ConfigFields, head: str, num_labels: int, /) -> list[Module]:
        """What the task model adds beside its base model (head: classification, token or mlm), tied decoders too."""
    # the training step (albert_core.step.peak)
    @property
    def STEP(self) -> Step: ...
    def buffer_bytes(self, c: ConfigFields, float_bytes: int, /) -> int:
        """Bytes of the base model's buffers (register_buffer / nn.Buffer); float ones float_bytes an element."""


# Optional parts: a family defines all of one or none of it. Read with isinstance (runtime_checkable), which
# narrows the type; the type checker holds each module that has one to it (the block at the end of the module).
# Optional single names: declared below with their types and defaults (OPTIONAL), each read through its accessor
# and nowhere else (tests/test_family_contract.py fails on a getattr or hasattr of one outside this module).
@runtime_checkable
class Heads(Protocol):
    """The pretraining heads, modelled where HEADS is None (bert, albert)."""

    def heads_groups(self, c: ConfigFields, /) -> list[ParamGroup]: ...
    def heads_size(self, c: ConfigFields, /) -> int: ...


@runtime_checkable
class Inference(Protocol):
    """The inference peak (albert_core.replay.liveness): a no_grad eval forward's allocations and frees."""

    def infer_embeddings(self, f: Infer, cfg: ConfigFields, /) -> tuple[int, int]: ...
    def infer_layer(self, f: Infer, cfg: ConfigFields, x: int, j: int, /) -> int: ...
    def infer_pooler(self, f: Infer, cfg: ConfigFields, x: int, /) -> None: ...
    def cast_sizes(self, cfg: ConfigFields, /) -> dict[str, int]: ...


def position_id_buffers(c: ConfigFields, n: int) -> int:
    """n (1, max_position_embeddings) int64 buffers: position_ids (and token_type_ids where n is 2)."""
    return n * (c.max_position + c.position_offset) * 8


def linear(n_in: int, n_out: int, bias: bool = True) -> int:
    """nn.Linear(n_in, n_out): weight n_out×n_in plus bias n_out (plain arithmetic: numpy arrays work too)."""
    return n_in * n_out + (n_out if bias else 0)


def layer_norm(n: int, bias: bool = True) -> int:
    """nn.LayerNorm(n): weight and (unless bias=False) bias."""
    return 2 * n if bias else n


def lin_shape(n_in: int, n_out: int, bias: bool = True) -> str:
    return f"{n_in}×{n_out}" + (f" + {n_out}" if bias else "")


def bert_layer_groups(c: ConfigFields, n_att: int, n_ffn: int) -> list[ParamGroup]:
    """BertLayer as Hugging Face names it (BERT, RoBERTa, ELECTRA): self-attention, output, FFN."""
    H, I = c.hidden_dim, c.intermediate_dim
    g = [ParamGroup("layers", "attention", f"attention.self.{m}", lin_shape(H, H), linear(H, H), n_att)
         for m in ("query", "key", "value")]
    return g + [
        ParamGroup("layers", "attention", "attention.output.dense", lin_shape(H, H), linear(H, H), n_att),
        ParamGroup("layers", "attention", "attention.output.LayerNorm", f"2×{H}", layer_norm(H), n_att),
        ParamGroup("layers", "ffn", "intermediate.dense", lin_shape(H, I), linear(H, I), n_ffn),
        ParamGroup("layers", "ffn", "output.dense", lin_shape(I, H), linear(I, H), n_ffn),
        ParamGroup("layers", "ffn", "output.LayerNorm", f"2×{H}", layer_norm(H), n_ffn),
    ]


def bert_layer_sizes(c: ConfigFields) -> tuple[int, int]:
    """(attention, ffn) parameters of one BertLayer: 4 H×H projections + LayerNorm; two Linear + LayerNorm."""
    H, I = c.hidden_dim, c.intermediate_dim
    # Vaswani et al. 2017 Sec. 3.2.2 (Q, K, V, output) and Sec. 3.3 (FFN)
    return 4 * linear(H, H) + layer_norm(H), linear(H, I) + linear(I, H) + layer_norm(H)


def pooler_groups(c: ConfigFields) -> list[ParamGroup]:
    H = c.hidden_dim
    return [ParamGroup("pooler", "pooler", "pooler.dense", lin_shape(H, H), linear(H, H), 1)]


# config.json keys that change parameters or activations in BERT-style encoders and are not modelled:
# key -> (values that mean "off", what to change). Absent keys are fine.
BERT_STYLE_REFUSED: Refusals = {
    "is_decoder": ((False, None), "decoder mode (causal attention, a cache) is not modelled; set it to false"),
    "add_cross_attention": ((False, None), "cross-attention layers are not modelled; set it to false"),
    "position_embedding_type": (("absolute", None), "only absolute position embeddings are modelled; "
                                                     "relative_key/relative_key_query add distance tables"),
    "chunk_size_feed_forward": ((0, None), "a chunked FFN changes the activations; set it to 0"),
    "pruned_heads": (({}, None), "pruned attention heads change the parameters; remove the key"),
}
# in any family: what changes storage or adds modules beyond the model
ANY_REFUSED: Refusals = {
    "adapters": ((None,), "adapter modules are not modelled; remove the key"),
    "adapter_config": ((None,), "adapter modules are not modelled; remove the key"),
    "quantization_config": ((None,), "quantized weights are not modelled; remove the key"),
}


def refused(d: dict[str, object], rules: Refusals) -> list[str]:
    """A message naming each key of d whose value the rules refuse."""
    out = []
    for key, (ok, why) in {**ANY_REFUSED, **rules}.items():
        if key in d and not any(d[key] is v or (type(d[key]) is type(v) and d[key] == v) for v in ok):
            out.append(f"{key}={_show(d[key])} is not supported: {why}")
    return out


def _show(v: object) -> str:
    return str(v).lower() if isinstance(v, bool) else short(v)


# ---- optional single names: what a family may define beside the contract, its type, and the default -------------
OPTIONAL = {
    "HF_ATTENTIONS": "tuple[str, ...]: the attention implementations Hugging Face's model takes (default eager, sdpa)",
    "LORA_ALIASES": "dict[str, tuple[str, ...]]: LoRA's query/key/value as the family names them (default none)",
    "FFN_MATRICES": "int: H x I matrices in the FFN, 3 for a gated one (default 2)",
    "FIRST_LAYER_DIFFERS": "bool: layer 0 has other modules than the rest (default False)",
    "relative_position_flops": "(cfg, seq_len, batch_size) -> int: FLOPs of relative-position attention",
    "unread_parameter": "(cfg, name) -> bool: a built parameter the forward never reads (no gradient, no state)",
    "validate_arrays": "(arrays by field) -> bool array: the family's own validate rules on whole numpy arrays",
    "replay_checkpoint_inputs": "(replay, cfg) -> None: the storage checkpointing hands to every layer",
}


def hf_attentions(fam: object) -> tuple[str, ...]:
    """HF_ATTENTIONS (engine/models.py, task_model.py, families.hf_attention)."""
    return tuple(getattr(fam, "HF_ATTENTIONS", ("eager", "sdpa")))


def lora_aliases(fam: object) -> dict[str, tuple[str, ...]]:
    """LORA_ALIASES (estimate/lora.py): e.g. DeBERTa's query_proj for LoRA's query."""
    return dict(getattr(fam, "LORA_ALIASES", {}))


def ffn_matrices(fam: object) -> int:
    """FFN_MATRICES (estimate/flops.py): 2, or 3 for a gated FFN (ModernBERT's GLU)."""
    return int(getattr(fam, "FFN_MATRICES", 2))


def first_layer_differs(fam: object) -> bool:
    """FIRST_LAYER_DIFFERS (estimate/activations.py): ModernBERT's layer 0 has nn.Identity for its attn_norm."""
    return bool(getattr(fam, "FIRST_LAYER_DIFFERS", False))


def relative_position_flops(fam: object) -> Callable[[ConfigFields, int, int], int] | None:
    """relative_position_flops (estimate/flops.py): DeBERTa's disentangled attention."""
    return cast("Callable[[ConfigFields, int, int], int] | None", getattr(fam, "relative_position_flops", None))


def unread_parameter(fam: object) -> Callable[[ConfigFields, str], bool] | None:
    """unread_parameter (step/peak.py): DeBERTa's rel_embeddings where neither c2p nor p2c reads them."""
    return cast("Callable[[ConfigFields, str], bool] | None", getattr(fam, "unread_parameter", None))


def validate_arrays(fam: object) -> Callable[[Mapping[str, Any]], Any] | None:
    """validate_arrays (estimate/sweeps.py): RoBERTa's position offset, MPNet's buckets; test_family_contract.py holds
    it equal to the family's validate at every bound."""
    return cast("Callable[[Mapping[str, Any]], Any] | None", getattr(fam, "validate_arrays", None))


def replay_checkpoint_inputs(fam: object) -> Callable[[Replay, ConfigFields], None] | None:
    """replay_checkpoint_inputs (estimate/activations.py): DeBERTa's relative embeddings under checkpointing."""
    return cast("Callable[[Replay, ConfigFields], None] | None", getattr(fam, "replay_checkpoint_inputs", None))
