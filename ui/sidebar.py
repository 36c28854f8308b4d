"""The shared sidebar: preset picker, every ModelConfig field, the comparison list, import/export, the link."""

from __future__ import annotations

import json
import re
from contextlib import AbstractContextManager
from typing import Any

import streamlit as st

from albert_core.config import (
    FAMILIES,
    FIELD_DEFAULTS,
    HIDDEN_ACTS,
    MAX_DIM,
    MAX_LAYERS,
    MAX_NAME_LEN,
    MAX_VOCAB,
    SHARING_MODES,
    ConfigError,
    ModelConfig,
    default_sharing,
)
from albert_core.estimate.paper_results import ADVICE
from albert_core.estimate.params import factorization_savings
from albert_core.families import family, family_fields, own_fields
from albert_core.formats.hf import hf_expressible, to_hf_config
from albert_core.formats.hub import HubError, config_from_hub
from albert_core.formats.upload import MAX_UPLOAD_BYTES, UPLOAD_LABEL, UPLOAD_MB, UPLOAD_NOTE, parse_upload
from albert_core.presets import PRESET_FAMILIES, PRESETS
from albert_core.share import config_diff

from . import state
from .text import md

# field -> (label, min, max, step, help); help follows the source text's key parameters. A family's own fields: its
# module's FIELDS (base.OwnField), drawn by _family_widgets
INT_FIELDS = {
    "vocab_size": ("vocab_size (V)", 1, MAX_VOCAB, 1000, "Rows of the token embedding."),
    "embedding_dim": ("embedding_dim (E)", 1, MAX_DIM, 16,
                      "Width of the embeddings before the projection to hidden_dim. ALBERT uses 128; "
                      "64-256 are reasonable. Must equal hidden_dim for family bert.\n\n" + ADVICE["embedding_dim"]),
    "hidden_dim": ("hidden_dim (H)", 1, MAX_DIM, 64, "Width of the representations flowing through the layers."),
    "num_layers": ("num_layers (L)", 1, MAX_LAYERS, 1,
                   "How many times a layer is applied. With sharing, more layers cost no weights, "
                   "only activation memory and compute."),
    "num_heads": ("num_heads (A)", 1, MAX_DIM, 1, "Attention heads. Must divide hidden_dim."),
    "intermediate_dim": ("intermediate_dim (I)", 1, MAX_DIM * 8, 256, "FFN inner width, typically 4 × hidden_dim."),
    "max_position": ("max_position (P)", 1, MAX_DIM, 128, "Longest sequence: rows of the position embedding."),
    "type_vocab_size": ("type_vocab_size", 0, MAX_DIM, 1,
                        "Segment (token type) embedding rows; 0 for families without one (distilbert, modernbert)."),
    "num_groups": ("num_groups", 1, MAX_LAYERS, 1,
                   "Layers are split evenly into this many groups, each owning its parameters "
                   "(must divide num_layers; ignored for sharing none)."),
    "inner_group_num": ("inner_group_num", 1, 1024, 1, "Distinct layers inside one group, all run at each step."),
}
FLOAT_FIELDS = {
    "dropout": ("dropout", "Hidden dropout probability, usually 0.0-0.1.\n\n" + ADVICE["dropout"]),
    "attention_dropout": ("attention_dropout", "Dropout on the attention probabilities."),
}
CHOICE_FIELDS = {
    "family": ("family", FAMILIES, "bert: V×H embedding. albert: factorized V×E + E×H. The others as Hugging "
               "Face builds them (roberta also for xlm-roberta and camembert); their own fields are under "
               "More fields."),
    "sharing": ("sharing", SHARING_MODES, "Which sublayers the layers of a group share."),
    "hidden_act": ("hidden_act", HIDDEN_ACTS, "FFN activation."),
}


MAIN_INT_FIELDS = ("vocab_size", "embedding_dim", "hidden_dim", "num_layers", "num_heads", "intermediate_dim",
                   "max_position")
MAIN_FIELDS = (*MAIN_INT_FIELDS, "dropout", "family", "sharing")
MORE_INT_FIELDS = ("num_groups", "inner_group_num", "type_vocab_size")
MORE_FIELDS = (*MORE_INT_FIELDS, "attention_dropout", "hidden_act", *family_fields())


def _section(label: str, name: str, *, default: bool = False, force: bool = False) -> tuple[AbstractContextManager[Any], bool]:
    """An expander whose content runs only while it is open (Streamlit's stateful expander): a closed section's
    widgets are neither run nor sent, so a first visit draws the page's chart without them (docs/benchmarks.md, "Speed
    in the browser"). Open by `default` until the user opens or closes it; always open when `force` (a rejected
    value inside must be seen). Returns the expander and whether to draw its content."""
    key = f"sec.{name}"
    opened = state.section_open(name, default) or force
    st.session_state[key] = opened
    return st.expander(label, key=key, on_change=_on_section, args=(name,)), opened


def _on_section(name: str) -> None:
    state.set_section_open(name, st.session_state[f"sec.{name}"])


def _seed(f: str) -> str:
    """The widget key of field f, holding the sidebar config's value if the widget was not drawn in the last run
    (a closed section forgets its fields' keys: `_forget`)."""
    key = state.field_key(f)
    if key not in st.session_state:
        st.session_state[key] = getattr(state.config(), f)
    return key


def _forget(names) -> None:
    """A closed section's field keys: removed, so that state.read_fields takes the valid config's values and the
    widgets start from them when the section opens again (Streamlit keeps a stale copy of a key set from code
    beside the state of the widget that was not drawn)."""
    for f in names:
        st.session_state.pop(state.field_key(f), None)


def _field_widgets() -> None:
    st.text_input("name", key=_seed("name"), max_chars=MAX_NAME_LEN, help="Shown in legends and tables.")
    for f in MAIN_INT_FIELDS:
        _int_widget(f)
    _float_widget("dropout")
    for f in ("family", "sharing"):
        label, options, help_ = CHOICE_FIELDS[f]
        st.selectbox(label, options, key=_seed(f), help=help_, on_change=_on_family if f == "family" else None)
    more, opened = _section("More fields", "more_fields", force=any(field_problems(f) for f in MORE_FIELDS))
    if opened:
        with more:
            for f in MORE_INT_FIELDS:
                _int_widget(f)
            _float_widget("attention_dropout")
            label, options, help_ = CHOICE_FIELDS["hidden_act"]
            st.selectbox(label, options, key=_seed("hidden_act"), help=help_)
            _family_widgets()
    else:
        _forget(MORE_FIELDS)


def _family_widgets() -> None:
    """The fields of the chosen family, and any other family's field that is not at its default (to reset it), as
    each family's module describes them (base.OwnField)."""
    ss = st.session_state
    fam = ss.get(state.field_key("family"), state.config().family)
    own = own_fields()
    for f, owners in family_fields().items():
        key = state.field_key(f)
        if fam not in owners and ss.get(key, getattr(state.config(), f)) == FIELD_DEFAULTS[f]:
            continue
        _seed(f)
        o, help_ = own[f], f"{' and '.join(owners)}: {own[f].help}"
        if o.lo is not None:  # no widget bounds, as _int_widget
            st.number_input(f, step=o.step, key=key, help=help_)
        elif o.choices:
            st.selectbox(f, o.choices, key=key, help=help_, format_func=lambda v: v or "(none)")
        else:
            st.checkbox(f, key=key, help=help_)
        _field_note(f)


# valid, but far beyond any trained BERT/ALBERT (512 positions, 30k-vocabulary): computed, with a note
FAR_OUTSIDE = {"max_position": (131_072, "far past any trained BERT or ALBERT (512 positions); computed anyway"),
               "vocab_size": (1_000_000, "far past trained vocabularies (30,000-250,000); computed anyway")}


def _int_widget(f: str) -> None:
    """A whole-number field without the widget's own bounds: an out-of-range value reaches ModelConfig, whose
    reason is shown under the field (the widget's bounds would refuse it silently in the browser)."""
    label, _lo, _hi, step, help_ = INT_FIELDS[f]
    st.number_input(label, step=step, key=_seed(f), help=help_)
    _field_note(f)


def _float_widget(f: str) -> None:
    """A probability field without the widget's own bounds, as _int_widget: 2 typed as dropout reaches ModelConfig
    ("dropout must be at least 0 and below 1"), where bounds showed only the browser's tooltip and kept the old
    value."""
    label, help_ = FLOAT_FIELDS[f]
    st.number_input(label, step=0.05, format="%.4g", key=_seed(f), help=help_)
    _field_note(f)


def field_problems(field: str) -> list[str]:
    """The sidebar config's problems that name `field` first (ConfigError's words)."""
    err = st.session_state.get(state.ERROR)
    if err is None:
        return []
    return [p for p in err.problems if re.match(rf"{re.escape(field)}\b", p)]


def _field_note(f: str) -> None:
    for p in field_problems(f):
        st.markdown(f":red[**Rejected:** {md(p)}]")
    far = FAR_OUTSIDE.get(f)
    v = st.session_state.get(state.field_key(f))
    if far and not field_problems(f) and isinstance(v, int) and v > far[0]:
        st.caption(f":orange[{v:,}: {far[1]}.]")
    if f == "embedding_dim" and not field_problems(f):
        _factorization_note(state.config())


def _factorization_note(cfg: ModelConfig) -> None:
    """Where the factorized embedding costs parameters instead of saving them (E at or above H): said under the
    field, since every number then moves the other way from ALBERT's cut."""
    saved = factorization_savings(cfg)  # V×H − (V×E + E×H), ALBERT Sec. 3.1
    if saved < 0:
        st.caption(f":orange[E {cfg.embedding_dim:,} ≥ H {cfg.hidden_dim:,}: the factorized embedding stores "
                   f"{-saved:,} parameters more than an H-wide table would; ALBERT's cut saves only with E below H.]")


def family_resets(values, fam: str) -> dict[str, object]:
    """The fields of `values` (field -> value) that family `fam` does not allow, or whose default it changes,
    and what they become: another family's fields back to their defaults (RoBERTa's position_offset 2 -> 0),
    the family's own sharing (albert: all, the others none), E = H for a family without its own embedding
    width, a segment table where the family has one (2 rows) and none where it has not."""
    fam_mod = family(fam)
    out: dict[str, object] = {}
    for f, owners in family_fields().items():
        if fam not in owners and values[f] != FIELD_DEFAULTS[f]:
            out[f] = FIELD_DEFAULTS[f]
    if values["sharing"] != default_sharing(fam):
        out["sharing"] = default_sharing(fam)
    if not fam_mod.OWN_EMBEDDING_WIDTH and values["embedding_dim"] != values["hidden_dim"]:
        out["embedding_dim"] = values["hidden_dim"]
    if fam_mod.SEGMENT_TABLE and values["type_vocab_size"] < 1:
        out["type_vocab_size"] = 2
    elif fam_mod.SEGMENT_TABLE is False and values["type_vocab_size"] != 0:
        out["type_vocab_size"] = 0
    return out


def _on_family() -> None:
    """Family chosen in the sidebar: reset what it does not allow (family_resets), and say what changed."""
    ss = st.session_state
    fam = ss[state.field_key("family")]
    values = {f: ss.get(state.field_key(f), getattr(state.config(), f)) for f in FIELD_DEFAULTS}
    resets = family_resets(values, fam)
    for f, v in resets.items():
        ss[state.field_key(f)] = v
    if resets:
        state.notice("info", f"Family {md(fam)}: " + ", ".join(f"{f} {values[f]!r} → {v!r}" for f, v in resets.items())
                     + " (what this family allows or uses by default).")


def _on_upload() -> None:
    """Callback of the config.json uploader: albert_core.formats.upload parses (json.loads only) and explains."""
    up = st.session_state.get("upload")
    if up is None:
        return
    result = parse_upload(up.name, up.getvalue())
    if isinstance(result, str):
        state.notice("error", md(result))
        return
    base = state.load_config(result)
    state.notice("success", f"Loaded {md(up.name)} as '{md(result.name)}'" + _nearest(result, base))


def _refused(err: ConfigError, cfg: ModelConfig) -> str:
    return (f"This config cannot be built: {md('; '.join(err.problems))}. Showing the last valid config: "
            f"'{md(cfg.name)}' ({_summary(cfg)}).")


# Streamlit starts the sidebar closed on a screen narrower than 768 px (its breakpoint md): there a refused config
# is said at the top of the page too, with where to change it; on a wider screen the sidebar beside the page says it
NARROW_REFUSAL_CSS = "<style>@media (min-width: 768px) { .st-key-config_refused { display: none; } }</style>"


def say_refused_on_narrow_screens() -> None:
    """Above the page: the sidebar's refusal of a config the fields describe (on a phone the sidebar is closed)."""
    err = st.session_state.get(state.ERROR)
    if err is None:
        return
    with st.container(key="config_refused"):
        st.html(NARROW_REFUSAL_CSS)
        st.error(_refused(err, state.config()) + " Change the fields in the sidebar (» at the top left).")


def render(where=None) -> None:
    """Draw the sidebar (into `where`, a sidebar container, if given) and settle the sidebar config (errors
    explained, last valid config kept)."""
    sb = st.sidebar if where is None else where
    with sb:
        st.header("Model")
        st.selectbox("Preset", [n for names in PRESET_FAMILIES.values() for n in names], key="preset",
                     on_change=state.on_preset_change, format_func=_preset_label,
                     help="Start from a published configuration, grouped by family; every field below stays "
                          "editable.")
        cfg = state.read_fields()  # before the fields are drawn: each shows its own problem under it
        err = st.session_state.get(state.ERROR)
        if err is not None:
            st.error(_refused(err, cfg))
        edited = cfg != PRESETS.get(state.preset())  # a link with changed fields opens on them
        fields, opened = _section("Model fields", "model_fields", default=edited, force=err is not None)
        if opened:
            with fields:
                _field_widgets()
        else:
            _forget(("name", *MAIN_FIELDS, *MORE_FIELDS))
            st.caption(f"{md(cfg.name)}: {_summary(cfg)}. Open **Model fields** to change any of them.")

        st.header("Compare")
        st.multiselect("Configs compared side by side", _compare_options(), key="compare",
                       on_change=state.on_compare_change,
                       help="Presets, and custom configs added with the button below.")
        st.button("Add current config to comparison", on_click=state.add_current_to_compare,
                  key="add_compare")

        io, opened = _section("Import / export", "import_export")
        if opened:
            with io:
                _import_export(cfg)
    for level, text in state.pop_notices():
        getattr(sb, level)(text)


def _import_export(cfg) -> None:
    # a file up to UPLOAD_MB reaches parse_upload, whose message says what it is and what to upload; the browser
    # refuses a bigger one with an icon whose reason shows only on hover: the caption says so in words
    st.file_uploader(f"Upload a Hugging Face config.json ({UPLOAD_LABEL})", type=["json"], key="upload",
                     on_change=_on_upload, max_upload_size=UPLOAD_MB,
                     help=f"At most {MAX_UPLOAD_BYTES // 1024} KiB; model_type one of {', '.join(FAMILIES)} (also "
                          "xlm-roberta, camembert).")
    st.caption(UPLOAD_NOTE)
    st.text_input("Import from the Hugging Face Hub", key="hub_id", on_change=_on_hub_import,
                  placeholder="FacebookAI/xlm-roberta-large",
                  help="A model id; only its config.json is fetched (never weights). Press Enter.")
    st.download_button("Download config.json", json.dumps(to_hf_config(cfg), indent=2), file_name="config.json",
                       mime="application/json", on_click="ignore", key="download_config")
    if not hf_expressible(cfg):
        model = {"bert": "BertModel", "albert": "AlbertModel"}.get(cfg.family, "model")
        st.caption(f"Hugging Face's {model} cannot express sharing '{cfg.sharing}' here: the file describes the "
                   "unshared layout and keeps the real sharing under 'albert_explorer'.")


def _preset_label(name: str) -> str:
    return f"{PRESETS[name].family} · {name}" if name in PRESETS else name


def _on_hub_import() -> None:
    """Callback of the Hub id field: fetch only config.json (albert_core.formats.hub), parse it, explain a failure."""
    mid = st.session_state.get("hub_id") or ""
    if not mid.strip():
        return
    try:
        with st.spinner(f"Fetching {md(mid.strip())}'s config.json from the Hugging Face Hub ..."):
            cfg = config_from_hub(mid)
    except HubError as e:
        state.notice("error", md(f"Not imported: {e}."))
        return
    except ConfigError as e:
        state.notice("error", md(f"{mid.strip()}'s config.json cannot be used: " + "; ".join(e.problems) + "."))
        return
    base = state.load_config(cfg)
    state.notice("success", f"Imported '{md(cfg.name)}' ({md(cfg.family)}) from the Hugging Face Hub"
                 + _nearest(cfg, base))


def _nearest(cfg, base: str) -> str:
    """The end of an import's notice: which preset the Preset box now shows, and why."""
    if PRESETS[base] == cfg:
        return f": the preset {md(base)}."
    n = len(config_diff(cfg, PRESETS[base]))
    differ = "field differs" if n == 1 else "fields differ"
    return f". Preset shows {md(base)}, the nearest preset ({n:,} {differ}); choosing a preset replaces the imported config."


def _summary(cfg) -> str:
    return (f"{cfg.family}, V {cfg.vocab_size:,}, E {cfg.embedding_dim:,}, H {cfg.hidden_dim:,}, L {cfg.num_layers:,}, "
            f"A {cfg.num_heads:,}, I {cfg.intermediate_dim:,}, P {cfg.max_position:,}")


def _compare_options() -> list[str]:
    ss = st.session_state
    opts = list(PRESETS) + [n for n in ss.get(state.CUSTOM, {}) if n not in PRESETS]
    # keep widget state consistent with the store (names removed from the options would raise)
    ss["compare"] = [n for n in ss.get(state.COMPARE, []) if n in opts]
    return opts
