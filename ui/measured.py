"""Measured points for the Memory page's activation chart: the engine, in the build process, at a few lengths.

The press submits one request to the server's queue (ui/jobs.py, albert_core.worker.run_points); the result,
plain numbers, stays in the session for this view (configs and settings) and the chart draws it.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from albert_core import worker
from albert_core.measure import point_lengths, points_table

from . import jobs
from .text import md

JOB, RESULTS = "_ae_points_job", "_ae_points"


def _key(cfgs: tuple, seqs: tuple, ctl: Any) -> tuple:
    return (cfgs, seqs, ctl["batch_size"], ctl["dtype"], ctl["attention"], bool(ctl["training"]),
            bool(ctl["checkpointing"] and ctl["training"]))


def activation_points(cfgs: tuple, seqs: tuple, ctl: Any) -> pd.DataFrame | None:
    """The button, the running job, and the measured points of this view (None until measured)."""
    key = _key(cfgs, seqs, ctl)
    results: dict = st.session_state.setdefault(RESULTS, {})
    lengths = point_lengths(list(cfgs), seqs)
    n = sum(len(v) for v in lengths.values())
    if key not in results and st.button(f"Measure {min(n, worker.MAX_POINTS)} points in PyTorch", key="memory_measure",
                                        help="Runs each config on fake tensors (PyTorch's real ops without storage) "
                                             "in a separate process, at a few of these lengths."):
        req = worker.points_request(list(cfgs), lengths, batch_size=ctl["batch_size"], dtype=ctl["dtype"],
                                    attention=ctl["attention"], checkpointing=key[-1], training=key[-2])
        refused = worker.floor_error(jobs.budget_bytes())  # fake tensors: the process's imports are all it needs
        if refused:
            st.error(f"Not measured: {md(refused)}")
            return None
        if JOB in st.session_state:
            jobs.cancel(st.session_state.pop(JOB)[1], "Replaced by a newer request.")
        st.session_state[JOB] = (key, jobs.submit(req))
    if JOB in st.session_state and st.session_state[JOB][0] == key:
        job = st.session_state[JOB][1]
        jobs.follow(job, key="memory_measure_cancel")
        if job.finished:
            del st.session_state[JOB]
            out = job.result or {}
            if "points" in out:
                results[key] = points_table(out["points"], list(cfgs), batch_size=ctl["batch_size"],
                                            dtype=ctl["dtype"], attention=ctl["attention"], training=key[-2],
                                            checkpointing=key[-1])
                st.rerun()  # draw the chart with its points, without the button and the finished job's Cancel
            else:
                st.error(md(out.get("points_error") or out.get("measure_error") or job.message or "No points."))
    return results.get(key)


def with_points(table: pd.DataFrame, points: pd.DataFrame | None) -> pd.DataFrame:
    """The chart's CSV rows (config, seq_len, part, bytes) plus, where measured, the measured bytes and the
    estimate for the same CPU kernels as parts of their own."""
    if points is None:
        return table
    extra = [dict(config=r.config, seq_len=r.seq_len, part=part, bytes=int(getattr(r, col)))
             for r in points.itertuples() for part, col in (("measured in PyTorch (CPU)", "measured"),
                                                            ("estimate, CPU kernels", "estimate_cpu"))]
    return pd.concat([table, pd.DataFrame(extra)], ignore_index=True)
