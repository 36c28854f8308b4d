"""One build at a time: a queue of Verify requests, served by a warm measurement process or a fresh child each.

No Streamlit here (ui/jobs.py holds the one Runner of the server and ties jobs to sessions). A
`Runner` owns one thread that takes the oldest waiting job and runs it in one of two ways:

* **warm** (`Runner(warm=True)`, fake tensors: every request but a real-tensor measurement): one long-lived
  `python -m albert_core.processes.child_warm` (`WarmProcess`) that imported torch and transformers once answers
  the request over its stdin/stdout, one line each way. It is replaced after `max_requests` requests, when
  its resident memory after a request is past `max_rss_bytes`, or when it dies; a replacement is started by
  the next job, which says so (`Job.notice`). A job stopped mid-run (Cancel, its session gone, the time
  limit) is interrupted inside the process, which answers and stays warm (it is ended instead when no answer
  comes within STOP_GRACE_S, or when the interrupted build left something set in it); stopped while the
  process is still starting, the process goes on starting for the next job.
* **fresh** (real-tensor measurements, and every job with `warm=False`): a new `python -m
  albert_core.processes.child_request` per job (a new interpreter: nothing is forked from the server, nothing of torch enters
  it), the request as JSON on stdin, the result on stdout; it holds the model's real memory and gives it
  back when it exits. Where the warm process's memory is what the build needs (`memory.available_bytes()` below
  the job's budget), the warm process is ended first.

Either child is killed (SIGKILL) when the job is cancelled, when its owner is gone (`alive()` turns
False), or when it runs past the wall-clock limit; each ends the job with a message saying why. The
children cap their own memory (RLIMIT_DATA) and ask Linux to kill them if this thread ends
(PR_SET_PDEATHSIG), so none outlives the server.

With `memo=N` (the app: memo.MEMO_SIZE) the last N fake-tensor builds' results are kept: the same request made again is
answered at once with its result, marked "served_again" (when it was measured), which the page says.
"""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .parent_memory import available_bytes
from .parent_plan import own_process
from .parent_served_again import Memo
from .parent_warm import POLL_S, ROOT, Outcome, WarmProcess, _child_env, _kill

MIB = 1 << 20
_ids = itertools.count(1)
# The warm process is replaced past its size at rest (its ready line: 348 MiB, CPU build; 718, CUDA build) plus
# WARM_GROWTH_BYTES after a build (engine/torch_build.py); WARM_MAX_RSS_BYTES is the bound before one is measured.
WARM_GROWTH_BYTES = 80 * MIB
WARM_MAX_RSS_BYTES = 440 * MIB
WARM_MAX_REQUESTS = 200
STOP_GRACE_S = 10.0  # a stopped build's answer is awaited this long before its process is ended


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
    warm: bool = False  # served by the warm measurement process
    phase: str = ""  # while running in the warm process: "starting" (it imports first), then "measuring"
    notice: str = ""  # why this job started a new warm process ("" when the one it used was already there)

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed", "cancelled", "timeout")


class Runner:
    """A process-wide queue: one build at a time, a memory cap and a wall-clock limit per build.

    warm=True: fake-tensor requests go to one warm measurement process (see the module's docstring),
    replaced past max_rss_bytes resident after a request (None: its own size at rest plus WARM_GROWTH_BYTES, as
    measured once it is ready: bound_bytes), after max_requests requests, or when it dies.
    """

    def __init__(self, command: list[str] | None = None, *, warm: bool = False,
                 max_rss_bytes: int | None = None, max_requests: int = WARM_MAX_REQUESTS,
                 log: Callable[[str], None] | None = None, memo: int = 0):
        self.command = command or [sys.executable, "-m", "albert_core.processes.child_request"]  # a fresh process per job
        self.warm_command = [sys.executable, "-m", "albert_core.processes.child_warm"]  # the warm measurement process
        self.log = log or (lambda line: None)  # one line per warm process event (the server's log: ui/jobs.py)
        self.warm = warm
        self.max_rss_bytes, self.max_requests = max_rss_bytes, max_requests
        self._cond = threading.Condition()
        self._queue: list[Job] = []  # waiting jobs, oldest first
        self.current: Job | None = None
        self.settling = False  # reading the warm process's settled line after a job's end (_settle_warm)
        self._warm: WarmProcess | None = None  # touched by the runner thread only (read elsewhere)
        self.warm_starts = 0  # warm processes started so far
        self.last_end = ""  # why the last warm process ended ("was killed (SIGKILL) during a build", ...)
        self.rest_rss: int | None = None  # the last warm process's resident bytes once ready (its imports, warm-up)
        self._prewarm = False  # asked to start the warm process before any job
        self._prewarm_asked = False
        self._prewarm_at = 0.0  # time.monotonic() from which it may start
        self._memo = Memo(memo)  # results kept for a request made again (0: none; the app keeps MEMO_SIZE)
        self._thread = threading.Thread(target=self._loop, name="albert-verify-runner", daemon=True)
        self._thread.start()

    # ---- the sessions' side ----------------------------------------------------------------
    def submit(self, request: dict[str, Any], *, memory_bytes: int, timeout_s: float,
               alive: Callable[[], bool] | None = None) -> Job:
        job = Job(request, memory_bytes, timeout_s, alive)
        with self._cond:
            if not self._memo_hit(job):
                self._queue.append(job)
            self._cond.notify_all()
        return job

    def _memo_hit(self, job: Job) -> bool:
        """Finish job at once with the result this server measured for the same request (under the lock)."""
        result = self._memo.get(job.request)
        if result is None:
            return False
        job.started = time.monotonic()
        self._finish(job, "done", result)
        return True

    def prewarm(self, delay_s: float = 0.0) -> None:
        """Start the warm process before any job, `delay_s` from now (the server asks once its first page is
        served, leaving the browser time to draw it); once per Runner: after that a replacement is started by the
        next job that needs one. A job that comes first starts it at once."""
        with self._cond:
            if self.warm and not self._prewarm_asked:
                self._prewarm_asked = self._prewarm = True
                self._prewarm_at = time.monotonic() + max(0.0, delay_s)
                self._cond.notify_all()

    def _prewarm_wait(self) -> float | None:
        """Seconds until a pending prewarm is due (0: now), None where none is pending (under the lock)."""
        return max(0.0, self._prewarm_at - time.monotonic()) if self._prewarm else None

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
        return self.wait_until(lambda: job.finished, timeout)

    def wait_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Block until condition() (read under the lock at each change of a job or a warm process) holds, or timeout s."""
        with self._cond:
            return self._cond.wait_for(condition, timeout)

    def idle(self) -> bool:
        with self._cond:
            return self.current is None and not self._queue and not self.settling

    @property
    def warm_pid(self) -> int | None:
        """The warm process's pid while one is alive (started, starting or serving), else None."""
        w = self._warm
        return w.pid if w is not None and w.proc.poll() is None else None

    def warm_ready(self) -> bool:
        w = self._warm
        return w is not None and w.ready and w.proc.poll() is None

    @property
    def bound_bytes(self) -> int:
        """The size past which the warm process is replaced after a build: max_rss_bytes, else its own at rest + growth."""
        if self.max_rss_bytes is not None:
            return self.max_rss_bytes
        return self.rest_rss + WARM_GROWTH_BYTES if self.rest_rss else WARM_MAX_RSS_BYTES

    def reclaimable_bytes(self) -> int:
        """Resident bytes of the warm process: memory a fake-tensor build reuses (it runs there) and a
        real-tensor build gets back (the warm process is ended for it when the server has no more free)."""
        w = self._warm
        return w.rss() if w is not None else 0

    def close(self) -> None:
        """End the warm process (tests; a server ends it by ending, PR_SET_PDEATHSIG)."""
        w = self._warm
        if w is not None:
            w.kill()

    # ---- the runner thread -----------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue and self._prewarm_wait() != 0.0:  # a job, or a prewarm now due
                    self._cond.wait(self._prewarm_wait())
                if not self._queue:
                    self._prewarm = False
                    job = None
                else:
                    job = self._queue.pop(0)
                    self._prewarm = False  # the job starts the warm process itself, if none is running
                    self.current = job
                    job.state, job.started = "running", time.monotonic()
                    self._cond.notify_all()
            if job is None:
                if self._warm is None:
                    self._start_warm()
                continue
            try:
                state, result, message = self._run(job)
            except Exception as e:  # noqa: BLE001 - a broken child must not stop the queue
                state, result, message = "failed", None, f"The build process failed: {e}"
            with self._cond:
                self.current = None
                self._finish(job, state, result, message)
                if state == "done":
                    self._memo.put(job.request, result, (job.ended or 0.0) - (job.started or 0.0))
            self._settle_warm()  # the page has the result; the warm process settles before the next job

    def _finish(self, job: Job, state: str, result: dict | None = None, message: str = "") -> None:
        job.state, job.result, job.ended = state, result, time.monotonic()
        job.message = message or job.message
        self._cond.notify_all()

    def _run(self, job: Job) -> Outcome:
        reason = self._stop_reason(job, float("inf"))  # its session may have closed while it waited
        if reason:
            return reason
        if self.warm and not own_process(job.request):
            return self._run_warm(job)
        if self._warm is not None and available_bytes() < job.memory_bytes:
            self._end_warm("was ended to give its memory to a real-tensor build", kill=False)
        return self._run_fresh(job)

    def _run_fresh(self, job: Job) -> Outcome:
        cmd = [*self.command, "--memory-mb", str(job.memory_bytes // MIB)]
        proc = subprocess.Popen(cmd, cwd=ROOT, env=_child_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        self._set(job, pid=proc.pid)  # waiters on the runner (wait_until) see the child start
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

    # ---- the warm process -------------------------------------------------------------------
    def _start_warm(self) -> WarmProcess | None:
        try:
            w = WarmProcess(self.warm_command, on_ready=self._ready)
        except OSError as e:
            self.last_end = f"could not be started ({e})"
            return None
        with self._cond:
            self._warm = w
            self.warm_starts += 1
            self._cond.notify_all()
        self.log(f"warm measurement process {w.pid} started")
        return w

    def _ready(self, w: WarmProcess) -> None:
        """From the warm process's stdout thread, the moment it is ready."""
        self.log(f"warm measurement process {w.pid} ready after {w.ready_info.get('seconds', 0):.1f} s, "
                 f"{int(w.ready_info.get('rss') or 0) / MIB:,.0f} MiB resident")
        with self._cond:
            self.rest_rss = int(w.ready_info.get("rss") or 0) or self.rest_rss
            self._cond.notify_all()  # wait_until(warm_ready) and the like look again

    def _end_warm(self, why: str, kill: bool = True) -> None:
        w = self._warm
        if w is None:
            return
        w.kill() if kill else w.close()
        with self._cond:
            self._warm, self.last_end = None, why
            self._cond.notify_all()
        self.log(f"warm measurement process {w.pid} {why}")

    def _set(self, job: Job, **fields: Any) -> None:
        with self._cond:
            for k, v in fields.items():
                setattr(job, k, v)
            self._cond.notify_all()

    def _run_warm(self, job: Job) -> Outcome:
        deadline = time.monotonic() + job.timeout_s
        w = self._warm
        if w is not None and w.proc.poll() is not None:  # it died while idle
            self._gone(w, "while idle")
            w = None
        if w is None:
            notice = ("This build started a new measurement process (PyTorch imported first)"
                      + (f": the last one {self.last_end}." if self.last_end else "."))
            w = self._start_warm()
            if w is None:
                return "failed", None, f"The measurement process {self.last_end}."
            job.notice = notice if self.last_end else ""
        self._set(job, pid=w.pid, warm=True, phase="measuring" if w.ready else "starting")

        def stop() -> Outcome | None:
            return self._stop_reason(job, deadline)

        if not w.ready:
            ready, reason = w.wait_ready(stop)
            if reason:  # stopped while it imports: nothing of the job has run; it goes on for the next one
                self.log(f"build {job.id} stopped while warm measurement process {w.pid} was starting ({reason[0]}); "
                         "it goes on starting")
                return reason
            if not ready:
                return self._died(job, w, "while starting")
            self._set(job, phase="measuring")
        sent = time.monotonic()
        if not w.send(job.request | {"id": job.id, "memory_mb": job.memory_bytes // MIB}):
            return self._died(job, w, "before a build")
        msg, reason = w.read(stop)
        if reason:
            return self._stop_warm(job, w, reason)
        if msg is None or "result" not in msg:
            return self._died(job, w, "during a build")
        w.served += 1
        result, rss = msg["result"], int(msg.get("rss") or 0)
        self.log(f"build {job.id} measured in warm measurement process {w.pid} (its build {w.served:,}) in "
                 f"{time.monotonic() - sent:.2f} s (the engine {float(result.get('engine_seconds') or 0):.2f} s, "
                 f"{float(result.get('cpu_seconds') or 0):.2f} s of CPU), {rss / MIB:,.0f} MiB resident after it")
        self._answered(w, msg)
        result["process"] = {"warm": True, "pid": w.pid, "build": w.served, "rss": rss,
                             "import_seconds": w.import_seconds, "start": w.ready_info}
        if job.notice:
            result["process_note"] = job.notice
        if "failed" in result:
            return "failed", None, f"The measurement failed: {result['failed']}"
        return _result_outcome(result, job.memory_bytes)

    def _stop_warm(self, job: Job, w: WarmProcess, reason: Outcome) -> Outcome:
        """Stop the running request (Cancel, the time limit, a closed session) and keep the process: it interrupts
        the build and answers; past STOP_GRACE_S without an answer, or where the build left something set, the
        process is ended (the next job starts a new one and says why)."""
        grace = time.monotonic() + STOP_GRACE_S
        msg, late = None, None
        if w.send({"stop": job.id}):
            msg, late = w.read(lambda: ("grace", None, "") if time.monotonic() > grace else None)
        if msg is None and late is None:  # its output ended: it died unwinding the Stop. Seen before the Stop was
            # raised at the engine's safe points only (engine/dispatch.py's safe_point): SIGABRT, "terminate called after throwing
            # an instance of 'python_error'" (raised under a C++ getter, prim.device, that cannot pass it on; 2 of 28
            # time-limit stops beside two busy loops; 0 of 95 since): the next job says so, in those words
            self._gone(w, "while its build was being stopped")
            return reason
        if msg is None or msg.get("id") != job.id:
            self._end_warm(_ended_by(reason, job.timeout_s))
            return reason
        self.log(f"build {job.id} stopped in warm measurement process {w.pid} ({reason[0]}), which stays")
        w.served += 1
        self._answered(w, msg)
        return reason

    def _answered(self, w: WarmProcess, msg: dict[str, Any]) -> None:
        """After a build's answer: the process retires where it says so; else its settled line is to come (it gives
        back what the build left after answering, so the page has the result first), read by _settle_warm."""
        if msg.get("retire"):
            self._end_warm(msg["retire"], kill=False)
        else:
            w.settling = True

    def _settle_warm(self) -> None:
        """Read the warm process's settled line, once its last job has ended, and replace the process past
        max_rss_bytes resident then or after max_requests builds. Runs before the next job starts."""
        w = self._warm
        if w is None or not w.settling:
            return
        with self._cond:
            self.settling = True
        try:
            w.settling = False
            grace = time.monotonic() + STOP_GRACE_S
            msg, late = w.read(lambda: ("grace", None, "") if time.monotonic() > grace else None)
            if msg is None and late is None:
                self._gone(w, "after a build")
                return
            if msg is None or "settled" not in msg:
                self._end_warm(f"gave no word within {STOP_GRACE_S:.0f} s of its build's answer and was replaced")
                return
            rss = int(msg.get("rss") or 0)
            bound = self.bound_bytes
            retire = ((f"had grown to {rss / MIB:,.0f} MiB resident after a build, past this server's bound of "
                       f"{bound / MIB:,.0f} MiB, and was replaced" if rss > bound else None)
                      or (f"was replaced after {w.served:,} builds, this server's limit for one process"
                          if w.served >= self.max_requests else None))
            if retire:
                self._end_warm(retire, kill=False)
        finally:
            with self._cond:
                self.settling = False
                self._cond.notify_all()

    def _gone(self, w: WarmProcess, when: str) -> str:
        """Reap a warm process that died by itself; the description of how, remembered for the next job."""
        rc = w.proc.wait()
        how = ("was killed (SIGKILL)" if rc == -signal.SIGKILL else
               f"was killed by signal {-rc}" if rc < 0 else f"exited with code {rc}")
        tail = next((line for line in reversed(w.stderr) if line.strip()), "")
        with self._cond:
            if self._warm is w:
                self._warm = None
            self.last_end = f"{how} {when}" + (f" ({tail[:300]})" if tail and rc > 0 else "")
            self._cond.notify_all()
        self.log(f"warm measurement process {w.pid} {self.last_end}")
        return how

    def _died(self, job: Job, w: WarmProcess, when: str) -> Outcome:
        if w.proc.poll() is None:
            w.kill()  # it broke the protocol: ended
        how = self._gone(w, when)
        cap, when = f"{job.memory_bytes / MIB:,.0f} MiB", when.replace("a build", "this build")
        if how == "was killed (SIGKILL)":
            return "failed", None, (
                f"The measurement process was killed (SIGKILL) {when}: the machine or its container ran out of "
                f"memory first, or it was killed from outside. This server allows {cap} per build; if that is "
                "more than it has free, lower ALBERT_EXPLORER_MEMORY_BUDGET_MB. The next build starts a new "
                "measurement process.")
        return "failed", None, (f"The measurement process {self.last_end.replace('a build', 'this build')} without "
                                f"a result; it may have needed "
                                f"more than its {cap} memory limit. The next build starts a new one.")

    def _stop_reason(self, job: Job, deadline: float) -> Outcome | None:
        if job.cancel_requested:
            return "cancelled", None, job.message or "Cancelled."
        if job.alive is not None and not job.alive():
            return "cancelled", None, SESSION_GONE
        if time.monotonic() > deadline:
            return "timeout", None, (
                f"Stopped after {job.timeout_s:,.0f} s, this server's time limit for one build "
                "(ALBERT_EXPLORER_VERIFY_TIMEOUT_S): choose a smaller config, batch size or sequence length.")
        return None


SESSION_GONE = "The session that asked for this build closed; the build was stopped."


def _ended_by(reason: Outcome, timeout_s: float) -> str:
    """How a warm process stopped mid-build ended, as the next job's notice says it."""
    state, _, message = reason
    if state == "timeout":
        return f"was stopped at this server's time limit for one build ({timeout_s:,.0f} s)"
    if message == SESSION_GONE:
        return "was stopped when the session that asked for its build closed"
    return "was stopped when its build was cancelled"


def _result_outcome(result: dict[str, Any], memory_bytes: int) -> Outcome:
    """A child's result as the job's end (past its memory cap: the errors that say so)."""
    if result.get("out_of_memory"):
        result["measure_error"] = (
            f"the measurement needed more than {memory_bytes / MIB:,.0f} MiB, this server's memory limit for one "
            "build, and was stopped there: lower the batch size or sequence length, or choose a smaller config")
        if "built" not in result:  # stopped before its count: said once, under Measurement (pages/verify.py)
            result.setdefault("count_error", "not counted: the build ran past its memory limit first (below)")
    return "done", result, ""


def _outcome(rc: int, out: bytes, err: bytes, memory_bytes: int) -> Outcome:
    """The job's end from the one-shot child's exit code and output."""
    cap = f"{memory_bytes / MIB:,.0f} MiB"
    try:
        result = json.loads(out) if rc == 0 else None
    except ValueError:
        result = None
    if result is not None:
        return _result_outcome(result, memory_bytes)
    if rc == -signal.SIGKILL:  # the kernel's OOM killer (the child asks to be its first choice)
        return "failed", None, (
            f"The build process was killed (SIGKILL) before it finished: the machine or its container ran out of "
            f"memory first. This server allows {cap} per build; if that is more than it has free, lower "
            "ALBERT_EXPLORER_MEMORY_BUDGET_MB. Choose a smaller config, batch size or sequence length.")
    how = f"was killed by signal {-rc}" if rc < 0 else f"exited with code {rc}"
    tail = err.decode(errors="replace").strip().splitlines()[-1:]
    return "failed", None, (f"The build process {how} without a result{f' ({tail[0][:300]})' if tail else ''}; "
                            f"it may have needed more than its {cap} memory limit.")
