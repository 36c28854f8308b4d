"""The modules Hugging Face builds for a config, by their qualified names, without torch.

One `Module` per nn.Linear / nn.Embedding / nn.LayerNorm / bare nn.Parameter that holds parameters
(or, for a tied MLM decoder, that holds none of its own), with the name `model.named_modules()` gives
it, for the base model (`AutoModel`) or a task model (`AutoModelFor{SequenceClassification,
TokenClassification,MaskedLM}`). Layers appear once per *stored* copy: ALBERT's shared layers are one
module object in PyTorch (`named_parameters()` yields them once), and so here. For the sharing modes only
the explorer models (hf.hf_expressible false: BERT sharing all, attention-only sharing ...) the modules
follow cfg's own layout (params.stored_copies), named as their first copy would be: counts then equal
params.count_parameters(cfg), not the unshared model Hugging Face would build from to_hf_config.

Its users: heads.py (what a head adds and which pooler it drops), finetune.py (what each fine-tuning
mode trains, LoRA's targets by name), serving.py (which weights a quantizer replaces). tests/test_heads.py
checks `named_parameters(...)` name by name and size by size against the models transformers builds.

Layout per family (transformers 5.23 modeling_<family>.py, each module's __init__):
  bert, roberta, electra  embeddings.*, encoder.layer.{i}.attention.self.{query,key,value}, attention.output.dense,
                          attention.output.LayerNorm, intermediate.dense, output.dense, output.LayerNorm
  albert                  embeddings.*, encoder.embedding_hidden_mapping_in, encoder.albert_layer_groups.{g}
                          .albert_layers.{j}.{full_layer_layer_norm,attention.{query,key,value,dense,LayerNorm},ffn,ffn_output}
  distilbert              embeddings.*, transformer.layer.{i}.attention.{q,k,v,out}_lin, sa_layer_norm, ffn.lin1/2, output_layer_norm
  deberta-v2              embeddings.*, encoder.layer.{i}.attention.self.{query,key,value}_proj (+ pos_key_proj,
                          pos_query_proj), ..., encoder.rel_embeddings, encoder.LayerNorm
  modernbert              embeddings.{tok_embeddings,norm}, layers.{i}.{attn_norm (not layer 0),attn.Wqkv,attn.Wo,
                          mlp_norm,mlp.Wi,mlp.Wo}, final_norm
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any

from .config import ModelConfig

HEADS = ("none", "classification", "token", "mlm")
# the attribute under which each AutoModelFor... class holds the base model (BertForMaskedLM.bert, ...)
BASE_PREFIX = {"bert": "bert", "albert": "albert", "roberta": "roberta", "distilbert": "distilbert",
               "electra": "electra", "deberta-v2": "deberta", "modernbert": "model"}


@dataclass(frozen=True)
class Module:
    """One parameter-holding module as PyTorch names it.

    kind: "linear" (nn.Linear n_in -> n_out: weight n_out×n_in, bias n_out), "embedding" (nn.Embedding
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


def _lin(path: str, n_in: int, n_out: int, bias: bool = True) -> Module:
    return Module(path, "linear", n_in, n_out, bias)


def _norm(path: str, n: int, bias: bool = True) -> Module:
    return Module(path, "norm", n, n, bias)


def _emb(path: str, rows: int, width: int) -> Module:
    return Module(path, "embedding", rows, width, False)


def _bert_layer(p: str, H: int, I: int, qkv: tuple[str, ...] = ("query", "key", "value")) -> list[Module]:
    """BertLayer (and RobertaLayer, ElectraLayer, DebertaV2Layer with its own projection names)."""
    return [*(_lin(f"{p}attention.self.{m}", H, H) for m in qkv), _lin(f"{p}attention.output.dense", H, H),
            _norm(f"{p}attention.output.LayerNorm", H), _lin(f"{p}intermediate.dense", H, I),
            _lin(f"{p}output.dense", I, H), _norm(f"{p}output.LayerNorm", H)]


def embedding_modules(cfg: ModelConfig) -> list[Module]:
    """The modules inside the base model's `embeddings` module (what frozen-embeddings freezes)."""
    c = cfg
    V, E, H, P, T = c.vocab_size, c.embedding_dim, c.hidden_dim, c.max_position, c.type_vocab_size
    f = c.family
    if f == "modernbert":
        return [_emb("embeddings.tok_embeddings", V, H), _norm("embeddings.norm", H, c.norm_bias)]
    if f == "distilbert":
        return [_emb("embeddings.word_embeddings", V, H), _emb("embeddings.position_embeddings", P, H),
                _norm("embeddings.LayerNorm", H)]
    if f == "deberta-v2":
        m = [_emb("embeddings.word_embeddings", V, E)]
        if c.position_biased_input:
            m.append(_emb("embeddings.position_embeddings", P, E))
        if T > 0:
            m.append(_emb("embeddings.token_type_embeddings", T, E))
        if E != H:
            m.append(_lin("embeddings.embed_proj", E, H, bias=False))
        return [*m, _norm("embeddings.LayerNorm", H)]
    rows = P + c.position_offset  # RoBERTa: pad_token_id + 1 rows before position 0
    return [_emb("embeddings.word_embeddings", V, E), _emb("embeddings.position_embeddings", rows, E),
            _emb("embeddings.token_type_embeddings", T, E), _norm("embeddings.LayerNorm", E)]


def _sublayers(c: ModelConfig, p: str, first: bool) -> tuple[list[Module], list[Module]]:
    """(attention, ffn) modules of one stored layer at path prefix p; first: the model's first stored layer."""
    H, I, f = c.hidden_dim, c.intermediate_dim, c.family
    if f == "albert":  # AlbertLayer: full_layer_layer_norm follows the FFN
        return ([*(_lin(f"{p}attention.{m}", H, H) for m in ("query", "key", "value", "dense")),
                 _norm(f"{p}attention.LayerNorm", H)],
                [_lin(f"{p}ffn", H, I), _lin(f"{p}ffn_output", I, H), _norm(f"{p}full_layer_layer_norm", H)])
    if f == "distilbert":
        return ([*(_lin(f"{p}attention.{m}_lin", H, H) for m in ("q", "k", "v", "out")), _norm(f"{p}sa_layer_norm", H)],
                [_lin(f"{p}ffn.lin1", H, I), _lin(f"{p}ffn.lin2", I, H), _norm(f"{p}output_layer_norm", H)])
    if f == "modernbert":
        nb, ab, mb = c.norm_bias, c.attention_bias, c.mlp_bias
        norm = [] if first else [_norm(f"{p}attn_norm", H, nb)]  # layer 0's attn_norm is nn.Identity
        return ([*norm, _lin(f"{p}attn.Wqkv", H, 3 * H, ab), _lin(f"{p}attn.Wo", H, H, ab)],
                [_norm(f"{p}mlp_norm", H, nb), _lin(f"{p}mlp.Wi", H, 2 * I, mb), _lin(f"{p}mlp.Wo", I, H, mb)])
    layer = _bert_layer(p, H, I, ("query_proj", "key_proj", "value_proj") if f == "deberta-v2" else ("query", "key", "value"))
    if f == "deberta-v2":
        from .families.deberta_v2 import _pos_projs  # which position projections HF builds

        layer[3:3] = [_lin(f"{p}attention.self.{m}", H, H) for m in _pos_projs(c)]
    return layer[:-3], layer[-3:]


@lru_cache(maxsize=32)  # ModelConfig is frozen; a page asks for several modes of one config
def _layer_prefix(c: ModelConfig, owner: int, j: int) -> str:
    """Module path prefix of the stored layer `owner`'s inner layer j (ALBERT: group owner's albert_layers.j; the
    others stack the inner layers: layer owner * inner_group_num + j)."""
    if c.family == "albert":
        return f"encoder.albert_layer_groups.{owner}.albert_layers.{j}."
    k = owner * c.inner_group_num + j
    return {"distilbert": "transformer.layer.", "modernbert": "layers."}.get(c.family, "encoder.layer.") + f"{k}."


def layers_key(cfg: ModelConfig) -> tuple[Any, ...]:
    """cfg's fields but its name and max_position: what the layers' modules depend on (no layer module of any
    family has a size or a name that depends on the positions: only the embeddings' position table and
    DeBERTa's rel_embeddings, in other_modules, do). The Fit planner asks for a config at many max_positions."""
    return tuple(getattr(cfg, f.name) for f in fields(cfg) if f.name not in ("name", "max_position"))


class BoundedCache:
    """The last `size` values computed, by key; thread-safe (one server, many sessions' script threads). For values
    keyed by something other than their arguments, where functools.lru_cache cannot serve."""

    def __init__(self, size: int) -> None:
        self.size, self._items, self._lock = size, OrderedDict[Any, Any](), threading.Lock()

    def get(self, key: Any, make: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = make()  # outside the lock: two threads may both make it, and the same value is kept
        with self._lock:
            self._items[key] = value
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value


_LAYERS = BoundedCache(4)  # a 4,096-layer config's list holds about 65,000 modules


def layer_modules(cfg: ModelConfig) -> tuple[tuple[Module, ...], ...]:
    """The modules each of the num_layers layer steps brings, in order; a shared module only at the first
    step that runs it, so every stored tensor appears once (params.stored_copies copies of each sublayer).

    Step i runs group int(i / (L / num_groups)) (AlbertTransformer.forward), all inner_group_num layers of it.
    Names are Hugging Face's: for the layouts it builds (hf.hf_expressible) exactly its modules; for the
    sharing modes only the explorer models, a shared module keeps the name of its first copy.
    Kept for the last few configs by layers_key (the same at every max_position).
    """
    steps: tuple[tuple[Module, ...], ...] = _LAYERS.get(layers_key(cfg), lambda: _layer_modules(cfg))
    return steps


def _layer_modules(cfg: ModelConfig) -> tuple[tuple[Module, ...], ...]:
    c = cfg
    L, G, inner = c.num_layers, c.num_groups, c.inner_group_num
    att_shared, ffn_shared = c.sharing in ("all", "attention"), c.sharing in ("all", "ffn")
    seen: set[tuple[str, int, int]] = set()
    steps = []
    for i in range(L):
        g = int(i / (L / G))
        step: list[Module] = []
        for j in range(inner):
            owners = {"attention": g if att_shared else i, "ffn": g if ffn_shared else i}
            parts = {}
            for sub, owner in owners.items():
                p = _layer_prefix(c, owner, j)
                parts[sub] = _sublayers(c, p, owner * inner + j == 0)[0 if sub == "attention" else 1]
            for sub, owner in owners.items():
                if (sub, owner, j) not in seen:
                    seen.add((sub, owner, j))
                    step += parts[sub]
        steps.append(tuple(step))
    return tuple(steps)


def layer_module_counts(cfg: ModelConfig) -> list[tuple[Module, int]]:
    """layer_modules' modules with multiplicity, without walking the layer applications (any depth): each sublayer's
    modules at its first stored copy once, and at its second for the other stored_copies - 1 (they differ only
    in ModernBERT's first layer, whose attn_norm is nn.Identity). Summed, exactly layer_modules (tests hold them equal)."""
    from .layout import stored_copies

    c, inner = cfg, cfg.inner_group_num
    first, second = _layer_prefix(c, 0, 0), _layer_prefix(c, 1 // inner, 1 % inner)  # stored layers 0 and 1
    out: list[tuple[Module, int]] = []
    for side, sub in enumerate(("attention", "ffn")):
        copies = stored_copies(c, sub)
        out += [(m, 1) for m in _sublayers(c, first, True)[side]]
        if copies > 1:
            out += [(m, copies - 1) for m in _sublayers(c, second, False)[side]]
    return out


def model_module_counts(cfg: ModelConfig, head: str = "none", num_labels: int = 2) -> list[tuple[Module, int]]:
    """model_modules with multiplicity (layer_module_counts for the layers): the same modules summed, at any depth."""
    p = prefix(cfg, head)
    base = [(m, 1) for m in embedding_modules(cfg)] + layer_module_counts(cfg) + [(m, 1) for m in other_modules(cfg)]
    if pooler_dropped(cfg, head):
        base = [(m, n) for m, n in base if m.path not in ("pooler", "pooler.dense")]
    return ([(Module(p + m.path, m.kind, m.n_in, m.n_out, m.bias, m.tied), n) for m, n in base]
            + [(m, 1) for m in head_modules(cfg, head, num_labels)])


def other_modules(cfg: ModelConfig) -> list[Module]:
    """The base model's modules outside `embeddings` and the layers (projections, shared tables, final norm, pooler)."""
    from .families.deberta_v2 import rel_rows

    c = cfg
    E, H, f = c.embedding_dim, c.hidden_dim, c.family
    if f == "albert":
        return [_lin("encoder.embedding_hidden_mapping_in", E, H), _lin("pooler", H, H)]
    if f in ("bert", "roberta"):
        return [_lin("pooler.dense", H, H)]
    if f == "electra":
        return [_lin("embeddings_project", E, H)] if E != H else []
    if f == "deberta-v2":
        m = [_emb("encoder.rel_embeddings", rel_rows(c), H)] if c.relative_attention else []
        return m + ([_norm("encoder.LayerNorm", H)] if c.norm_rel_ebd == "layer_norm" else [])
    if f == "modernbert":
        return [_norm("final_norm", H, c.norm_bias)]
    return []


def pooler_dropped(cfg: ModelConfig, head: str) -> bool:
    """Whether the task model builds its base model without the pooler (add_pooling_layer=False)."""
    if head == "none" or cfg.family not in ("bert", "albert", "roberta"):
        return False
    return head in ("token", "mlm") or cfg.family == "roberta"  # RoBERTa's heads never pool


def head_modules(cfg: ModelConfig, head: str, num_labels: int = 2) -> list[Module]:
    """The modules the task model adds beside its base model (not prefixed), tied decoders included."""
    c = cfg
    H, n, f = c.hidden_dim, num_labels, c.family
    if head == "none":
        return []
    if head == "classification":
        if f in ("bert", "albert"):
            return [_lin("classifier", H, n)]  # on the pooled [CLS]
        if f in ("roberta", "electra"):  # RobertaClassificationHead / ElectraClassificationHead
            return [_lin("classifier.dense", H, H), _lin("classifier.out_proj", H, n)]
        if f == "distilbert":
            return [_lin("pre_classifier", H, H), _lin("classifier", H, n)]
        if f == "deberta-v2":  # ContextPooler: pooler_hidden_size defaults to hidden_size
            return [_lin("pooler.dense", H, H), _lin("classifier", H, n)]
        return [*_modernbert_head(c), _lin("classifier", H, n)]
    if head == "token":
        return [*(_modernbert_head(c) if f == "modernbert" else []), _lin("classifier", H, n)]
    if head == "mlm":
        return _mlm_head(c)
    raise ValueError(f"head must be one of {', '.join(HEADS)}, got {head!r}")


def _modernbert_head(c: ModelConfig) -> list[Module]:
    """ModernBertPredictionHead: dense H -> H (bias = classifier_bias, default False) and a LayerNorm."""
    return [_lin("head.dense", c.hidden_dim, c.hidden_dim, bias=False), _norm("head.norm", c.hidden_dim, c.norm_bias)]


def _mlm_head(c: ModelConfig) -> list[Module]:
    """Each family's own MLM head; the decoder's weight is the word-embedding table (tie_word_embeddings)."""
    V, E, H, f = c.vocab_size, c.embedding_dim, c.hidden_dim, c.family
    tied = {"tied": True}
    if f == "bert":  # BertOnlyMLMHead; decoder.bias is cls.predictions.bias
        return [Module("cls.predictions.bias", "param", V, V), _lin("cls.predictions.transform.dense", H, H),
                _norm("cls.predictions.transform.LayerNorm", H), Module("cls.predictions.decoder", "linear", H, V, False, **tied)]
    if f == "albert":  # AlbertMLMHead: H -> E, then the E-wide table
        return [Module("predictions.bias", "param", V, V), _norm("predictions.LayerNorm", E),
                _lin("predictions.dense", H, E), Module("predictions.decoder", "linear", E, V, False, **tied)]
    if f == "roberta":  # RobertaLMHead
        return [Module("lm_head.bias", "param", V, V), _lin("lm_head.dense", H, H), _norm("lm_head.layer_norm", H),
                Module("lm_head.decoder", "linear", H, V, False, **tied)]
    if f == "distilbert":
        return [_lin("vocab_transform", H, H), _norm("vocab_layer_norm", H),
                Module("vocab_projector", "linear", H, V, True, **tied)]
    if f == "electra":  # ElectraForMaskedLM: the generator's head, E wide
        return [_norm("generator_predictions.LayerNorm", E), _lin("generator_predictions.dense", H, E),
                Module("generator_lm_head", "linear", E, V, True, **tied)]
    if f == "deberta-v2":  # legacy=True (DebertaV2Config's default): LegacyDebertaV2OnlyMLMHead, H -> E
        return [Module("cls.predictions.bias", "param", V, V), _lin("cls.predictions.transform.dense", H, E),
                _norm("cls.predictions.transform.LayerNorm", E), Module("cls.predictions.decoder", "linear", E, V, False, **tied)]
    # ModernBertForMaskedLM: decoder bias = decoder_bias (default True)
    return [*_modernbert_head(c), Module("decoder", "linear", H, V, True, **tied)]


def base_modules(cfg: ModelConfig, head: str = "none") -> list[Module]:
    """The base model's modules as the task model holds them (pooler dropped where it is), unprefixed."""
    mods = [*embedding_modules(cfg), *(m for layer in layer_modules(cfg) for m in layer), *other_modules(cfg)]
    if pooler_dropped(cfg, head):
        mods = [m for m in mods if m.path not in ("pooler", "pooler.dense")]
    return mods


def prefix(cfg: ModelConfig, head: str) -> str:
    """'' for the base model, else the task model's attribute for it plus a dot ('bert.', 'model.', ...)."""
    return "" if head == "none" else BASE_PREFIX[cfg.family] + "."


def model_modules(cfg: ModelConfig, head: str = "none", num_labels: int = 2) -> list[Module]:
    """Every module of the model (base prefixed as the task model names it, then the head's), as named_modules()."""
    p = prefix(cfg, head)
    base = [Module(p + m.path, m.kind, m.n_in, m.n_out, m.bias, m.tied) for m in base_modules(cfg, head)]
    return base + head_modules(cfg, head, num_labels)


def named_parameters(cfg: ModelConfig, head: str = "none", num_labels: int = 2) -> dict[str, int]:
    """name -> numel of every parameter, as dict(model.named_parameters()) would give (tied ones once)."""
    return {name: n for m in model_modules(cfg, head, num_labels) for name, n in m.params}
