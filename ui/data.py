"""Tidy tables for the pages, straight from albert_core, cached where a sweep is reused.

Only reshaping here (one row per config and part); every number is albert_core's.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from albert_core.config import ModelConfig
from albert_core.estimate.activations import activation_memory
from albert_core.estimate.gpus import GPUS
from albert_core.estimate.params import count_parameters
from albert_core.estimate.sweeps import scaled
from albert_core.step.fit import fit_table, max_position_that_fits
from albert_core.step.training import PEAK_MAX_LAYERS, training_memory
from albert_core.units import format_bytes
from albert_core.workload import Workload

COMPONENTS = ("embedding", "layers", "pooler")


@st.cache_data(show_spinner=False, max_entries=256)
def params_table(cfgs: tuple[ModelConfig, ...]) -> pd.DataFrame:
    """One row per config: the source text's analyze_bert_parameters fields."""
    rows = []
    for cfg in cfgs:
        c = count_parameters(cfg)
        # the total first: the number people look for stays on screen in a wide grid (and a phone)
        rows.append(dict(config=cfg.name, total=c.total, family=cfg.family, sharing=cfg.sharing,
                         embedding=c.embedding, per_layer=c.per_layer, all_layers=c.all_layers, pooler=c.pooler,
                         embedding_pct=c.embedding_pct, layers_pct=c.layers_pct, pooler_pct=c.pooler_pct))
    return pd.DataFrame(rows)


@st.cache_data(show_spinner=False, max_entries=4)
def decoder_table(reference: tuple[ModelConfig, ...]) -> pd.DataFrame:
    """The decoder presets (albert_core.decoders), largest embedding share first, after the encoders in reference: the
    parameters by component, the token table's share, the output projection, the KV cache a token."""
    from albert_core.decoders.decoder_params import count_decoder
    from albert_core.decoders.decoder_presets import DECODER_PRESETS
    from albert_core.decoders.decoder_serving import has_cache, kv_cache

    rows = []
    for cfg in reference:
        e = count_parameters(cfg)
        rows.append(dict(config=cfg.name, total=e.total, model=cfg.family, embedding=e.embedding,
                         embedding_pct=e.embedding_pct, layers=e.all_layers, layers_pct=e.layers_pct,
                         other=e.pooler, other_is="pooler", other_pct=e.pooler_pct, output_projection="-",
                         kv_cache_per_token=None, hub_id=""))
    counts = {n: count_decoder(p.cfg) for n, p in DECODER_PRESETS.items()}
    for name in sorted(counts, key=lambda n: (-counts[n].embedding_pct, n)):
        c, p = counts[name], DECODER_PRESETS[name]
        kv = kv_cache(p.cfg, 1, 1).per_token_all_layers if has_cache(p.cfg) else None
        rows.append(dict(config=name, total=c.total, model=p.cfg.family, embedding=c.embedding,
                         embedding_pct=c.embedding_pct, layers=c.layers, layers_pct=100 * c.layers / c.total,
                         other=c.final_norm, other_is="final_norm", other_pct=100 * c.final_norm / c.total,
                         output_projection="tied" if p.cfg.tied else "untied", kv_cache_per_token=kv,
                         hub_id=p.model_id))
    return pd.DataFrame(rows)


# Memory's decoders tab: the vocabularies from 49k to 262k, a sliding window (Gemma-3), one context of 8k to 131k each
MEMORY_DECODERS = ("SmolLM2-135M", "Qwen2.5-0.5B", "Llama-3.2-1B", "gemma-3-270m", "gemma-3-1b-pt")


@st.cache_data(show_spinner=False, max_entries=16)
def decoder_context(batch: int) -> pd.DataFrame:
    """Memory's decoders tab: for each of MEMORY_DECODERS at batch × seq_len, from 128 tokens to its max_position,
    what the causal LM's loss saves (decoders.decoder_loss.loss_saved: the float32 log-softmax of B × S × V) and
    its KV cache while generating with that many tokens of context (decoder_serving.kv_cache of a prompt one shorter
    and one token generated, bfloat16: Gemma-3's local layers then hold their window). One row per (config, seq_len,
    what)."""
    from albert_core.decoders.decoder_loss import loss_saved
    from albert_core.decoders.decoder_presets import DECODER_PRESETS
    from albert_core.decoders.decoder_serving import kv_cache

    rows = []
    for name in MEMORY_DECODERS:
        c = DECODER_PRESETS[name].cfg
        for n in seq_points(c.max_position):
            rows.append(dict(config=name, seq_len=n, what="loss", bytes=loss_saved(c, batch, n), vocab_size=c.vocab_size))
            rows.append(dict(config=name, seq_len=n, what="kv_cache", bytes=kv_cache(c, batch, n - 1, 1).total,
                             vocab_size=c.vocab_size))
    return pd.DataFrame(rows).astype({"bytes": object})


@st.cache_data(show_spinner=False, max_entries=4)
def decoder_serving() -> pd.DataFrame:
    """Memory's decoders tab: every decoder preset's weights at rest in bfloat16, int8 and int4 as torchao stores them
    (estimate.serving.weight_bytes, the rest in bfloat16), with its causal LM's output projection where it trains as
    one; int4 in groups of the largest of 128, 64, 32 that divides every quantized width; the ÷ rule's int8 beside, and
    where the bytes part from it (serving.decoder_notes)."""
    from albert_core.choices import CAUSAL_LM
    from albert_core.decoders.decoder_presets import DECODER_PRESETS, trains_as_causal_lm
    from albert_core.estimate.serving import approximate_bytes, decoder_notes, int4_groups, weight_bytes

    rows = []
    for name, p in DECODER_PRESETS.items():
        head = CAUSAL_LM if trains_as_causal_lm(p.cfg) else "none"
        b16, b8 = (weight_bytes(p.cfg, f, dtype="bfloat16", head=head).weights for f in ("bfloat16", "int8"))
        g = max((s for s in int4_groups(p.cfg, head) if s <= 128), default=None)  # none: int4 left empty
        b4 = None if g is None else weight_bytes(p.cfg, "int4", dtype="bfloat16", group_size=g, head=head).weights
        rule = approximate_bytes(p.cfg, "int8", head=head)
        rows.append(dict(config=name, bfloat16=b16, int8=b8, int8_rule=rule, int8_vs_rule=b8 / rule, int4=b4,
                         int4_group=g, head=head, tied=p.cfg.tied,  # the answers first: a phone shows them
                         why="; ".join(decoder_notes(p.cfg, "int8", head, False, "bfloat16"))))
    return pd.DataFrame(rows).astype({c: object for c in ("bfloat16", "int8", "int4", "int8_rule")})


DECODER_FLOP_PARTS = ("qkv", "attention_scores", "attention_values", "attention_output", "ffn", "lm_head")


@st.cache_data(show_spinner=False, max_entries=16)
def decoder_flops(seq_len: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Compute's decoders tab: every decoder preset's forward of one sequence of seq_len tokens (at most its
    max_position), batch 1, with its LM head where it trains as a causal LM (decoder_presets.trains_as_causal_lm):
    (one row per preset, one row per (preset, component)), decoders.decoder_flops' exact counts."""
    from albert_core.decoders.decoder_flops import decoder_forward_flops, decoder_training_flops
    from albert_core.decoders.decoder_params import count_decoder
    from albert_core.decoders.decoder_presets import DECODER_PRESETS, trains_as_causal_lm

    rows, parts = [], []
    for name, p in DECODER_PRESETS.items():
        c, lm = p.cfg, trains_as_causal_lm(p.cfg)
        n = min(seq_len, c.max_position)
        f = decoder_forward_flops(c, n, 1, head=lm)
        rows.append(dict(config=name, seq_len=n, params=count_decoder(c, heads=lm).total, forward_flops=f.total,
                         training_flops=decoder_training_flops(c, n, 1, head=lm), lm_head_pct=100 * f.lm_head / f.total,
                         model="causal LM" if lm else "base model (an embedding model)"))
        parts += [dict(config=name, component=k, flops=getattr(f, k), pct=100 * getattr(f, k) / f.total)
                  for k in DECODER_FLOP_PARTS]
    table = pd.DataFrame(rows).astype({"params": object, "forward_flops": object, "training_flops": object})
    return table, pd.DataFrame(parts).astype({"flops": object})


def decoder_long(table: pd.DataFrame) -> pd.DataFrame:
    """decoder_table reshaped to one row per (config, component) for stacked bars."""
    rows = []
    for _, r in table.iterrows():
        for comp, col in (("embedding", "embedding"), ("layers", "layers"), (r["other_is"], "other")):
            rows.append(dict(config=r["config"], component=comp, params=int(r[col]), pct=float(r[f"{col}_pct"])))
    return pd.DataFrame(rows)


def params_long(table: pd.DataFrame) -> pd.DataFrame:
    """params_table reshaped to one row per (config, component) for stacked bars."""
    rows = []
    for _, r in table.iterrows():
        for comp, col in zip(COMPONENTS, ("embedding", "all_layers", "pooler"), strict=True):
            rows.append(dict(config=r["config"], component=comp, params=int(r[col]), pct=float(r[f"{comp}_pct"])))
    return pd.DataFrame(rows)


# the module first (pinned) and its count beside it: the table has 40% of the page, where the columns after the fourth
# were off-screen (a new user saw component, pct, sublayer and half of the module's name)
BREAKDOWN_COLUMNS = ("module", "pct", "params", "copies", "shape", "per_copy", "sublayer", "component")


@st.cache_data(show_spinner=False, max_entries=64)
def breakdown(cfg: ModelConfig) -> pd.DataFrame:
    bd = count_parameters(cfg).breakdown()
    return bd[list(BREAKDOWN_COLUMNS) + [c for c in bd.columns if c not in BREAKDOWN_COLUMNS]]


SWEEP_VALUES = {
    "vocab_size": [1000, 2000, 5000, 10000, 20000, 30000, 50000, 100000, 250000, 500000, 1000000],
    "hidden_dim": [128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192],
    "num_layers": [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96],
}


def sweep_values(cfg: ModelConfig, field: str) -> list[int]:
    """Values of the swept field (the config's own value included) that give a valid config."""
    out = []
    for v in sorted(set(SWEEP_VALUES[field]) | {getattr(cfg, field)}):
        try:
            scaled(cfg, field, v)
        except ValueError:
            continue
        out.append(v)
    return out


@st.cache_data(show_spinner=False, max_entries=128)
def share_sweep(cfgs: tuple[ModelConfig, ...], field: str) -> pd.DataFrame:
    frames = []
    for cfg in cfgs:
        rows = []
        for v in sweep_values(cfg, field):
            c = count_parameters(scaled(cfg, field, v))
            rows.append(dict(config=cfg.name, value=v, embedding=c.embedding, all_layers=c.all_layers,
                             total=c.total, embedding_pct=c.embedding_pct, layers_pct=c.layers_pct,
                             own=v == getattr(cfg, field)))
        frames.append(pd.DataFrame(rows))
    return pd.concat(frames, ignore_index=True)


EMBEDDING_DIMS = [16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024]


@st.cache_data(show_spinner=False, max_entries=128)
def factorization_sweep(cfgs: tuple[ModelConfig, ...]) -> pd.DataFrame:
    """Each config made ALBERT-style at embedding_dim E in EMBEDDING_DIMS (E ≤ H): albert_core.estimate.sweeps."""
    from albert_core.estimate.sweeps import embedding_sweep

    frames = []
    for cfg in cfgs:
        dims = sorted({e for e in EMBEDDING_DIMS if e <= cfg.hidden_dim} | {cfg.embedding_dim})
        df = embedding_sweep(cfg, dims)
        df = df[df["valid"]]
        frames.append(pd.DataFrame({
            "config": cfg.name, "embedding_dim": [int(v) for v in df["embedding_dim"]],
            "own": [int(v) == cfg.embedding_dim for v in df["embedding_dim"]],
            "embedding": [int(v) for v in df["embedding"]],
            "saved": [int(v) for v in df["factorization_savings"]],
            "unfactorized": [int(v) for v in df["unfactorized_embedding"]],
        }))
    return pd.concat(frames, ignore_index=True)


@st.cache_data(show_spinner=False, max_entries=128)
def sharing_table(cfgs: tuple[ModelConfig, ...]) -> pd.DataFrame:
    """Each config under the four sharing modes: albert_core.estimate.sweeps.sharing_sweep."""
    from albert_core.estimate.sweeps import sharing_sweep

    frames = []
    for cfg in cfgs:
        df = sharing_sweep(cfg)
        df = df[df["valid"]]
        frames.append(pd.DataFrame({
            "config": cfg.name, "sharing": list(df["sharing"]),
            "embedding": [int(v) for v in df["embedding"]], "all_layers": [int(v) for v in df["all_layers"]],
            "total": [int(v) for v in df["total"]], "saved_vs_none": [int(v) for v in df["saved_vs_none"]],
        }))
    return pd.concat(frames, ignore_index=True)

# the Overview's training step: batch 1, float32, eager attention (seq_len: min(512, max_position) per config)
OVERVIEW_RUN = Workload(batch_size=1, seq_len=512, precision="float32", attention="eager")


@st.cache_data(show_spinner=False, max_entries=16)
def overview_table(cfgs: tuple[ModelConfig, ...]) -> pd.DataFrame:
    """Parameters, shares, and memory at seq_len = min(512, max_position) (batch 1, float32, eager, training)."""
    t = params_table(cfgs)[["config", "family", "total", "embedding", "embedding_pct", "all_layers", "layers_pct"]]
    t = t.copy()
    runs = [OVERVIEW_RUN.replace(seq_len=min(512, c.max_position)) for c in cfgs]
    steps = [_or_none(training_memory, c, w, part=None) for c, w in zip(cfgs, runs, strict=True)]  # one step per config
    t["weights_fp32"] = [None if m is None else m.weights for m in steps]
    t["activations_512"] = [_or_none(activation_memory, c, w) for c, w in zip(cfgs, runs, strict=True)]
    t["training_512"] = [None if m is None else m.planned for m in steps]  # the step's peak (else the sum)
    t["training_512_sum"] = [None if m is None else m.total for m in steps]  # the sum of the parts
    t["training_512_is_peak"] = [None if m is None else m.peak_modelled for m in steps]  # else the sum (PEAK_MAX_LAYERS)
    t["training_512_peak_is"] = [None if m is None else m.peak_is for m in steps]  # exact, or a lower bound and why
    return t


def activations_modelled(cfgs: tuple[ModelConfig, ...], training: bool) -> tuple[ModelConfig, ...]:
    """The configs whose activation memory albert_core models in this mode (not every family's inference peak)."""
    if training:
        return cfgs
    return tuple(c for c in cfgs if _or_none(activation_memory, c, OVERVIEW_RUN.replace(seq_len=1),
                                             training=False) is not None)


def _or_none(f, cfg, *args, part: str | None = "total", **kw):
    """f(cfg, *args, **kw).<part> (part None: the result itself), or None where albert_core does not model that
    family's memory (ConfigError says so)."""
    from albert_core.config import ConfigError

    try:
        out = f(cfg, *args, **kw)
        return out if part is None else getattr(out, part)
    except ConfigError:
        return None


@st.cache_data(show_spinner=False, max_entries=64)
def compute_table(cfgs: tuple[ModelConfig, ...], seq_len: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per config: stored parameters, forward and training FLOPs of one sequence of seq_len tokens (at most the
    config's max_position, batch 1); and the breakdowns."""
    from albert_core.estimate.flops import forward_flops, training_flops

    rows, parts = [], []
    for cfg in cfgs:
        s = min(seq_len, cfg.max_position)
        f = forward_flops(cfg, s, 1)
        rows.append(dict(config=cfg.name, seq_len=s, params=count_parameters(cfg).total, forward_flops=f.total,
                         training_flops=training_flops(cfg, s, 1), layer_applications=cfg.layer_applications))
        b = f.breakdown()
        b.insert(0, "config", cfg.name)
        parts.append(b)
    return pd.DataFrame(rows), pd.concat(parts, ignore_index=True)


def sweep_lengths(cfgs, seq_max: int) -> tuple[int, ...]:
    """Sequence lengths of the memory sweeps: seq_points up to seq_max or the longest shown max_position,
    whichever is larger, plus every shown config's own max_position (so each one is a point of its curve)."""
    end = max([seq_max] + [c.max_position for c in cfgs])
    return tuple(sorted(set(seq_points(end)) | {c.max_position for c in cfgs}))


@st.cache_data(show_spinner=False, max_entries=64)
def at_max_position(cfgs: tuple[ModelConfig, ...], w: Workload, training: bool) -> pd.DataFrame:
    """Activation memory of each config's forward under w at its own max_position: total and the seq_len² attention
    part (w: albert_core.share.forward_of)."""
    rows = []
    for cfg in cfgs:
        a = activation_memory(cfg, w.replace(seq_len=cfg.max_position), training=training)
        rows.append(dict(config=cfg.name, max_position=cfg.max_position, activations=a.total,
                         attention_seq_len2=a.quadratic, attention_pct=100 * a.quadratic / a.total if a.total else 0.0))
    return pd.DataFrame(rows)


@st.cache_data(show_spinner=False, max_entries=16)
def comparison(cfgs: tuple[ModelConfig, ...], settings) -> pd.DataFrame:
    """albert_core.step.compare.compare_table, cached."""
    from albert_core.step.compare import compare_table

    return compare_table(cfgs, settings)


def seq_points(seq_max: int, lo: int = 128) -> list[int]:
    """Sequence lengths for the memory sweeps: 128, 192, 256, 384, 512, ... up to seq_max (included)."""
    out, s = [], lo
    while s < seq_max:
        out.append(s)
        if s * 3 // 2 < seq_max:
            out.append(s * 3 // 2)
        s *= 2
    return out + [seq_max]


@st.cache_data(show_spinner=False, max_entries=64)
def activation_table(cfgs: tuple[ModelConfig, ...], seq_lens: tuple[int, ...], w: Workload,
                     training: bool) -> pd.DataFrame:
    """Activation memory of each config's forward under w at max_position = seq_len = S: rows (config, seq_len,
    part, bytes)."""
    rows = []
    for cfg in cfgs:
        for s in seq_lens:
            a = activation_memory(cfg.replace(max_position=s), w.replace(seq_len=s), training=training)
            rows += [dict(config=cfg.name, seq_len=s, part="quadratic", bytes=a.quadratic),
                     dict(config=cfg.name, seq_len=s, part="linear", bytes=a.linear)]
    return pd.DataFrame(rows)


@st.cache_data(show_spinner=False, max_entries=64)
def variant_table(cfg: ModelConfig, seq_lens: tuple[int, ...], w: Workload) -> pd.DataFrame:
    """Training activation memory of one config under w's batch and dtype: eager / sdpa, with and without
    checkpointing (w's own attention and checkpointing are the ones varied)."""
    rows = []
    for attention in ("eager", "sdpa"):
        for ckpt in (False, True):
            label = attention + (", checkpointing" if ckpt else "")  # the dtype: in the figure's caption
            for s in seq_lens:
                a = activation_memory(cfg.replace(max_position=s),
                                      w.replace(seq_len=s, attention=attention, checkpointing=ckpt))
                rows.append(dict(variant=label, seq_len=s, bytes=a.total))
    return pd.DataFrame(rows)


TRAINING_PARTS = ("weights", "master_weights", "gradients", "optimizer", "activations")
def _for(cfg: ModelConfig, w: Workload) -> Workload:
    from .finetune import workload_for

    return workload_for(cfg, w)


@st.cache_data(show_spinner=False, max_entries=64)
def training_results(cfgs: tuple[ModelConfig, ...], w: Workload) -> dict:
    """config name -> training_memory (parts and the step's peak) of w, seq_len clipped to each max_position."""
    return {cfg.name: training_memory(cfg, _for(cfg, w)) for cfg in cfgs}


def training_table(cfgs: tuple[ModelConfig, ...], w: Workload) -> pd.DataFrame:
    """training_memory of each config: one row per (config, part), then its total (sum of parts) and its peak."""
    rows = []
    for name, m in training_results(cfgs, w).items():
        rows += [dict(config=name, seq_len=m.seq_len, part=p, bytes=getattr(m, p)) for p in TRAINING_PARTS]
        rows.append(dict(config=name, seq_len=m.seq_len, part="total", bytes=m.total))
        if m.peak_modelled:
            rows.append(dict(config=name, seq_len=m.seq_len, part="peak", bytes=m.peak))
    return pd.DataFrame(rows)


def peak_table(cfgs: tuple[ModelConfig, ...], w: Workload) -> pd.DataFrame:
    """Per config: the step's peak beside the sum of parts, where it occurs, and what is alive then (bytes)."""
    rows = []
    for name, m in training_results(cfgs, w).items():
        if not m.peak_modelled:
            rows.append({"config": name, "peak": None, "sum_of_parts": m.total, "peak_vs_sum_pct": None,
                         "phase": f"not modelled beyond {PEAK_MAX_LAYERS} layers", "moment": "", "seq_len": m.seq_len})
            continue
        rows.append({"config": name, "peak": m.peak, "sum_of_parts": m.total,
                     "peak_vs_sum_pct": 100 * (m.peak - m.total) / m.total if m.total else 0.0,
                     "phase": m.peak_phase, "moment": m.peak_moment, "peak_is": m.peak_is, "seq_len": m.seq_len,
                     **{f"at peak: {k}": v for k, v in m.at_peak.items()}})
    return pd.DataFrame(rows)


@st.cache_data(show_spinner=False, max_entries=64)
def trainable_table(cfgs: tuple[ModelConfig, ...], w: Workload) -> pd.DataFrame:
    """Per config: trainable and frozen parameters of w's fine-tuning, exactly as peft counts them."""
    from .finetune import trainable_of

    rows = []
    for cfg in cfgs:
        t = trainable_of(cfg, w)
        rows.append({"config": cfg.name, "trainable_pct": t.trainable_pct, "trainable": t.trainable, "frozen": t.frozen,
                     "total": t.total, "mode": _for(cfg, w).mode, "head": t.head, "lora_adapter": t.adapter,
                     "adapted_modules": len(t.adapted)})
    return pd.DataFrame(rows).astype({k: object for k in ("trainable", "frozen", "total", "lora_adapter")})


@st.cache_data(show_spinner=False, max_entries=64)
def training_sweep(cfgs: tuple[ModelConfig, ...], seq_lens: tuple[int, ...], w: Workload) -> pd.DataFrame:
    """The training step's peak per GPU of w at max_position = seq_len = S (bytes), and the sum of parts beside."""
    rows = []
    for cfg in cfgs:
        for s in seq_lens:
            m = training_memory(cfg.replace(max_position=s), _for(cfg, w).replace(seq_len=s))
            rows.append(dict(config=cfg.name, seq_len=s, bytes=m.planned, sum_of_parts=m.total))
    return pd.DataFrame(rows)


@st.cache_data(show_spinner=False, max_entries=64)
def stop_fitting(cfgs: tuple[ModelConfig, ...], gpus: tuple[str, ...], w: Workload) -> pd.DataFrame:
    """Per config and GPU: the longest max_position whose training step's peak (w) still fits."""
    rows = [dict(config=cfg.name, longest_max_position=max_position_that_fits(cfg, GPUS[g], _for(cfg, w)), gpu=g,
                 gpu_bytes=GPUS[g])  # the answer beside the config: on a phone the last columns are off-screen
            for cfg in cfgs for g in gpus]
    return pd.DataFrame(rows)


@st.cache_data(show_spinner=False, max_entries=64)
def fit_plan(cfgs: tuple[ModelConfig, ...], gpu: str, w: Workload) -> pd.DataFrame:
    """albert_core.step.fit.fit_table of w for the chosen GPU, plus the longest max_position that fits (table
    grown)."""
    frames = [fit_table([c], _for(c, w), gpus={gpu: GPUS[gpu]}) for c in cfgs]
    df = pd.concat(frames, ignore_index=True)
    df["longest_max_position"] = [max_position_that_fits(c, GPUS[gpu], _for(c, w)) for c in cfgs]
    return df.astype({"longest_max_position": object})


@st.cache_data(show_spinner=False, max_entries=64)
def serving_table(cfg: ModelConfig, group_size: int, quantize_embeddings: bool, head: str, num_labels: int,
                  dtype: str = "bfloat16") -> pd.DataFrame:
    """albert_core.estimate.serving.format_table: weights at rest per format against the bytes / 2 / 4 / 8 rule."""
    from albert_core.estimate.serving import format_table

    return format_table(cfg, dtype=dtype, group_size=group_size, quantize_embeddings=quantize_embeddings, head=head,
                        num_labels=num_labels)


def serving_inversions(table: pd.DataFrame) -> list[str]:
    """Formats of fewer bits that hold more bytes than one of more bits (torchao's unpacked int4 against int8): one
    sentence each, with the layout that explains it, shown whatever format is picked."""
    from albert_core.estimate.serving import NOMINAL_BITS

    rows = [r for _, r in table.iterrows() if not r["error"]]
    out = []
    for r in rows:
        above = [o for o in rows if NOMINAL_BITS.get(o["format"], 0) > NOMINAL_BITS.get(r["format"], 0)
                 and int(o["weights"]) < int(r["weights"])]
        if above:
            o = max(above, key=lambda o: int(o["weights"]))
            out.append(f"{r['format']} holds more than {o['format']} here ({format_bytes(int(r['weights']))} against "
                       f"{format_bytes(int(o['weights']))}): {r['layout']}.")
    return out


PARTIAL_SHARING = ("shared attention", "shared FFN")


@st.cache_data(show_spinner=False, max_entries=64)
def albert_cuts(cfg: ModelConfig, embedding_dim: int) -> pd.DataFrame:
    """ALBERT's two cuts applied to cfg (albert_core.estimate.params.albert_cuts), one row per variant; a partial sharing
    (attention or FFN only) that stores more layer weights than cfg does now is left out: on a config that
    already shares more, it would undo a cut, not make one (cuts_left_out names them)."""
    from albert_core.estimate.params import albert_cuts as cuts

    df = pd.DataFrame(cuts(cfg, embedding_dim))
    now = int(df["layers"].iloc[0])
    undo = df["variant"].isin(PARTIAL_SHARING) & (df["layers"] > now)
    return df[~undo].reset_index(drop=True)


@st.cache_data(show_spinner=False, max_entries=64)
def decoder_cuts(name: str, embedding_dim: int) -> pd.DataFrame:
    """ALBERT's two cuts applied to the decoder preset `name` (decoders.decoder_params.decoder_cuts), one row per
    variant. A decoder shares nothing, so no partial sharing is left out."""
    from albert_core.decoders.decoder_params import decoder_cuts as cuts
    from albert_core.decoders.decoder_presets import DECODER_PRESETS

    return pd.DataFrame(cuts(DECODER_PRESETS[name].cfg, embedding_dim)).astype(
        {c: object for c in ("embedding", "layers", "final_norm", "total", "saved")})


@st.cache_data(show_spinner=False, max_entries=64)
def decoder_cuts_all(embedding_dim: int) -> pd.DataFrame:
    """Every decoder preset under ALBERT's cuts at E = embedding_dim (decoder_cuts): what it stores now, its token
    table's share, and the total and change of the factorized, the fully shared and the both-cut model; the largest
    saving of the factorization first."""
    from albert_core.decoders.decoder_params import count_decoder
    from albert_core.decoders.decoder_params import decoder_cuts as cuts
    from albert_core.decoders.decoder_presets import DECODER_PRESETS

    rows = []
    for name, p in DECODER_PRESETS.items():
        _, fact, _, _, shared, both = cuts(p.cfg, embedding_dim)  # now, factorized, attention, FFN, all, both
        now = count_decoder(p.cfg)
        rows.append(dict(config=name, total=now.total, embedding_pct=now.embedding_pct, hidden_dim=p.cfg.hidden_dim,
                         vocab_size=p.cfg.vocab_size, num_layers=p.cfg.num_layers, tied=p.cfg.tied,
                         factorized=fact["total"], factorized_saved_pct=fact["saved_pct"],
                         shared_all=shared["total"], shared_all_saved_pct=shared["saved_pct"],
                         both=both["total"], both_saved_pct=both["saved_pct"]))
    df = pd.DataFrame(rows).sort_values("factorized_saved_pct", ascending=False, kind="stable")
    return df.reset_index(drop=True).astype({c: object for c in ("total", "factorized", "shared_all", "both")})


def cuts_left_out(cfg: ModelConfig, shown: pd.DataFrame) -> list[str]:
    """The partial sharings albert_cuts left out for cfg (they store more than cfg does now)."""
    return [v for v in PARTIAL_SHARING if v not in set(shown["variant"])]


# ---- what the ALBERT paper measured (albert_core.estimate.paper_results) -----------------------------------------------
PAPER_TABLES = (2, 3, 4, 5, 6, 7, 8, 11, 12, 13)  # every results table with an architecture and the five tasks


@st.cache_data(show_spinner=False, max_entries=32)
def paper_points(tables: tuple[int, ...], by: str = "table") -> pd.DataFrame:
    """The paper's rows of `tables` (albert_core.estimate.paper_results.rows_table), with a series to draw them by: the
    table ("table"), the sharing strategy ("sharing") or the embedding size ("embedding_dim")."""
    from albert_core.estimate import paper_results as pr

    df = pr.rows_table(pr.rows_of(*tables))
    df.insert(2, "name", [f"Table {t}: {r}" for t, r in zip(df["table"], df["row"], strict=True)])
    if by == "sharing":
        series = [pr.SHARING_LABELS[s] for s in df["sharing"]]
    elif by == "embedding_dim":
        series = [f"E = {e:,}" for e in df["embedding_dim"]]
    else:
        series = [f"Table {t}: {pr.TOPICS[t]}" for t in df["table"]]
    df.insert(3, "series", series)
    return df


@st.cache_data(show_spinner=False, max_entries=64)
def paper_marks(cfgs: tuple[ModelConfig, ...], tables: tuple[int, ...]) -> pd.DataFrame:
    """One row per (config, row of `tables` whose network it is exactly): albert_core.estimate.paper_results.matches."""
    from albert_core.estimate.paper_results import matches

    rows = []
    for cfg in cfgs:
        for r in matches(cfg):
            if r.table in tables:
                rows.append(dict(config=cfg.name, key=r.key, name=r.name, params_exact=count_parameters(cfg).total,
                                 avg=r.scores.avg))
    return pd.DataFrame(rows, columns=["config", "key", "name", "params_exact", "avg"])


def paper_matches(cfgs: tuple[ModelConfig, ...], tables: tuple[int, ...] | None = None) -> list[str]:
    """For each config, one sentence: the paper rows (of `tables`) that trained exactly its network, or that none
    did (albert_core.estimate.paper_results.match_text)."""
    from albert_core.estimate.paper_results import match_text

    return [match_text(c, tables) for c in cfgs]


# the row (pinned) and what the page's text speaks of first: its Avg and parameters, then the network and the scores
# (the Avg and params_embedding were off-screen at the right, past the network's fields)
PAPER_COLUMNS = ("row", "avg", "params_embedding", "params_printed", "params_exact", "params_diff_pct", "table",
                 "embedding_dim", "hidden_dim", "num_layers", "sharing", "steps", "flops_per_token", "squad11_f1",
                 "squad11_em", "squad20_f1", "squad20_em", "mnli", "sst2", "race", "speedup", "notes")


@st.cache_data(show_spinner=False, max_entries=32)
def paper_table(tables: tuple[int, ...]) -> pd.DataFrame:
    """The rows of `tables` for people: the network, printed and exact parameters, FLOPs per token, the scores."""
    from albert_core.estimate import paper_results as pr

    df = pr.rows_table(pr.rows_of(*tables))
    keep = [c for c in PAPER_COLUMNS if not (c == "speedup" and df[c].isna().all())]
    return df[keep]


@st.cache_data(show_spinner=False, max_entries=4)
def paper_speedups() -> pd.DataFrame:
    from albert_core.estimate.paper_results import speedup_table

    return speedup_table()


@st.cache_data(show_spinner=False, max_entries=4)
def paper_equal_time() -> pd.DataFrame:
    from albert_core.estimate.paper_results import equal_time_table

    return equal_time_table()
