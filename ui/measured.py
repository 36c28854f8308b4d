"""Measured points for the Memory page's activation chart: the engine, in the build process, at a few lengths.

The press submits one request to the server's queue (ui/jobs.py, albert_core.processes.child_request.run_points); the result,
plain numbers, stays in the session for this view (configs and settings) and the chart draws it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from albert_core.engine.measure import point_lengths, points_table, step_points_table
from albert_core.engine.types import MAX_POINTS, PointsRequest
from albert_core.processes import parent_plan
from albert_core.workload import Workload

from . import jobs
from .text import md

JOB, RESULTS = "_ae_points_job", "_ae_points"


def _measure(key: tuple, name: str, n: int, req: Callable[[], PointsRequest], table: Callable[[list], pd.DataFrame]
             ) -> pd.DataFrame | None:
    """The button (until this view is measured), the running job, then the view's table of points."""
    results: dict = st.session_state.setdefault(RESULTS, {})
    slot = st.empty()  # the button, cleared once this view's points are in
    if key not in results and slot.button(f"Measure {n} points in PyTorch", key=name,
                                        help="Runs each config on fake tensors (PyTorch's real ops without storage) "
                                             "in a separate process, at a few of these lengths."):
        refused = parent_plan.floor_error(jobs.budget_bytes(), jobs.imports_bytes())  # fake tensors: the process's imports are all it needs
        if refused:
            st.error(f"Not measured: {md(refused)}")
            return None
        jobs.start(JOB, key, {}, req())
    done = jobs.collect(JOB, f"{name}_cancel", key)
    if done:
        out = done[1]
        if "points" in out:
            results[key] = table(out["points"])
            slot.empty()  # this run goes on to draw the chart with its points (jobs.follow cleared its Cancel)
            return results[key]
        st.error(md(out.get("points_error") or out.get("measure_error") or out.get("job_error") or "No points."))
    return results.get(key)


def activation_points(cfgs: tuple, seqs: tuple, ctl: Any) -> pd.DataFrame | None:
    """The activation chart's measured points of this view (None until measured)."""
    training = bool(ctl["training"])
    w = _points_workload(ctl["batch_size"], max(seqs), ctl["dtype"], ctl["attention"],
                         bool(ctl["checkpointing"] and training))
    lengths = point_lengths(list(cfgs), seqs)
    return _measure(("activations", cfgs, seqs, w, training), "memory_measure", _count(lengths),
                    lambda: parent_plan.points_request(list(cfgs), lengths, w, training=training),
                    lambda pts: points_table(pts, list(cfgs), w, training=training))


def training_points(cfgs: tuple, seqs: tuple, ctl: Any, precision: str, optimizer: str) -> pd.DataFrame | None:
    """The training chart's measured step peaks of this view, or None (not measured): every precision's step runs
    on the engine as the chart counts it (training.PRECISION_NOTES)."""
    w = _points_workload(ctl["batch_size"], max(seqs), precision, ctl["attention"], bool(ctl["checkpointing"]),
                         optimizer)
    lengths = point_lengths(list(cfgs), seqs)
    return _measure(("training", cfgs, seqs, w), "memory_measure_training", _count(lengths),
                    lambda: parent_plan.points_request(list(cfgs), lengths, w, training=True, step=True),
                    lambda pts: step_points_table(pts, list(cfgs), w))


def _points_workload(batch: int, seq: int, precision: str, attention: str, checkpointing: bool,
                     optimizer: str = "adamw") -> Workload:
    """The workload the engine runs the points at: on this server's CPU (its optimizer's for-loop), each point's
    seq_len in place of seq."""
    return Workload(batch_size=batch, seq_len=seq, precision=precision, attention=attention,
                    checkpointing=checkpointing, device="cpu", optimizer=optimizer)


def _count(lengths: dict[str, list[int]]) -> int:
    return min(sum(len(v) for v in lengths.values()), MAX_POINTS)


def with_points(table: pd.DataFrame, points: pd.DataFrame | None) -> pd.DataFrame:
    """The chart's CSV rows (config, seq_len, part, bytes) plus, where measured, the measured bytes and the
    estimate for the same CPU kernels as parts of their own."""
    if points is None:
        return table
    extra = [dict(config=r.config, seq_len=r.seq_len, part=part, bytes=int(getattr(r, col)))
             for r in points.itertuples() for part, col in (("measured in PyTorch (CPU)", "measured"),
                                                            ("estimate, CPU kernels", "estimate_cpu"))]
    return pd.concat([table, pd.DataFrame(extra)], ignore_index=True)


def with_step_points(table: pd.DataFrame, points: pd.DataFrame | None) -> pd.DataFrame:
    """The training sweep's CSV (config, seq_len, bytes) with, where measured, the measured step peak and the
    modelled peak for the same CPU kernels as columns."""
    if points is None:
        return table
    cols = points[["config", "seq_len", "measured", "modelled_cpu"]].rename(
        columns={"measured": "step_peak_measured_cpu", "modelled_cpu": "step_peak_modelled_cpu"})
    return table.merge(cols, on=["config", "seq_len"], how="left")
