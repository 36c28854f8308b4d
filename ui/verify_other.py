"""Verify's section for an encoder no family models: a config.json (upload or Hub id) that transformers builds.

It is measured by the engine in the same child process as every build (albert_core.processes.child_request, ui/jobs.py),
at Verify's batch, seq_len, precision, attention and optimizer, with no closed form beside it.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

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


def _load() -> dict[str, Any] | None:
    """The config.json the user gave (upload or Hub id), or None; problems shown, never raised."""
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


def _request(d: dict[str, Any]) -> Request:
    c = state.controls()
    w = Workload(batch_size=c["verify_batch"], seq_len=c["verify_seq_len"], precision=c["precision"],
                 attention=c["attention"], checkpointing=c["checkpointing"], device="cpu", optimizer=c["optimizer"])
    return Request(w, hf_config=d, source="hf", real=bool(c["verify_real"]))


def _show(result: dict[str, Any], model_type: str) -> None:
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
               f"{', ' + s['optimizer'] if s else ''}. No closed form: the explorer's sweeps and charts need a family "
               "module for this model type (README, Adding a model family).")


def other_encoder() -> None:
    """The expander: load a config.json, build and measure it on a press, show the numbers."""
    with st.expander("Any other encoder transformers builds (RoFormer, MobileBERT, Funnel, ...)"):
        st.caption("Upload its config.json or give its Hub id: it is built and measured at the settings above.")
        d = _load()
        if d is None:
            return
        model_type = str(d["model_type"])
        key = json.dumps(_request(d).to_dict(), sort_keys=True, default=str)  # the config and the settings it ran at
        if st.button(f"Build and measure {model_type}", key="verify_other_run"):
            request = _request(d)
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
            _show(result, model_type)
