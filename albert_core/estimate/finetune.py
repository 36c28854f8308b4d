"""Fine-tuning modes: which parameters train, counted exactly as peft's get_nb_trainable_parameters counts them.

Modes (parse_mode reads the command line's spelling):
  full                everything trains.
  frozen-embeddings   the base model's `embeddings` module is frozen (its tables and LayerNorm; DeBERTa's
                      embed_proj too). ALBERT's E -> H projection (encoder.embedding_hidden_mapping_in),
                      ELECTRA's embeddings_project and DeBERTa's encoder.rel_embeddings live outside it and train.
                      An MLM decoder's weight *is* the word-embedding table, so it is frozen with it.
  frozen-layers:K     the embeddings plus the first K layers (encoder.layer[:K]). ALBERT: layer i runs group
                      i // (L / num_hidden_groups) (AlbertTransformer.forward), and a group's weights are one
                      tensor for every layer that runs it, so a group is frozen when any of the first K layers
                      runs it: with one group (albert-base) frozen-layers:1 freezes the whole shared encoder.
  lora                peft LoRA: every base weight frozen; each targeted nn.Linear (or nn.Embedding) gains
                      lora_A (r×in) and lora_B (out×r) (Hu et al. 2021, Sec. 4.1; peft tuners/lora/layer.py).
                      Targets by Hugging Face module name, matched as peft matches them (the name itself or
                      its last dotted parts); default: peft's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING
                      for the model type, and a ValueError asking for targets where it has none (albert,
                      distilbert, modernbert). ALBERT's shared layers are one module each: adapted once.
                      Task models: peft's PeftModelFor{SequenceClassification,TokenClassification} put
                      ["classifier", "score"] in modules_to_save, so every module whose name ends with one of
                      them (DistilBERT's pre_classifier too: peft's `key.endswith`) is wrapped in a
                      ModulesToSaveWrapper holding the frozen original *and* a trainable copy: all params count both.
                      The MLM model has no peft task type: its head stays frozen. LoraSpec.bias "all" trains every
                      bias, "lora_only" the adapted layers' (peft BaseTuner._mark_only_adapters_as_trainable).
  bitfit              biases only (Ben Zaken et al. 2022): every parameter named `bias` (Linear and LayerNorm biases,
                      an MLM head's output bias); a new classification/token head trains in full (it starts random).

Everything here is pure arithmetic over albert_core.estimate.hf_modules, for every sharing mode the explorer models
(a shared tensor is frozen, adapted and counted once); `build` makes the real model (peft for lora) with the
same settings, torch and peft imported inside the function, for tests and measurement (layouts Hugging Face
builds only). Not here: gradients, optimizer state and activations of these modes (the training step).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..choices import LORA_BIAS, MAX_RANK, MODES, OPTIMIZERS, LoraSpec, parse_mode
from ..config import ModelConfig
from .heads import check_head, check_labels
from .hf_modules import (
    BoundedCache,
    Module,
    base_modules,
    embedding_modules,
    head_modules,
    layer_modules,
    layers_key,
    other_modules,
    pooler_dropped,
    prefix,
)
from .lora import (
    MODULES_TO_SAVE,
    PEFT_DEFAULT_TARGETS,
    PEFT_TASK,
    default_targets,
    lora_candidates,
    lora_targets,
    model_type,
    parse_targets,
    resolved_targets,
)


@dataclass(frozen=True)
class Trainable:
    """Trainable and frozen parameters of one fine-tuning setup, as peft's get_nb_trainable_parameters counts."""

    mode: str
    layers_frozen: int  # K of frozen-layers (0 otherwise)
    head: str
    num_labels: int
    model_params: int  # sum(p.numel()) of the model before any adapter (heads.head_parameters(...).total)
    trainable: int
    frozen: int
    adapter: int  # parameters LoRA adds (lora_A + lora_B)
    saved_copies: int  # parameters of peft's trainable copies of modules_to_save (their frozen originals stay)
    targets: tuple[str, ...] = ()  # LoRA target names used
    adapted: tuple[str, ...] = ()  # the modules LoRA wraps, as named_modules() names them
    lora: LoraSpec | None = None
    trainable_by_part: dict[str, int] = field(default_factory=dict)  # embeddings, layers, other, head, adapter

    @property
    def total(self) -> int:
        """All parameters peft counts: the model's, LoRA's and the trainable copies."""
        return self.trainable + self.frozen

    @property
    def trainable_pct(self) -> float:
        return 100 * self.trainable / self.total

    def to_json(self) -> dict[str, Any]:
        """Plain numbers for --json and the report; keys name what they hold."""
        return {"mode": self.mode if self.mode != "frozen-layers" else f"frozen-layers:{self.layers_frozen}",
                "head": self.head, "num_labels": self.num_labels, "model": self.model_params,
                "trainable": self.trainable, "frozen": self.frozen, "total": self.total,
                "lora_adapter": self.adapter, "modules_to_save_copies": self.saved_copies,
                "lora": None if self.lora is None else {"r": self.lora.r, "lora_alpha": self.lora.lora_alpha,
                                                        "lora_dropout": self.lora.lora_dropout, "bias": self.lora.bias,
                                                        "targets": list(self.targets), "adapted_modules": len(self.adapted)},
                "trainable_by_part": dict(self.trainable_by_part)}


def _matches(path: str, targets: tuple[str, ...]) -> bool:
    """peft check_target_module_exists for a list: the key itself, or it ends with '.' + a target."""
    return path in targets or any(path.endswith("." + t) for t in targets)


def _saved(path: str) -> bool:
    """Inside a module peft wraps for modules_to_save (_set_trainable: any key ending with a name)."""
    parts = path.split(".")
    return any(".".join(parts[:i]).endswith(MODULES_TO_SAVE) for i in range(1, len(parts) + 1))


def _component_saved(path: str) -> bool:
    """peft check_target_module_exists: re.match(rf"(^|.*\\.){m}($|\\..*)", key) for m in modules_to_save."""
    return any(part in MODULES_TO_SAVE for part in path.split("."))


def _frozen_layer_paths(cfg: ModelConfig, k: int) -> set[str]:
    """Module paths (unprefixed) frozen-layers:k freezes: whatever the first k layer steps run (hf_modules.layer_modules
    lists a shared module at the first step that runs it; ALBERT: the groups those steps run, whole)."""
    return {m.path for step in layer_modules(cfg)[:k] for m in step}


@dataclass(frozen=True)
class Tensor:
    """One parameter tensor of the fine-tuned model, as named_parameters() would yield it (peft's names for LoRA)."""

    name: str
    shape: tuple[int, ...]
    trainable: bool
    part: str  # embeddings | layers | other | head | adapter

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


def _shapes(m: Module) -> list[tuple[str, tuple[int, ...]]]:
    """(name, shape) of a module's own parameters: nn.Linear weight is out×in, nn.Embedding's rows×width."""
    if m.kind == "param":
        return [(m.path, (m.n_out,))]
    out = []
    if not m.tied:
        weight = {"linear": (m.n_out, m.n_in), "embedding": (m.n_in, m.n_out), "norm": (m.n_out,)}[m.kind]
        out.append((f"{m.path}.weight", weight))
    if m.bias and m.kind != "embedding":
        out.append((f"{m.path}.bias", (m.n_out,)))
    return out


def _is_bias(name: str) -> bool:
    return name.rsplit(".", 1)[-1] == "bias"


TENSOR_MAX_APPLICATIONS = 16_384  # layer applications up to which tensors() lists every tensor (layer_modules walks
# each application: about 0.1 ms apiece, 1.9 s at this bound); full fine-tuning without a head needs no list


def check_countable(cfg: ModelConfig) -> None:
    """ValueError, saying what to change, for a config too deep to list tensor by tensor (see tensors())."""
    n = cfg.layer_applications
    if n > TENSOR_MAX_APPLICATIONS:
        raise ValueError(f"this fine-tuning setup is counted tensor by tensor, for up to {TENSOR_MAX_APPLICATIONS:,} "
                         f"layer applications; this config runs {n:,} ({cfg.num_layers:,} layers x inner_group_num "
                         f"{cfg.inner_group_num:,}): lower num_layers or inner_group_num, or choose full fine-tuning "
                         "without a head, which is counted at any depth")


def _full_base(cfg: ModelConfig) -> Trainable:
    """trainable(cfg) for full fine-tuning of the base model without listing the layers' tensors: the layers are
    the closed form's total less the embedding and other modules (exactly tensors()'s sum; tests hold them equal)."""
    from .params import count_parameters

    emb = sum(m.numel for m in embedding_modules(cfg))
    other = sum(m.numel for m in other_modules(cfg))
    total = count_parameters(cfg).total
    by_part = {"embeddings": emb, "layers": total - emb - other, "other": other, "head": 0, "adapter": 0}
    return Trainable("full", 0, "none", 0, total, total, 0, 0, 0, (), (), None, by_part)


def tensors(cfg: ModelConfig, mode: str = "full", *, head: str = "none", num_labels: int = 2,
            lora: LoraSpec | None = None) -> list[Tensor]:
    """Every parameter tensor of cfg with `head` under `mode`, trainable or not (what gradients and optimizer
    state are kept for: Adafactor's factored state needs the shapes). Names as named_parameters() gives them;
    for lora as peft names them (base_model.model.<path>.lora_A.default.weight, ...). See trainable()."""
    return list(_tensors(cfg, mode, head, num_labels, lora))


@lru_cache(maxsize=8)  # the Fit planner's batch search asks training_memory, hence this, a dozen times per config
def _tensors(cfg: ModelConfig, mode: str, head: str, num_labels: int, lora: LoraSpec | None) -> tuple[Tensor, ...]:
    name, k = parse_mode(mode)
    head = check_head(head)
    num_labels = check_labels(num_labels) if head in ("classification", "token") else 0
    check_countable(cfg)
    if name == "frozen-layers" and not 0 <= k <= cfg.num_layers:
        raise ValueError(f"frozen-layers:{k}: the number of layers to freeze must be from 0 to {cfg.num_layers}")
    p = prefix(cfg, head)
    if name == "lora":
        emb = {m.path for m in embedding_modules(cfg)}
        layer_paths = {m.path for layer in layer_modules(cfg) for m in layer}
        part = {**{m: "embeddings" for m in emb}, **{m: "layers" for m in layer_paths}}
        mods = [(m, part.get(m.path, "other"), p + m.path) for m in base_modules(cfg, head)]
        mods += [(m, "head", m.path) for m in head_modules(cfg, head, max(num_labels, 1))]
        return tuple(_lora_tensors(cfg, head, mods, lora or LoraSpec()))
    # named_parameters' order (hf_modules.base_modules, then the head): the embeddings, the layers, the rest
    dropped = ("pooler", "pooler.dense") if pooler_dropped(cfg, head) else ()
    others = [m for m in other_modules(cfg) if m.path not in dropped]
    frozen_embeddings = name in ("frozen-embeddings", "frozen-layers")
    return (*_plain_tensors(embedding_modules(cfg), "embeddings", p, name, head, frozen_embeddings),
            *_layer_tensors(cfg, name, k, p),
            *_plain_tensors(others, "other", p, name, head, False),
            *_plain_tensors(head_modules(cfg, head, max(num_labels, 1)), "head", "", name, head, False))


def _plain_tensors(mods: list[Module], where: str, p: str, name: str, head: str, frozen: bool) -> list[Tensor]:
    """The tensors of modules outside the layers (`where`: embeddings, other or head), `frozen` unless BitFit."""
    out = []
    for m in mods:
        for pname, shape in _shapes(Module(p + m.path, m.kind, m.n_in, m.n_out, m.bias, m.tied)):
            if name == "bitfit":  # biases, and a new classification/token head in full
                train = (where == "head" and head in ("classification", "token")) or _is_bias(pname)
            else:
                train = where == "head" or not frozen
            out.append(Tensor(pname, shape, train, where))
    return out


_LAYER_TENSORS = BoundedCache(4)


def _layer_tensors(cfg: ModelConfig, name: str, k: int, p: str) -> tuple[Tensor, ...]:
    """The layers' tensors, kept for the last few configs by hf_modules.layers_key: the Fit planner's search over
    max_position asks for the same layers at a dozen positions (a 4,096-layer config: 65,000 tensors each time)."""
    def make() -> tuple[Tensor, ...]:
        frozen = _frozen_layer_paths(cfg, k) if name == "frozen-layers" else set()
        out = []
        for step in layer_modules(cfg):
            for m in step:
                for pname, shape in _shapes(Module(p + m.path, m.kind, m.n_in, m.n_out, m.bias, m.tied)):
                    train = _is_bias(pname) if name == "bitfit" else m.path not in frozen
                    out.append(Tensor(pname, shape, train, "layers"))
        return tuple(out)

    layers: tuple[Tensor, ...] = _LAYER_TENSORS.get((layers_key(cfg), name, k, p), make)
    return layers


def _lora_tensors(cfg: ModelConfig, head: str, mods: list[tuple[Module, str, str]], lora: LoraSpec) -> list[Tensor]:
    """peft's LoRA model: base tensors frozen (biases per lora.bias), lora_A/lora_B per adapted module,
    modules_to_save as a frozen original plus a trainable copy."""
    targets = resolved_targets(cfg, lora)
    saving = PEFT_TASK[head] in ("SEQ_CLS", "TOKEN_CLS")
    pre = "base_model.model."
    out: list[Tensor] = []
    adapted = 0
    for m, where, path in mods:
        own = _shapes(Module(path, m.kind, m.n_in, m.n_out, m.bias, m.tied))
        if saving and _saved(path):
            # SEQ_CLS sets modules_to_save before injecting LoRA, and peft then skips any key with a
            # component "classifier"/"score" (check_target_module_exists); anything else would be both
            if _matches(path, targets) and not (PEFT_TASK[head] == "SEQ_CLS" and _component_saved(path)):
                raise ValueError(f"LoRA target matches '{path}', which peft saves whole (modules_to_save) "
                                 "for this head; target other modules")
            root = next(".".join(path.split(".")[:i]) for i in range(1, path.count(".") + 2)
                        if ".".join(path.split(".")[:i]).endswith(MODULES_TO_SAVE))  # the wrapped module
            for pname, shape in own:
                rest = pname[len(root):]
                out.append(Tensor(f"{pre}{root}.original_module{rest}", shape, False, where))
                out.append(Tensor(f"{pre}{root}.modules_to_save.default{rest}", shape, True, where))
            continue
        hit = _matches(path, targets)
        if hit:
            if m.tied:
                raise ValueError(f"LoRA target '{path}' is the MLM decoder, whose weight is the word-embedding "
                                 "table (tied); target other modules")
            if m.kind not in ("linear", "embedding"):
                raise ValueError(f"LoRA target '{path}' is a {'LayerNorm' if m.kind == 'norm' else 'bare parameter'}"
                                 f"; peft adapts nn.Linear and nn.Embedding modules: {', '.join(lora_candidates(cfg, head))}")
            adapted += 1
        for pname, shape in own:
            if hit:  # peft wraps the module: its own parameters move under base_layer
                pname = f"{path}.base_layer{pname[len(path):]}"
            train = _is_bias(pname) and (lora.bias == "all" or (lora.bias == "lora_only" and hit and m.kind == "linear"))
            out.append(Tensor(pre + pname, shape, train, where))
        if hit:  # Hu et al. 2021 Sec. 4.1: W + BA, A r×in, B out×r (peft tuners/lora/layer.py)
            r = lora.r
            if m.kind == "linear":
                out += [Tensor(f"{pre}{path}.lora_A.default.weight", (r, m.n_in), True, "adapter"),
                        Tensor(f"{pre}{path}.lora_B.default.weight", (m.n_out, r), True, "adapter")]
            else:  # peft Embedding: lora_embedding_A r×num_embeddings, lora_embedding_B embedding_dim×r
                out += [Tensor(f"{pre}{path}.lora_embedding_A.default", (r, m.n_in), True, "adapter"),
                        Tensor(f"{pre}{path}.lora_embedding_B.default", (m.n_out, r), True, "adapter")]
    if not adapted:
        raise ValueError(f"LoRA targets {', '.join(targets)} match no module of this model; its Linear modules: "
                         f"{', '.join(lora_candidates(cfg, head))}")
    return out


def trainable(cfg: ModelConfig, mode: str = "full", *, head: str = "none", num_labels: int = 2,
              lora: LoraSpec | None = None) -> Trainable:
    """Trainable and frozen parameters of cfg with `head` under fine-tuning `mode` (parse_mode's spelling).

    lora: the LoRA settings for mode 'lora' (default LoraSpec(): r=8, peft's default targets). Counts are
    cfg's stored tensors (ALBERT's shared layers once; exactly the model Hugging Face builds from
    hf.to_hf_config(cfg) where it builds that layout), summed as peft's get_nb_trainable_parameters sums
    named_parameters(). Bad input: ValueError saying what to change.
    """
    name, k = parse_mode(mode)
    head = check_head(head)
    num_labels = check_labels(num_labels) if head in ("classification", "token") else 0
    lora = (lora or LoraSpec()) if name == "lora" else None
    if name == "full" and head == "none":
        return _full_base(cfg)
    ts = tensors(cfg, mode, head=head, num_labels=max(num_labels, 1), lora=lora)
    by_part = {"embeddings": 0, "layers": 0, "other": 0, "head": 0, "adapter": 0}
    train = frozen = adapter = saved = 0
    adapted: dict[str, None] = {}
    for t in ts:
        n = t.numel
        if t.trainable:
            train += n
            by_part[t.part] += n
        else:
            frozen += n
        if t.part == "adapter":
            adapter += n
            adapted.setdefault(t.name[len("base_model.model."):].split(".lora_")[0], None)
        elif ".modules_to_save.default." in t.name:
            saved += n
    model_params = train + frozen - adapter - saved
    targets = () if lora is None else resolved_targets(cfg, lora)
    return Trainable(name, k, head, num_labels, model_params, train, frozen, adapter, saved, targets,
                     tuple(adapted), lora, by_part)


def state_elements(ts: list[Tensor], optimizer: str = "adamw") -> dict[str, int]:
    """Elements of gradients and optimizer state kept for the trainable tensors only (frozen ones keep none).

    adamw: exp_avg and exp_avg_sq per element (torch.optim.AdamW); sgd: momentum_buffer (torch.optim.SGD,
    momentum > 0); adafactor: torch.optim.Adafactor's row_var (n×1) and col_var (1×m) for a 2-D n×m tensor,
    variance (n) for a 1-D one (Shazeer & Stern 2018, Sec. 3). The scalar `step` counters are left out.
    Multiply by the element size of the precision in use (albert_core.step.training) for bytes.
    """
    from ..config import require_choice

    require_choice("optimizer", optimizer, OPTIMIZERS)
    grads = state = 0
    for t in ts:
        if not t.trainable:
            continue
        grads += t.numel
        if optimizer == "adamw":
            state += 2 * t.numel
        elif optimizer == "sgd":
            state += t.numel
        else:
            state += t.shape[0] + t.shape[1] if len(t.shape) == 2 else t.numel
    return {"gradients": grads, "optimizer": state}


def element_totals(cfg: ModelConfig, mode: str, optimizer: str, *, head: str = "none", num_labels: int = 2,
                   lora: LoraSpec | None = None) -> tuple[int, int, int]:
    """(elements of every tensor, of the trainable ones (= gradients), of the optimizer state): sum(numel) and
    state_elements over tensors(cfg, mode, ...), without walking the layers' tensors again for a config whose layers
    were summed before (hf_modules.layers_key: the same at every max_position; a sweep over max_position asks at a
    dozen of them). Bad input: as tensors()."""
    ts = _tensors(cfg, mode, head, num_labels, lora)
    name, k = parse_mode(mode)
    if name == "lora":  # peft's names and adapters: the list as it is
        el = state_elements(list(ts), optimizer)
        return sum(t.numel for t in ts), el["gradients"], el["optimizer"]
    p = prefix(cfg, check_head(head))
    rest = [t for t in ts if t.part != "layers"]
    el = state_elements(rest, optimizer)
    n, grads, state = _LAYER_TOTALS.get((layers_key(cfg), name, k, p, optimizer),
                                        lambda: _totals(_layer_tensors(cfg, name, k, p), optimizer))
    return sum(t.numel for t in rest) + n, el["gradients"] + grads, el["optimizer"] + state


_LAYER_TOTALS = BoundedCache(8)  # the layers' sums, by the key _layer_tensors keeps their tensors by, and optimizer


def _totals(layers: tuple[Tensor, ...], optimizer: str) -> tuple[int, int, int]:
    el = state_elements(list(layers), optimizer)
    return sum(t.numel for t in layers), el["gradients"], el["optimizer"]


def mode_table(cfg: ModelConfig, modes: tuple[str, ...] = ("full", "frozen-embeddings", "lora", "bitfit"), *,
               head: str = "none", num_labels: int = 2, lora: LoraSpec | None = None) -> Any:
    """Tidy DataFrame, one row per mode: mode, trainable, frozen, total, trainable_pct, error.

    A mode that cannot be counted as asked (LoRA without targets where peft has no default, say) gets its
    message in `error` and no numbers, so a page can show why beside the others.
    """
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for mode in modes:
        try:
            t = trainable(cfg, mode, head=head, num_labels=num_labels, lora=lora)
        except ValueError as e:
            rows.append({"mode": mode, "trainable": None, "frozen": None, "total": None, "trainable_pct": None,
                         "error": str(e)})
            continue
        rows.append({"mode": mode, "trainable": t.trainable, "frozen": t.frozen, "total": t.total,
                     "trainable_pct": t.trainable_pct, "error": ""})
    df = pd.DataFrame(rows, columns=["mode", "trainable", "frozen", "total", "trainable_pct", "error"], dtype=object)
    return df.where(df.notna(), None)  # object columns: counts stay Python ints (exact), a missing one None


__all__ = ["MODES", "PEFT_DEFAULT_TARGETS", "LoraSpec", "Module", "Trainable", "default_targets", "lora_candidates",
           "mode_table", "parse_mode", "parse_targets", "state_elements", "tensors", "trainable", "Tensor",
           "LORA_BIAS", "MAX_RANK", "MODULES_TO_SAVE", "PEFT_TASK", "lora_targets", "model_type",
           "resolved_targets"]
