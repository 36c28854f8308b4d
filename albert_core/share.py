"""Shareable views: a URL query string <-> configs + page controls + warnings. No streamlit here.

Scheme (every value is text; only what differs from a default is written):
  preset=albert-base                   the preset the sidebar config starts from (default DEFAULT_PRESET)
  hidden_dim=1024&name=wide            ModelConfig fields that differ from that preset, keyed by field name
                                       (any family's: position_offset, share_att_key=0, mlp_bias=0, ...; true/false
                                       as 1/0; a link without them keeps their defaults, so old links still work)
  compare=bert-base,c1,albert-xxlarge  configs compared side by side, in order: preset names or custom ids cN
  c1.preset=albert-base&c1.name=wide&c1.hidden_dim=1024   a custom compared config, as preset + changed fields
  seq_len=1024&dtype=bfloat16&...      page controls, keyed by the names in CONTROLS
  parameters_tab=sharing               the open tab of a chart page (PAGE_TABS; default: the first)

decode() never raises: a bad value gives a warning naming its key and falls back to its default.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .choices import ATTENTIONS, DTYPES, MAX_RANK, MODES, OPTIMIZERS, PRECISIONS, SHARDINGS, LoraSpec
from .config import FIELD_NAMES, ConfigError, ModelConfig, coerce_field
from .decoders.decoder_presets import DECODER_PRESETS
from .estimate.gpus import GPUS
from .estimate.heads import HEADS, MAX_LABELS
from .estimate.serving import FORMATS
from .presets import DEFAULT_PRESET, PRESETS
from .workload import Workload

MAX_COMPARE = 12  # configs compared side by side, beyond the sidebar one
MAX_VALUE_LEN = 200  # longer query values are refused, not parsed
# the compare list of MAX_COMPARE configs with the longest preset names (encode writes it, decode reads it back)
MAX_COMPARE_LEN = MAX_COMPARE * (max(len(n) for n in PRESETS) + 1)
_CUSTOM_ID = re.compile(r"^c([1-9][0-9]?)$")
_MODULE_NAMES = re.compile(r"^\s*[A-Za-z_][A-Za-z0-9_.]*\s*(,\s*[A-Za-z_][A-Za-z0-9_.]*\s*)*$")


@dataclass(frozen=True)
class Control:
    """One page control that a URL can carry."""

    default: Any  # value when the URL leaves it out
    kind: str  # "int" | "choice" | "bool" | "probability" (0 <= p < 1) | "names" (comma list of module names, or empty)
    choices: tuple[str, ...] = ()  # allowed values of a "choice" control
    lo: int = 1  # smallest allowed "int"
    hi: int = 1  # largest allowed "int"


# the tabs of each chart page, as a link writes them (the first: the page's main figure)
PAGE_TABS: dict[str, tuple[str, ...]] = {
    "overview": ("presets", "table", "compare", "paper", "decoders"),
    "parameters": ("shares", "table", "breakdown", "sweep", "factorization", "sharing", "cuts", "decoders"),
    "memory": ("activations", "max_position", "variants", "training", "serving", "decoders"),
    "fit": ("chart", "table"),
    "compute": ("scatter", "table", "breakdown", "paper", "decoders"),
}


def _controls() -> dict[str, Control]:
    return {
        # Memory page
        "seq_len": Control(512, "int", lo=1, hi=1 << 20),  # tokens per sequence for the training-memory bars
        "batch_size": Control(8, "int", lo=1, hi=1 << 16),  # sequences per step (per GPU)
        "seq_max": Control(4096, "int", lo=128, hi=1 << 17),  # right end of the memory-vs-length sweep
        "dtype": Control("float32", "choice", DTYPES),  # activation dtype of the activation charts
        "attention": Control("eager", "choice", ATTENTIONS),
        "training": Control(True, "bool"),  # keep what backward needs (else: inference peak)
        "checkpointing": Control(False, "bool"),  # recompute layer internals in backward
        "scale": Control("linear", "choice", ("linear", "log")),  # axis scale of the sweep charts
        "precision": Control("mixed_bf16", "choice", PRECISIONS),  # training precision
        "optimizer": Control("adamw", "choice", OPTIMIZERS),
        # Fit planner (also the Memory page's budget)
        "gpu": Control("A100 80 GB", "choice", tuple(GPUS)),
        "num_gpus": Control(1, "int", lo=1, hi=4096),
        "sharding": Control("none", "choice", SHARDINGS),
        # Fine-tuning (Memory's training tab and the Fit planner): albert_core.estimate.finetune and heads
        "train_mode": Control("full", "choice", MODES),
        "frozen_layers": Control(1, "int", lo=0, hi=4096),  # K of frozen-layers (clipped to each config's layers)
        "lora_r": Control(8, "int", lo=1, hi=MAX_RANK),
        "lora_alpha": Control(8, "int", lo=1, hi=MAX_RANK),  # peft LoraConfig's default 8
        "lora_dropout": Control(0.0, "probability"),
        "lora_targets": Control("", "names"),  # Hugging Face module names; empty: peft's default for the model type
        "head": Control("none", "choice", HEADS),
        "num_labels": Control(2, "int", lo=1, hi=MAX_LABELS),
        # Serving (Memory's serving tab): albert_core.estimate.serving
        "serve_format": Control("int8", "choice", FORMATS),  # the format described in full under the table
        "group_size": Control(128, "int", lo=1, hi=1 << 16),  # int4: values per scale and zero point
        "serve_embeddings": Control(False, "bool"),  # quantize the nn.Embedding tables too
        # Parameters page
        "sweep": Control("hidden_dim", "choice", ("vocab_size", "hidden_dim", "num_layers")),
        "params_scale": Control("log", "choice", ("linear", "log")),  # x axis of the share sweep (its own key)
        "sharing_scale": Control("linear", "choice", ("linear", "log")),  # y axis of the sharing modes' bars
        "cuts_e": Control(128, "int", lo=1, hi=1 << 20),  # E of ALBERT's factorization applied to any model
        "cuts_decoder": Control("Qwen2.5-0.5B", "choice", tuple(DECODER_PRESETS)),  # the decoder the cuts are applied to
        # Overview page
        "overview_presets": Control(True, "bool"),  # the BERT and ALBERT presets shown as a reference set
        # Compute page
        "flops_seq_len": Control(512, "int", lo=1, hi=1 << 20),
        "flops_view": Control("flops", "choice", ("flops", "shares")),  # the breakdown's bars: FLOPs or % of each
        # Verify page
        "source": Control("auto", "choice", ("auto", "hf", "reference")),  # auto: the one that can express it
        "verify_batch": Control(2, "int", lo=1, hi=4096),
        "verify_seq_len": Control(64, "int", lo=1, hi=1 << 17),  # checked against the config's max_position
        "verify_real": Control(False, "bool"),  # real CPU tensors instead of fake ones
        # the open tab of each chart page (ui/sections.lazy_tabs): only that tab's content runs and is sent
        **{f"{page}_tab": Control(tabs[0], "choice", tabs) for page, tabs in PAGE_TABS.items()},
    }


CONTROLS: dict[str, Control] = _controls()
DEFAULT_COMPARE: tuple[str, ...] = ("bert-base", "bert-large", "albert-xxlarge")


@dataclass(frozen=True)
class View:
    """Everything a URL reproduces: the sidebar config, the compared configs, the controls."""

    config: ModelConfig = PRESETS[DEFAULT_PRESET]  # the one edited in the sidebar
    preset: str = DEFAULT_PRESET  # the preset it started from
    compare: tuple[ModelConfig, ...] = tuple(PRESETS[n] for n in DEFAULT_COMPARE)
    controls: Mapping[str, Any] = field(default_factory=lambda: {k: c.default for k, c in CONTROLS.items()})


def default_view() -> View:
    return View()


# ---- encode ---------------------------------------------------------------------------------
def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)  # repr of a float round-trips exactly through float()


def config_diff(cfg: ModelConfig, base: ModelConfig) -> dict[str, str]:
    """Fields of cfg that differ from base, as text."""
    return {f: _text(getattr(cfg, f)) for f in FIELD_NAMES if getattr(cfg, f) != getattr(base, f)}


def nearest_preset(cfg: ModelConfig) -> str:
    """The preset from which cfg differs in the fewest fields (ties: preset order)."""
    return min(PRESETS, key=lambda n: len(config_diff(cfg, PRESETS[n])))


def encode(view: View) -> dict[str, str]:
    """Query parameters for view; decode(encode(view)) == (view, [])."""
    q: dict[str, str] = {}
    if view.preset != DEFAULT_PRESET:
        q["preset"] = view.preset
    q.update(config_diff(view.config, PRESETS[view.preset]))
    tokens: list[str] = []
    n = 0
    for cfg in view.compare:
        if cfg.name in PRESETS and PRESETS[cfg.name] == cfg:
            tokens.append(cfg.name)
            continue
        n += 1
        base = nearest_preset(cfg)
        q[f"c{n}.preset"] = base
        q.update({f"c{n}.{k}": v for k, v in config_diff(cfg, PRESETS[base]).items()})
        tokens.append(f"c{n}")
    if tuple(tokens) != DEFAULT_COMPARE:
        q["compare"] = ",".join(tokens)
    for name, ctl in CONTROLS.items():
        value = view.controls.get(name, ctl.default)
        if value != ctl.default:
            q[name] = _text(value)
    return q


VERIFY_PATH = "verify"  # the Verify page's url_path (app.py)


def verify_query(view: View, cfg: ModelConfig, w: Workload) -> dict[str, str]:
    """The query of the Verify page measuring the workload behind a planner number: cfg as the sidebar config and
    w's batch, length, precision, attention, optimizer, checkpointing and fine-tuning (mode, k, head, labels,
    LoRA), which Memory, Fit and Verify share (controls_of). Beyond Verify's limits the batch and the length are
    clipped to them (CONTROLS' hi)."""
    controls = dict(view.controls) | controls_of(w, "verify")
    controls |= {"verify_batch": min(w.batch_size, CONTROLS["verify_batch"].hi),
                 "verify_seq_len": min(w.seq_len, CONTROLS["verify_seq_len"].hi)}
    preset = view.preset if cfg == view.config else nearest_preset(cfg)
    return encode(View(config=cfg, preset=preset, compare=view.compare, controls=controls))


# ---- the workload a view's controls describe ------------------------------------------------------
WORKLOAD_PAGES = ("memory", "fit", "verify")


def workload_of(controls: Mapping[str, Any], page: str = "memory") -> Workload:
    """The training step a view's controls describe, as the page that runs it reads them: "memory" (Memory's
    training tab: one GPU, checkpointing where Training is on), "fit" (the Fit planner: its GPUs and sharding, its
    checkpointing toggle alone) or "verify" (Verify's batch and length, run on this server's CPU). Precision,
    optimizer, attention and the fine-tuning (mode with frozen-layers' k, head, labels, LoRA; targets that do not
    parse: peft's default, the page says why) are every page's. Controls left out take their defaults."""
    if page not in WORKLOAD_PAGES:
        raise ValueError(f"page must be one of {', '.join(WORKLOAD_PAGES)}, got {page!r}")
    c = {k: ctl.default for k, ctl in CONTROLS.items()} | dict(controls)
    mode = c["train_mode"] + (f":{c['frozen_layers']}" if c["train_mode"] == "frozen-layers" else "")
    lora = None
    if mode == "lora":
        try:
            text = parse_control("lora_targets", str(c["lora_targets"]))
        except ValueError:
            text = ""
        lora = LoraSpec(r=c["lora_r"], lora_alpha=c["lora_alpha"], lora_dropout=c["lora_dropout"],
                        targets=tuple(text.split(",")) if text else None)
    verify = page == "verify"
    return Workload(batch_size=c["verify_batch" if verify else "batch_size"],
                    seq_len=c["verify_seq_len" if verify else "seq_len"], precision=c["precision"],
                    attention=c["attention"],
                    checkpointing=bool(c["checkpointing"] and (c["training"] or page != "memory")),
                    device="cpu" if verify else "cuda", optimizer=c["optimizer"], mode=mode, head=c["head"],
                    num_labels=c["num_labels"], lora=lora,
                    **({"num_gpus": c["num_gpus"], "sharding": c["sharding"]} if page == "fit" else {}))


def forward_of(controls: Mapping[str, Any]) -> Workload:
    """The forward Memory's activation tabs count, from a view's controls: batch, dtype (the forward's precision),
    attention, checkpointing where Training is on, on CUDA (what people plan for). seq_len is the view's
    training length; a sweep replaces it at each point, a config's own max_position replaces it there."""
    c = {k: ctl.default for k, ctl in CONTROLS.items()} | dict(controls)
    return Workload(batch_size=c["batch_size"], seq_len=c["seq_len"], precision=c["dtype"], attention=c["attention"],
                    checkpointing=bool(c["checkpointing"] and c["training"]))


def controls_of(w: Workload, page: str = "memory") -> dict[str, Any]:
    """The controls that make workload_of(..., page) give w back (the URL's keys of its settings): the inverse for
    every field a view carries (not the device, foreach or the GPUs outside "fit"; Training on where w
    checkpoints on "memory")."""
    if page not in WORKLOAD_PAGES:
        raise ValueError(f"page must be one of {', '.join(WORKLOAD_PAGES)}, got {page!r}")
    verify = page == "verify"
    mode, _, k = w.mode.partition(":")
    out: dict[str, Any] = {"verify_batch" if verify else "batch_size": w.batch_size,
                           "verify_seq_len" if verify else "seq_len": w.seq_len, "precision": w.precision,
                           "attention": w.attention, "checkpointing": w.checkpointing, "optimizer": w.optimizer,
                           "train_mode": mode, "head": w.head, "num_labels": w.num_labels}
    if k:
        out["frozen_layers"] = int(k)
    if w.checkpointing and page == "memory":
        out["training"] = True
    if page == "fit":
        out |= {"num_gpus": w.num_gpus, "sharding": w.sharding}
    if w.lora is not None:
        out |= {"lora_r": w.lora.r, "lora_alpha": w.lora.lora_alpha, "lora_dropout": w.lora.lora_dropout,
                "lora_targets": ",".join(w.lora.targets or ())}
    return out


# ---- decode ---------------------------------------------------------------------------------
def _short(s: str) -> str:
    return repr(s) if len(s) <= 40 else repr(s[:37] + "...")


def parse_control(name: str, raw: str) -> Any:
    """The value of control `name` from text, or ValueError saying what is allowed."""
    ctl = CONTROLS[name]
    if ctl.kind == "bool":
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{name} must be 1 or 0, got {_short(raw)}")
    if ctl.kind == "probability":
        try:
            p = float(raw)
        except ValueError:
            p = -1.0
        if not 0 <= p < 1:  # NaN fails both
            raise ValueError(f"{name} must be a probability from 0 up to (not including) 1, got {_short(raw)}")
        return p
    if ctl.kind == "names":
        if raw.strip() and not _MODULE_NAMES.match(raw):
            raise ValueError(f"{name} must be module names separated by commas, like query,value (or empty for "
                             f"peft's default), got {_short(raw)}")
        return ",".join(t.strip() for t in raw.split(",") if t.strip())
    if ctl.kind == "int":
        s = raw.strip()
        if not (s.isascii() and s.isdigit() and len(s) < 12):
            raise ValueError(f"{name} must be a whole number from {ctl.lo:,} to {ctl.hi:,}, got {_short(raw)}")
        v = int(s)
        if not ctl.lo <= v <= ctl.hi:
            raise ValueError(f"{name} must be from {ctl.lo:,} to {ctl.hi:,}, got {v:,}")
        return v
    if raw not in ctl.choices:
        raise ValueError(f"{name} must be one of {', '.join(ctl.choices)}, got {_short(raw)}")
    return raw


def _config_from(fields_: Mapping[str, str], preset: str, where: str, warnings: list[str]) -> ModelConfig | None:
    """preset + overridden fields; None (with warnings) when the result is not a valid config."""
    base = PRESETS[preset]
    kw: dict[str, Any] = {}
    for k, raw in fields_.items():
        try:
            kw[k] = coerce_field(k, raw)
        except ValueError as e:
            warnings.append(f"{where}{k}: {e}; using {base.name}'s value {_text(getattr(base, k))}")
    try:
        return base.replace(**kw)
    except ConfigError as e:
        who = f"{where[:-1]}: the" if where else "The sidebar"
        warnings.append(f"{who} config is not valid ({e}); using preset {preset} instead")
        return None


def decode(params: Mapping[str, Any]) -> tuple[View, list[str]]:
    """The view a query string describes, and a warning for every value that was ignored. Never raises."""
    warnings: list[str] = []
    q = _query(params, warnings)
    preset = _preset_of(q, "preset", "", warnings)
    config = _config_from({k: v for k, v in q.items() if k in FIELD_NAMES}, preset, "", warnings) or PRESETS[preset]
    compare = _compare(q, _customs(q, warnings), warnings)
    controls = _read_controls(q, warnings)
    return View(config=config, preset=preset, compare=tuple(compare), controls=controls), warnings


def _query(params: Mapping[str, Any], warnings: list[str]) -> dict[str, str]:
    """The query string as text keys and values; a repeated key's last value; too long values left out."""
    q: dict[str, str] = {}
    for key, value in params.items():
        if isinstance(value, (list, tuple)):  # a repeated key: the last one wins, as in st.query_params
            if len(set(map(str, value))) > 1:
                shown = ", ".join(_short(str(v)) for v in value[:4]) + (", ..." if len(value) > 4 else "")
                warnings.append(f"{_short(str(key))}: given {len(value)} times ({shown}); the last one is used")
            value = value[-1] if value else ""
        key, value = str(key), str(value)
        longest = MAX_COMPARE_LEN if key == "compare" else MAX_VALUE_LEN
        if len(value) > longest or len(key) > MAX_VALUE_LEN:
            warnings.append(f"{_short(key)}: value too long ({len(value):,} characters), ignored")
            continue
        q[key] = value
    return q


_FOLDED = {n.casefold(): n for n in PRESETS}  # a link typed by hand: "modernbert-large" is ModernBERT-large


def preset_named(text: str) -> str | None:
    """The preset `text` names, in any letter case ("modernbert-large" -> "ModernBERT-large"), or None."""
    return text if text in PRESETS else _FOLDED.get(text.casefold())


def _did_you_mean(text: str) -> str:
    """" Did you mean ...?" with the presets closest to an unknown name (difflib's ratio 0.75 or more), or ""."""
    near = difflib.get_close_matches(text.casefold(), list(_FOLDED), n=2, cutoff=0.75)
    return f" Did you mean {' or '.join(_FOLDED[n] for n in near)}?" if near else ""


def _preset_of(q: Mapping[str, str], key: str, where: str, warnings: list[str]) -> str:
    """The preset named by q[key] (DEFAULT_PRESET when absent or unknown)."""
    name = q.get(key, DEFAULT_PRESET)
    found = preset_named(name)
    if found is None:
        warnings.append(f"{where}preset: unknown preset {_short(name)} (one of {', '.join(PRESETS)}); "
                        f"using {DEFAULT_PRESET}.{_did_you_mean(name)}")
        return DEFAULT_PRESET
    return found


def _customs(q: Mapping[str, str], warnings: list[str]) -> dict[str, ModelConfig]:
    """The custom compared configs, cN.preset + cN.<field>, by id in the order the link names them."""
    custom: dict[str, dict[str, str]] = {}
    for k, v in q.items():
        head, dot, tail = k.partition(".")
        if not dot:
            continue
        if not _CUSTOM_ID.match(head):
            warnings.append(f"{_short(k)}: unknown parameter, ignored (custom configs are c1.<field> ... c99.<field>)")
        elif tail != "preset" and tail not in FIELD_NAMES:
            warnings.append(f"{_short(k)}: {_short(tail)} is not a ModelConfig field, ignored")
        else:
            custom.setdefault(head, {})[tail] = v
    customs: dict[str, ModelConfig] = {}
    for cid, fields_ in custom.items():
        base = _preset_of(q, f"{cid}.preset", f"{cid}.", warnings)
        fields_.pop("preset", None)
        before = len(warnings)
        cfg = _config_from(fields_, base, f"{cid}.", warnings)
        if (cfg is None or cfg == PRESETS[base]) and len(warnings) > before and f"{cid}.preset" not in q:
            # every field it gave was ignored: what is left is the default preset, which nobody asked to compare
            warnings.append(f"{cid}: none of its fields could be used, so it is not added to the comparison")
            continue
        customs[cid] = cfg if cfg is not None else PRESETS[base]
    return customs


def _compare(q: Mapping[str, str], customs: dict[str, ModelConfig], warnings: list[str]) -> list[ModelConfig]:
    """The compare list: presets and custom ids in its order, then the customs it forgot, at most MAX_COMPARE."""
    if "compare" in q:
        tokens = [t.strip() for t in q["compare"].split(",") if t.strip()] if q["compare"] else []
    else:
        tokens = list(DEFAULT_COMPARE)
    compare: list[ModelConfig] = []
    for t in tokens:
        found = preset_named(t)
        if t in customs:
            compare.append(customs.pop(t))
        elif found is not None:
            compare.append(PRESETS[found])
        else:
            warnings.append(f"compare: {_short(t)} is neither a preset ({', '.join(PRESETS)}) nor a custom "
                            f"config c1..c99 given in the link; ignored.{_did_you_mean(t)}")
    compare.extend(customs.values())  # custom configs the compare list forgot to name
    if len(compare) > MAX_COMPARE:
        warnings.append(f"compare: at most {MAX_COMPARE} configs, kept the first {MAX_COMPARE}")
        compare = compare[:MAX_COMPARE]
    return compare


def _read_controls(q: Mapping[str, str], warnings: list[str]) -> dict[str, Any]:
    """Every page control: the link's value, else its default; unknown keys warned about."""
    controls: dict[str, Any] = {k: c.default for k, c in CONTROLS.items()}
    for k, v in q.items():
        if k in CONTROLS:
            try:
                controls[k] = parse_control(k, v)
            except ValueError as e:
                warnings.append(f"{e}; using {_text(CONTROLS[k].default)}")
        elif k not in FIELD_NAMES and k not in ("preset", "compare") and "." not in k:
            warnings.append(f"{_short(k)}: unknown parameter, ignored")
    return controls
