"""Verify's section for a model no encoder family models: a decoder preset (albert_core.decoders), or a config.json
(upload or Hub id) that transformers builds.

It is measured by the engine in the same child process as every build (albert_core.processes.child_request, ui/jobs.py),
at Verify's batch, seq_len, precision, attention and optimizer. A decoder trains as a causal LM on its own loss by
default (engine.building.build_auto's head 'causal-lm'), and its built parameters stand beside albert_core.decoders'
exact count; another model has no closed form beside it.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from albert_core.choices import CAUSAL_LM
from albert_core.decoders import is_decoder
from albert_core.decoders.decoder_config import DecoderConfig
from albert_core.decoders.decoder_config import from_hf as decoder_from_hf
from albert_core.decoders.decoder_loss import head_bytes
from albert_core.decoders.decoder_params import count_decoder
from albert_core.decoders.decoder_presets import DECODER_PRESETS, trains_as_causal_lm
from albert_core.engine.types import Request
from albert_core.formats.hf import outside_families
from albert_core.formats.hub import HubError, fetch_config
from albert_core.formats.upload import UPLOAD_LABEL, UPLOAD_MB, UPLOAD_NOTE, load_json
from albert_core.processes import parent_plan
from albert_core.units import format_bytes, format_count
from albert_core.workload import Workload
from ui import jobs, state, tables
from ui.text import file_stem, md

RAW, JOB, RESULT = "_ae_other_config", "_ae_other_job", "_ae_other_result"


NO_PRESET = "(none: a config.json below)"


def _load() -> dict[str, Any] | None:
    """The decoder preset or the config.json the user gave (upload or Hub id), or None; problems shown, never
    raised. A preset's config.json carries its name (the preset's) under "name"."""
    preset = st.selectbox("A decoder preset", (NO_PRESET, *DECODER_PRESETS), key="verify_other_preset",
                          help="The published config.json of a small decoder (albert_core.decoders), as on Overview's "
                               "tab The small decoders.")
    up = st.file_uploader(f"config.json ({UPLOAD_LABEL})", type=["json"], key="verify_other_upload",
                          max_upload_size=UPLOAD_MB)
    st.caption(UPLOAD_NOTE)
    hub = st.text_input("or a Hugging Face model id (only its config.json is fetched)", key="verify_other_hub",
                        placeholder="google/mobilebert-uncased")
    try:
        if up is not None:
            d = load_json(up.getvalue())
        elif hub.strip():
            d = fetch_config(hub.strip())
        elif preset != NO_PRESET:
            return {**DECODER_PRESETS[preset].cfg.to_hf(), "name": preset}
        else:
            return None
    except (ValueError, HubError) as e:
        st.error(f"{md(up.name if up is not None else hub.strip())} cannot be read: {md(str(e))}.")
        return None
    if not isinstance(d, dict):
        st.error("A config.json holds one JSON object.")
        return None
    t = outside_families(d)
    if t is None:
        st.info(f"model_type {md(repr(d.get('model_type')))} is one of the explorer's families (or missing): import "
                "it in the sidebar's Import / export to get every chart, or give it a model_type.")
        return None
    return d


def _request(d: dict[str, Any], lm: bool) -> Request:
    c = state.controls()
    w = Workload(batch_size=c["verify_batch"], seq_len=c["verify_seq_len"], precision=c["precision"],
                 attention=c["attention"], checkpointing=c["checkpointing"], device="cpu", optimizer=c["optimizer"],
                 head=CAUSAL_LM if lm else "none")
    return Request(w, hf_config={k: v for k, v in d.items() if k != "name"}, source="hf", real=bool(c["verify_real"]))


def _decoder(d: dict[str, Any]) -> DecoderConfig | None:
    """The decoder d is (albert_core.decoders), or None; a decoder config.json it refuses is measured as it is."""
    if not is_decoder(d):
        return None
    try:
        return decoder_from_hf({k: v for k, v in d.items() if k != "name"}, str(d.get("name") or ""))
    except ValueError as e:
        st.warning(f"albert_core.decoders does not count this config.json ({md(str(e))}): it is measured as it is, "
                   "with no closed form beside it.")
        return None


def _exact(result: dict[str, Any], dec: DecoderConfig, lm: bool) -> None:
    """A decoder's built parameters beside albert_core's exact count, and what its head and loss save."""
    n = count_decoder(dec, heads=lm).total
    same = "equal" if n == result["built"] else f"differ by {result['built'] - n:+,}"
    st.caption(f"albert_core.decoders counts {n:,} ({'causal LM' if lm else 'base model'}): {same}.")
    if lm and "measurement" in result:
        head = head_bytes(result["measurement"]["breakdown"])
        st.caption(f"Of the saved bytes, the output projection and the loss keep {format_bytes(head)} ({head:,} B): "
                   "the loss's float32 log-softmax of batch × seq_len × vocab and what the projection reads.")


def _show(result: dict[str, Any], model_type: str, closed: bool = False) -> None:
    err = result.get("count_error") or result.get("job_error")
    if err or "built" not in result:
        st.error(md(err or "The build process gave no result."))
        return
    st.metric(f"Parameters built ({md(model_type)})", f"{result['built']:,}", help=format_count(result["built"]))
    tables.show(pd.DataFrame([{"module": k, "parameters": v} for k, v in result["by_module"].items()]),
                "verify_other_modules", file_name=f"{file_stem(model_type)}-parameters.csv")
    if "measurement" not in result:
        st.error(f"Not measured: {md(result.get('measure_error') or 'no measurement')}")
        return
    m, s = result["measurement"], result.get("step")
    cols = st.columns(3)
    cols[0].metric("Saved by one training forward", format_bytes(m["total"]), help=f"{m['total']:,} bytes")
    if s:
        cols[1].metric("Training step peak", format_bytes(s["peak"]), help=f"{s['peak']:,} bytes, {s['phase']}")
    if "inference" in result:
        inf = result["inference"]["total"]
        cols[2].metric("Eval forward peak, beyond the weights", format_bytes(inf),
                       help=f"{inf:,} bytes: the tensors a no_grad forward creates and holds at once; the weights, "
                            "buffers and input come on top")
    st.caption(f"Measured on {result.get('how', 'fake tensors')}: batch {m['batch_size']}, seq_len {m['seq_len']:,}, "
               f"{m['dtype']}, {m['attention']} attention{', checkpointing' if m['checkpointing'] else ''}"
               f"{', ' + s['optimizer'] if s else ''}." + ("" if closed else " No closed form: the explorer's sweeps "
               "and charts need a family module for this model type (README, Adding a model family)."))


def other_encoder() -> None:
    """The expander: load a config.json, build and measure it on a press, show the numbers."""
    with st.expander("A decoder, or any other model transformers builds (GPT-2, Llama, Qwen, Gemma-3, RoFormer, "
                     "MobileBERT, ...)"):
        st.caption("Pick a decoder preset, upload a config.json or give its Hub id: it is built and measured at the "
                   "settings above.")
        d = _load()
        if d is None:
            return
        dec = _decoder(d)
        lm = dec is not None and st.toggle(
            "Train it as a causal LM (its output projection and next-token loss)", value=trains_as_causal_lm(dec),
            key="verify_other_lm", help="transformers' loss upcasts the logits to float32: batch × seq_len × vocab × "
                                        "4 bytes more. Off: the base model alone, as an embedding model trains.")
        model_type = str(d.get("name") or d["model_type"])
        key = json.dumps(_request(d, lm).to_dict(), sort_keys=True, default=str)  # the config and its settings
        if st.button(f"Build and measure {model_type}", key="verify_other_run"):
            request = _request(d, lm)
            plan = parent_plan.plan(request, jobs.budget_bytes(), jobs.imports_bytes())
            if plan.measure or plan.count:
                jobs.start(JOB, key, plan.shown(), request.replace(count=True, measure=plan.measure))
            else:
                st.session_state[RESULT] = {"key": key, **plan.shown()}
        done = jobs.collect(JOB, "verify_other_cancel")
        if done:
            st.session_state[RESULT] = {"key": done[0], **done[1]}
        result = st.session_state.get(RESULT)
        if result is not None and result["key"] == key:
            _show(result, model_type, closed=dec is not None)
            if dec is not None and "built" in result:
                _exact(result, dec, lm)
