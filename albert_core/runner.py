"""One build at a time: a queue of Verify requests, each run in a fresh child process with limits.

No Streamlit here (ui/jobs.py holds the one Runner of the server and ties jobs to sessions). A
`Runner` owns one thread that takes the oldest waiting job, starts `python -m albert_core.worker`
(a new interpreter: nothing is forked from the server, nothing of torch enters it), sends the
request as JSON, and waits. The child is killed (SIGKILL) when the job is cancelled, when its
owner is gone (`alive()` turns False), or when it runs past the wall-clock limit; each ends the
job with a message saying why. The child caps its own memory (RLIMIT_DATA) and asks Linux to
kill it if this thread ends (PR_SET_PDEATHSIG), so it never outlives the server.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MIB = 1 << 20
POLL_S = 0.1
_ids = itertools.count(1)


@dataclass(eq=False)
class Job:
    request: dict[str, Any]
    memory_bytes: int  # the child's cap (RLIMIT_DATA)
    timeout_s: float  # wall-clock limit of the child
    alive: Callable[[], bool] | None = None  # False once the owner (a browser session) is gone
    id: int = field(default_factory=lambda: next(_ids))
    state: str = "waiting"  # waiting, running, done, failed, cancelled, timeout
    result: dict[str, Any] | None = None
    message: str = ""  # why it did not finish (failed, cancelled, timeout)
    started: float | None = None
    ended: float | None = None
    cancel_requested: bool = False
    pid: int | None = None

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed", "cancelled", "timeout")


class Runner:
    """A process-wide queue: one child at a time, a memory cap and a wall-clock limit per child."""

    def __init__(self, command: list[str] | None = None):
        self.command = command or [sys.executable, "-m", "albert_core.worker"]
        self._cond = threading.Condition()
        self._queue: list[Job] = []  # waiting jobs, oldest first
        self.current: Job | None = None
        self._thread = threading.Thread(target=self._loop, name="albert-verify-runner", daemon=True)
        self._thread.start()

    # ---- the sessions' side ----------------------------------------------------------------
    def submit(self, request: dict[str, Any], *, memory_bytes: int, timeout_s: float,
               alive: Callable[[], bool] | None = None) -> Job:
        job = Job(request, memory_bytes, timeout_s, alive)
        with self._cond:
            self._queue.append(job)
            self._cond.notify_all()
        return job

    def place(self, job: Job) -> int:
        """0 while running or finished; else 1 + the number of jobs before it (the running one included)."""
        with self._cond:
            if job not in self._queue:
                return 0
            return self._queue.index(job) + 1 + (self.current is not None)

    def cancel(self, job: Job, message: str = "Cancelled.") -> None:
        with self._cond:
            if job in self._queue:
                self._queue.remove(job)
                self._finish(job, "cancelled", message=message)
            elif not job.finished:
                job.cancel_requested = True
                job.message = message
            self._cond.notify_all()

    def wait(self, job: Job, timeout: float) -> bool:
        """Block until the job finishes or timeout seconds pass; True when finished."""
        with self._cond:
            return self._cond.wait_for(lambda: job.finished, timeout)

    def idle(self) -> bool:
        with self._cond:
            return self.current is None and not self._queue

    # ---- the runner thread -----------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._queue)
                job = self._queue.pop(0)
                self.current = job
                job.state, job.started = "running", time.monotonic()
                self._cond.notify_all()
            try:
                state, result, message = self._run(job)
            except Exception as e:  # noqa: BLE001 - a broken child must not stop the queue
                state, result, message = "failed", None, f"The build process failed: {e}"
            with self._cond:
                self.current = None
                self._finish(job, state, result, message)

    def _finish(self, job: Job, state: str, result: dict | None = None, message: str = "") -> None:
        job.state, job.result, job.ended = state, result, time.monotonic()
        job.message = message or job.message
        self._cond.notify_all()

    def _run(self, job: Job) -> tuple[str, dict | None, str]:
        reason = self._stop_reason(job, float("inf"))  # its session may have closed while it waited
        if reason:
            return reason
        cmd = [*self.command, "--memory-mb", str(job.memory_bytes // MIB)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        job.pid = proc.pid
        payload: bytes | None = json.dumps(job.request).encode()
        deadline = time.monotonic() + job.timeout_s
        while True:
            try:
                out, err = proc.communicate(payload, timeout=POLL_S)  # retried: no output is lost
                break
            except subprocess.TimeoutExpired:
                payload = None
            reason = self._stop_reason(job, deadline)
            if reason:
                _kill(proc)
                proc.communicate()
                return reason
        return _outcome(proc.returncode, out, err, job.memory_bytes)

    def _stop_reason(self, job: Job, deadline: float) -> tuple[str, None, str] | None:
        if job.cancel_requested:
            return "cancelled", None, job.message or "Cancelled."
        if job.alive is not None and not job.alive():
            return "cancelled", None, "The session that asked for this build closed; the build was stopped."
        if time.monotonic() > deadline:
            return "timeout", None, (
                f"Stopped after {job.timeout_s:,.0f} s, this server's time limit for one build "
                "(ALBERT_EXPLORER_VERIFY_TIMEOUT_S): choose a smaller config, batch size or sequence length.")
        return None


# ---- the memory this server really has ----------------------------------------------------------

NO_LIMIT = 1 << 60  # cgroup v1 writes 9223372036854771712 (PAGE_COUNTER_MAX pages) for "no limit"
RESERVE_BYTES = 64 * MIB  # left to the server while a build runs (its own growth, the page cache it needs)


def _read_int(path: Path) -> int | None:
    try:
        raw = path.read_text().strip()
    except OSError:
        return None
    return None if raw in ("", "max") else int(raw) if raw.isdigit() else None


def _cgroup_dirs() -> list[tuple[Path, str, str]]:
    """(directory, limit file, usage file) of this process's memory cgroup, v2 then v1."""
    out: list[tuple[Path, str, str]] = []
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        hier, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if hier == "0" and controllers == "":  # cgroup v2: memory.max, memory.current
            out.append((Path("/sys/fs/cgroup") / path.lstrip("/"), "memory.max", "memory.current"))
        elif "memory" in controllers.split(","):  # cgroup v1
            out.append((Path("/sys/fs/cgroup/memory") / path.lstrip("/"), "memory.limit_in_bytes",
                        "memory.usage_in_bytes"))
    return out


def cgroup_free_bytes() -> int | None:
    """Bytes left under this process's memory cgroup limit (the tightest on the way up), None without a limit."""
    free: int | None = None
    for d, limit_file, usage_file in _cgroup_dirs():
        while True:
            limit, usage = _read_int(d / limit_file), _read_int(d / usage_file)
            if limit is not None and limit < NO_LIMIT and usage is not None:
                free = min(free if free is not None else limit, max(0, limit - usage))
            if d.parent == d or d in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/memory")):
                break
            d = d.parent
    return free


def available_bytes() -> int:
    """The memory a build may use now: free under the cgroup limit, else the machine's MemAvailable, less a reserve."""
    free = cgroup_free_bytes()
    if free is None:
        try:
            for line in Path("/proc/meminfo").read_text().splitlines():
                if line.startswith("MemAvailable:"):
                    free = int(line.split()[1]) * 1024  # kB
        except OSError:
            free = None
    if free is None:
        free = 700 * MIB  # no /proc (not Linux): the 1 GB deployment's share
    return max(0, free - RESERVE_BYTES)


def _outcome(rc: int, out: bytes, err: bytes, memory_bytes: int) -> tuple[str, dict | None, str]:
    """The job's end from the child's exit code and output."""
    cap = f"{memory_bytes / MIB:,.0f} MiB"
    try:
        result = json.loads(out) if rc == 0 else None
    except ValueError:
        result = None
    if result is not None and result.get("out_of_memory"):
        result["measure_error"] = (
            f"the measurement needed more than {cap}, this server's memory limit for one build, and was "
            "stopped there: lower the batch size or sequence length, or choose a smaller config")
        return "done", result, ""
    if result is not None:
        return "done", result, ""
    if rc == -signal.SIGKILL:  # the kernel's OOM killer (the child asks to be its first choice)
        return "failed", None, (
            f"The build process was killed (SIGKILL) before it finished: the machine or its container ran out of "
            f"memory first. This server allows {cap} per build; if that is more than it has free, lower "
            "ALBERT_EXPLORER_MEMORY_BUDGET_MB. Choose a smaller config, batch size or sequence length.")
    how = f"was killed by signal {-rc}" if rc < 0 else f"exited with code {rc}"
    tail = err.decode(errors="replace").strip().splitlines()[-1:]
    return "failed", None, (f"The build process {how} without a result{f' ({tail[0][:300]})' if tail else ''}; "
                            f"it may have needed more than its {cap} memory limit.")


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the child leads its own process group (start_new_session)
    except (ProcessLookupError, PermissionError):
        proc.kill()
