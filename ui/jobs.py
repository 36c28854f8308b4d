"""Verify's builds for the whole server: one albert_core.processes.parent_queue.Runner, its limits, each session's job.

Settings (environment variable first, then `.streamlit/secrets.toml`, then the default):
  ALBERT_EXPLORER_MEMORY_BUDGET_MB / memory_budget_mb   memory one build process may use (MiB)
  ALBERT_EXPLORER_VERIFY_TIMEOUT_S / verify_timeout_s   wall-clock limit of one build (s)
  ALBERT_EXPLORER_WARM_WORKER / warm_worker             1 (default): fake-tensor builds run in one warm
                                                        measurement process; 0: a fresh process per press
  ALBERT_EXPLORER_WARM_MAX_RSS_MB / warm_max_rss_mb     the warm process is replaced past this resident size
                                                        after a build (default: its own size once ready + 80)
  ALBERT_EXPLORER_WARM_MAX_REQUESTS / warm_max_requests ... and after this many builds (default 200)
The default budget is the memory this server really has free when the build is asked for
(albert_core.processes.parent_memory.available_bytes: its cgroup limit less its usage, the inactive file pages counted free,
else the machine's MemAvailable, less a 64 MiB reserve), plus what the warm process holds (a build reuses it: a fake-tensor
build runs there; for a real-tensor one the runner ends it first when the memory is needed). On Streamlit
Community Cloud (about 1 GB per app) the warm process holds about 350 MiB at rest with PyTorch's CPU build (720 MiB
with the CUDA build) beside the server's 160 MiB (docs/deploy.md has the measurements).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

from albert_core.engine.types import PointsRequest, Request
from albert_core.processes import parent_plan
from albert_core.processes.parent_memory import available_bytes
from albert_core.processes.parent_queue import WARM_MAX_REQUESTS, Job, Runner
from albert_core.processes.parent_served_again import MEMO_SIZE

BUDGET_ENV, BUDGET_SECRET = "ALBERT_EXPLORER_MEMORY_BUDGET_MB", "memory_budget_mb"
TIMEOUT_ENV, TIMEOUT_SECRET, DEFAULT_TIMEOUT_S = "ALBERT_EXPLORER_VERIFY_TIMEOUT_S", "verify_timeout_s", 180
WARM_ENV, WARM_SECRET = "ALBERT_EXPLORER_WARM_WORKER", "warm_worker"
WARM_RSS_ENV, WARM_RSS_SECRET = "ALBERT_EXPLORER_WARM_MAX_RSS_MB", "warm_max_rss_mb"
WARM_REQUESTS_ENV, WARM_REQUESTS_SECRET = "ALBERT_EXPLORER_WARM_MAX_REQUESTS", "warm_max_requests"
OFF = ("0", "false", "no", "off")
RECONNECT_GRACE_S = 10.0  # a session disconnected this long is gone (a browser's reconnect takes less)
MIB = 1 << 20


def _raw(env: str, secret: str) -> Any:
    raw: Any = os.environ.get(env)
    if raw is None:
        try:
            raw = st.secrets.get(secret)
        except Exception:  # noqa: BLE001 - no secrets file: Streamlit raises its own error types
            raw = None
    return raw


def _setting(env: str, secret: str, default: float | None) -> float | None:
    raw = _raw(env, secret)
    try:
        value = float(raw) if raw is not None else default
    except (TypeError, ValueError):
        value = default
    return value if value is not None and value > 0 else default


def budget_bytes() -> int:
    """The setting where one is given, else the memory this server has free now and what the warm process holds
    (a fake-tensor build runs in it; for a real-tensor build the runner ends it when that memory is needed)."""
    mb = _setting(BUDGET_ENV, BUDGET_SECRET, None)
    return int(mb * MIB) if mb is not None else available_bytes() + runner().reclaimable_bytes()


def budget_source() -> str:
    return ("set by ALBERT_EXPLORER_MEMORY_BUDGET_MB" if _setting(BUDGET_ENV, BUDGET_SECRET, None) is not None
            else "the memory this server has free")


def timeout_s() -> float:
    return _setting(TIMEOUT_ENV, TIMEOUT_SECRET, DEFAULT_TIMEOUT_S) or DEFAULT_TIMEOUT_S


def warm_enabled() -> bool:
    """ALBERT_EXPLORER_WARM_WORKER / warm_worker: on unless 0, false, no or off."""
    raw = _raw(WARM_ENV, WARM_SECRET)
    return raw is None or str(raw).strip().lower() not in OFF


@st.cache_resource(show_spinner=False)
def runner() -> Runner:
    """The server's one queue (st.cache_resource: one object per process, shared by every session)."""
    rss_mb = _setting(WARM_RSS_ENV, WARM_RSS_SECRET, None)  # None: the process's own size at rest + a margin
    requests = _setting(WARM_REQUESTS_ENV, WARM_REQUESTS_SECRET, WARM_MAX_REQUESTS) or WARM_MAX_REQUESTS
    return Runner(warm=warm_enabled(), max_rss_bytes=int(rss_mb * MIB) if rss_mb else None,
                  max_requests=int(requests), log=_log, memo=MEMO_SIZE)


def imports_bytes() -> int | None:
    """What a process with PyTorch holds here, as measured in the warm process once it was ready (None before:
    parent_plan.import_bytes then expects the installed build's size). The floor under which no build starts."""
    return runner().rest_rss


def runtime_notes() -> list[str]:
    """What Verify says above its button (parent_plan.runtime_notes): another torch or transformers release than the
    verified one; PyTorch's CUDA build on a machine without a GPU, what it costs here, how to install the CPU build."""
    return parent_plan.runtime_notes(imports_bytes())


def _log(line: str) -> None:
    """The warm process's events in the server's log (started, ready, a build stopped in it, ended and why)."""
    print(f"ALBERT Explorer: {line}", file=sys.stderr, flush=True)


# seconds between the end of the server's first page run and the warm process's start: the browser is still drawing
# that page then (about 1.5 s on the 2-core machine), and the process's imports (6.5 s of CPU, niced) beside it made
# the first visit after a start 1.88x the one-chart app at / against 1.33x without it (bench_ratio.py, 2026-12-03).
# A press before then starts the process itself, as without a prewarm; a Cancel in its start or its first build
# leaves it for the next press (tests/test_warm.py)
PREWARM_DELAY_S = 3.0


def prewarm(delay_s: float = PREWARM_DELAY_S) -> None:
    """Start the warm measurement process delay_s after this server has served a page (app.py calls it at the end
    of every run drawn at the browser's width, with no delay on Verify, whose visitor came to press its button and
    whose page draws no chart; the runner starts one only the first time, and a press before then starts it at
    once). Only under a real server, not AppTest's mock Runtime
    (a MagicMock with Runtime's spec, which passes isinstance): AppTest runs start it on the first press instead,
    so tests that never press start no process."""
    from streamlit.runtime import Runtime

    if Runtime.exists() and type(Runtime.instance()) is Runtime and warm_enabled():
        runner().prewarm(delay_s)


def _session_alive() -> Callable[[], bool] | None:
    """A check, safe on any thread, that this browser session is still connected (None outside a server)."""
    from streamlit.runtime import Runtime
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None or not Runtime.exists():
        return None
    rt, sid = Runtime.instance(), ctx.session_id
    gone_since: list[float] = []

    def alive() -> bool:
        if rt.is_active_session(sid):
            gone_since.clear()
            return True
        gone_since[:1] = gone_since[:1] or [time.monotonic()]
        return time.monotonic() - gone_since[0] < RECONNECT_GRACE_S

    return alive


def submit(request: Request | PointsRequest) -> Job:
    """The request to the server's queue, as the JSON a build process reads (to_dict)."""
    return runner().submit(request.to_dict(), memory_bytes=budget_bytes(), timeout_s=timeout_s(),
                           alive=_session_alive())


def cancel(job: Job, message: str = "Cancelled.") -> None:
    runner().cancel(job, message)


def start(name: str, key: Any, extra: Mapping[str, object], request: Request | PointsRequest) -> None:
    """Submit request as this session's job `name` for the view `key` (extra: what to hand back with the result);
    a job still pending under that name is replaced (one per name and session)."""
    if name in st.session_state:
        cancel(st.session_state.pop(name)[2], "Replaced by a newer request.")
    st.session_state[name] = (key, extra, submit(request))


def collect(name: str, cancel_key: str, key: Any = None) -> tuple[Any, dict[str, Any]] | None:
    """Follow the session's job `name` (only if it is for `key`, when one is given) until it ends; then drop it
    and return (its view key, extra | the child's result | job_error where it did not finish), else None."""
    if name not in st.session_state or (key is not None and st.session_state[name][0] != key):
        return None
    view, extra, job = st.session_state[name]
    follow(job, key=cancel_key)  # waits here, showing the queue place, until the build process ends
    if not job.finished:
        return None
    del st.session_state[name]
    return view, {**extra, **(job.result or {}), **({"job_error": job.message} if job.state != "done" else {})}


def follow(job: Job, key: str = "verify_cancel") -> None:
    """Show where the job stands until it finishes (this script run waits for it), with a Cancel button.

    Any rerun (a widget changed, Cancel pressed, another page opened) ends this wait: with Streamlit's fast
    reruns (the default) the session stops this run (StopException) and starts the next one at once, and the
    next run of this page picks the job up again. So a stopped run is no reason to cancel: a closed browser tab
    ends its build through the job's `alive` check (`_session_alive`, after RECONNECT_GRACE_S), and Cancel
    through the button. (Cancelling here on StopException made a Cancel click say "the page was closed" in about
    1 press in 4, whichever of the two runs cancelled last, and any widget change cancel a running build.)
    """
    r = runner()
    slot = st.empty()  # the Cancel button and the status line, cleared once the job ends: this same run goes on
    with slot.container():  # to draw the result (no st.rerun: one run fewer, and no rerun racing the next)
        if st.button("Cancel", key=key):
            r.cancel(job)  # the child is killed within a poll (0.1 s); this run waits below and shows the outcome
        box = st.empty()
    while not job.finished:
        place = r.place(job)
        if job.cancel_requested:
            box.info("Stopping the build ...", icon=":material/hourglass_top:")
        elif place:
            box.info(f"Waiting: {place - 1} build{'s' if place != 2 else ''} ahead of yours (place {place} in "
                     "the queue; this server builds one model at a time). It starts by itself; keep this "
                     "page open.", icon=":material/hourglass_top:")
        else:
            box.info(status(job), icon=":material/progress_activity:")
        r.wait(job, 0.5)
    slot.empty()


def status(job: Job) -> str:
    """What a running job is doing, in the words the page shows."""
    elapsed = time.monotonic() - (job.started or time.monotonic())
    limits = f"{elapsed:.0f} s (limit {job.timeout_s:,.0f} s, memory {job.memory_bytes / MIB:,.0f} MiB)"
    if job.warm and job.phase == "starting":
        last = job.notice.split(": ", 1)[1].rstrip(".") if ": " in job.notice else ""
        return ("Building the model and measuring it in PyTorch in a separate process, which is starting"
                + (f" ({last})" if last else "") + ": it imports PyTorch once (5-10 s here), then stays warm for "
                f"the next builds. {limits}.")
    if job.warm:
        return f"Building the model and measuring it in PyTorch in a separate process (kept warm): {limits}."
    return f"Building the model and measuring it in PyTorch in a separate process: {limits}."


def served_again(info: dict[str, Any]) -> str:
    """The line beside a result the runner served again (Runner(memo=...)): when it was measured, and why it holds."""
    when = time.strftime("%H:%M:%S UTC", time.gmtime(float(info["measured_at"])))
    return (f"Served again: this server measured the same config and workload at {when} ({float(info['seconds']):.1f} s "
            "then). Fake tensors hold no values, so a new build of the same request measures the same bytes; change "
            "any setting to build anew.")
