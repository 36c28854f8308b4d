"""The warm measurement process (issue 27): one process imports torch once and serves fake-tensor requests one at
a time through the queue. Each fault ends cleanly and the job says why: Cancel, the time limit and a closed
session interrupt the build inside the process, which stays warm for the next press; a process killed with
SIGKILL mid-run, or past its memory bound, or after N requests, is replaced, and the next press starts a new one
and says so. Real-tensor requests still run in a fresh process each. The tests wait on the runner's own signals
(Runner.wait_until: a job's phase, its end), never on time."""

from __future__ import annotations

import gc
import os
import signal
import threading

import pytest
from test_app_verify import TINY_CFG, _pid_alive, request

from albert_core.engine import core as engine
from albert_core.engine.measure import maker
from albert_core.estimate.params import count_parameters
from albert_core.presets import PRESETS
from albert_core.processes import parent_plan
from albert_core.processes.parent_queue import WARM_GROWTH_BYTES, WARM_MAX_RSS_BYTES, Runner
from albert_core.workload import Workload
from ui import jobs

MIB = 1 << 20
LONG = request(PRESETS["bert-large"], source="hf", batch_size=8, seq_len=512).to_dict()  # seconds of work: stopped mid-run
WAIT_S = 300  # a generous bound for a wait on a busy machine; every wait ends on a signal well before it


@pytest.fixture(scope="module")
def warm():
    r = Runner(warm=True)
    r.prewarm()  # what the server does once it has served a page: the process starts before any job
    assert r.wait_until(lambda: r.warm_pid is not None, WAIT_S)
    yield r
    r.close()


def tiny(r: Runner, **kw):
    job = r.submit(request(TINY_CFG, **kw).to_dict(), memory_bytes=700 * MIB, timeout_s=WAIT_S)
    assert r.wait(job, WAIT_S) and job.state == "done", job.message
    assert job.result["built"] == count_parameters(TINY_CFG).total
    return job


def ready(r: Runner) -> int:
    """The warm process's pid, once it has served a request (started again first if a test ended it)."""
    if not r.warm_ready():
        tiny(r)
    return r.warm_pid


def mid_run(r: Runner, **kw):
    """A long request, once the warm process is measuring it."""
    job = r.submit(LONG, memory_bytes=700 * MIB, **({"timeout_s": WAIT_S} | kw))
    assert r.wait_until(lambda: job.finished or job.phase == "measuring", WAIT_S) and not job.finished
    return job


def next_press_is_served_by_the_same_process(r: Runner, pid: int) -> None:
    """The stopped build was interrupted inside the process, which answered and serves the next press at once."""
    assert r.warm_pid == pid and r.warm_ready(), f"the warm process {r.last_end}"
    job = tiny(r)
    assert job.pid == pid and not job.notice and "process_note" not in job.result


def next_press_works(r: Runner, pid: int) -> None:
    """After a stop: the same process serves the next press. The Stop is raised at the engine's safe points only
    (engine/dispatch.py's safe_point: before an op that computes a tensor), never from a signal handler under a C++ frame, where
    torch aborted (SIGABRT, 2 of 28 time-limit stops beside two busy loops before; 0 of 95 since,
    benchmarks/stress_stops.py): a process that died, or did not answer within the grace, fails."""
    next_press_is_served_by_the_same_process(r, pid)


def next_press_starts_a_new_one_and_says_so(r: Runner, old_pid: int, why: str) -> None:
    assert not _pid_alive(old_pid)  # the stopped process is gone (reaped), not left running
    job = tiny(r)
    assert job.warm and job.pid != old_pid and job.result["process"]["build"] == 1
    assert job.notice.startswith("This build started a new measurement process") and why in job.notice, job.notice
    assert job.result["process_note"] == job.notice  # the page shows it beside the result (pages/verify.py)


def test_saved_bytes_leave_nothing_behind():
    """A process that stays warm must not keep each request's model: the saved-tensor forward's pack hook held every
    saved tensor and every saved variable held the hook, a cycle through C++ that gc cannot see."""
    from torch._subclasses.fake_tensor import FakeTensor

    def fakes() -> dict[int, object]:  # type(): no module __getattr__
        gc.collect()
        return {id(o): o for o in gc.get_objects() if issubclass(type(o), FakeTensor)}

    before = fakes()  # what other tests in this process left (xdist runs many in one): not this measurement's
    engine.measure(maker(TINY_CFG, "reference", "eager"), TINY_CFG.vocab_size,
                   engine.Run(Workload(2, 16, "float32", "eager", device="cpu")), what=("saved",))
    left = [o for k, o in fakes().items() if k not in before]
    assert not left, left


def test_two_sessions_at_once_are_served_one_after_the_other_by_the_same_process(warm):
    pid = ready(warm)
    go = threading.Barrier(2)
    jobs_: list = []

    def press(seq_len: int) -> None:
        go.wait()  # both sessions press at the same moment
        jobs_.append(warm.submit(request(TINY_CFG, seq_len=seq_len).to_dict(), memory_bytes=700 * MIB, timeout_s=WAIT_S))

    threads = [threading.Thread(target=press, args=(s,)) for s in (8, 16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for job in jobs_:
        assert warm.wait(job, WAIT_S) and job.state == "done", job.message
    first, second = sorted(jobs_, key=lambda j: j.started)
    assert second.started >= first.ended  # one at a time
    assert first.pid == second.pid == pid and warm.warm_pid == pid  # no new process: PyTorch imported once
    assert second.result["process"]["build"] == first.result["process"]["build"] + 1
    assert {j.result["measurement"]["seq_len"] for j in jobs_} == {8, 16}
    assert not first.notice and not second.notice
    assert second.result["process"]["rss"] < warm.bound_bytes  # at rest it stays under its bound
    assert 0 < second.result["peak_rss"] < 700 * MIB  # its own peak during that build (VmHWM reset per request)


def test_a_real_tensor_request_runs_in_a_fresh_process(warm):
    pid = ready(warm)
    job = warm.submit(request(TINY_CFG, real=True).to_dict(), memory_bytes=700 * MIB, timeout_s=WAIT_S)
    assert warm.wait(job, WAIT_S) and job.state == "done", job.message
    assert not job.warm and job.pid != pid and not _pid_alive(job.pid)  # its real memory went back with it
    assert job.result["measurement"]["fake"] is False and "process" not in job.result
    assert warm.warm_pid == pid  # the warm process stays (this machine has the memory for both)


def test_cancel_mid_run(warm):
    pid = ready(warm)
    job = mid_run(warm)
    warm.cancel(job)
    assert warm.wait(job, WAIT_S) and job.state == "cancelled" and job.message == "Cancelled."
    next_press_works(warm, pid)


def test_time_limit_mid_run(warm):
    pid = ready(warm)
    job = mid_run(warm, timeout_s=1)
    assert warm.wait(job, WAIT_S) and job.state == "timeout" and "ALBERT_EXPLORER_VERIFY_TIMEOUT_S" in job.message
    next_press_works(warm, pid)


def test_closed_session_mid_run(warm):
    pid = ready(warm)
    open_session = [True]
    job = mid_run(warm, alive=lambda: open_session[0])
    open_session[0] = False  # the browser went away mid-run
    assert warm.wait(job, WAIT_S) and job.state == "cancelled" and "session" in job.message
    next_press_works(warm, pid)


def test_a_build_that_does_not_answer_its_stop_is_ended_after_the_grace(warm, monkeypatch):
    """The fallback: a process that cannot answer a Cancel (hung in a C call; here stopped with SIGSTOP) is ended
    once runner.STOP_GRACE_S has passed, the job ends cancelled, and the next press starts a new one and says why."""
    from albert_core.processes import parent_queue as runner

    monkeypatch.setattr(runner, "STOP_GRACE_S", 0.5)  # the grace itself is not what is tested: its end is
    pid = ready(warm)
    job = mid_run(warm)
    os.kill(pid, signal.SIGSTOP)  # it reads no more of its stdin: the Stop stays unanswered
    try:
        warm.cancel(job)
        assert warm.wait(job, WAIT_S) and job.state == "cancelled" and job.message == "Cancelled."
    finally:
        if _pid_alive(pid):
            os.kill(pid, signal.SIGCONT)
    assert warm.last_end == "was stopped when its build was cancelled"
    monkeypatch.undo()
    next_press_starts_a_new_one_and_says_so(warm, pid, "the last one was stopped when its build was cancelled")


def test_a_process_that_dies_while_its_build_is_stopped_is_described_as_such(warm, monkeypatch):
    """What a SIGABRT while the build unwinds a Stop looks like to the runner (its output ends instead of an answer),
    made certain: the process is held (SIGSTOP) and killed the moment the runner has sent its Stop."""
    from albert_core.processes.parent_queue import WarmProcess

    pid = ready(warm)
    send = WarmProcess.send

    def send_then_die(w: WarmProcess, message: dict) -> bool:
        sent = send(w, message)
        if "stop" in message:
            os.kill(w.pid, signal.SIGKILL)
        return sent

    monkeypatch.setattr(WarmProcess, "send", send_then_die)
    job = mid_run(warm)
    os.kill(pid, signal.SIGSTOP)  # it cannot answer the Stop before it dies
    warm.cancel(job)
    assert warm.wait(job, WAIT_S) and job.state == "cancelled" and job.message == "Cancelled."
    assert warm.last_end == "was killed (SIGKILL) while its build was being stopped"
    monkeypatch.undo()
    next_press_starts_a_new_one_and_says_so(warm, pid, "the last one was killed (SIGKILL) while its build was being")


def test_sigkill_mid_run(warm):
    pid = ready(warm)
    job = mid_run(warm)
    os.kill(pid, signal.SIGKILL)  # what the kernel's OOM killer does when the machine runs out first
    assert warm.wait(job, WAIT_S) and job.state == "failed"
    assert "killed (SIGKILL) during this build" in job.message and "ALBERT_EXPLORER_MEMORY_BUDGET_MB" in job.message
    assert "starts a new measurement process" in job.message
    starting = jobs.Job({}, 700 * MIB, 180, warm=True, phase="starting",
                        notice="This build started a new measurement process (PyTorch imported first): the last one "
                               "was killed (SIGKILL) during a build.")
    line = jobs.status(starting)  # what the next press's page shows while the new process imports
    assert "in a separate process, which is starting (the last one was killed (SIGKILL) during a build)" in line
    next_press_starts_a_new_one_and_says_so(warm, pid, "the last one was killed (SIGKILL) during a build")


def test_its_bounds_follow_the_size_it_measures_of_itself_once_ready(warm):
    """Issue 56: the bounds are not constants tuned to one build of PyTorch (the CUDA build holds twice the CPU
    build's memory at rest): the process says its size and its torch once ready, and the bound past which it is
    replaced, and the floor under which no build starts, follow from that size."""
    import torch

    assert Runner(warm=True).bound_bytes == WARM_MAX_RSS_BYTES  # none measured yet: the CPU build's bound
    ready(warm)
    rest = warm.rest_rss
    assert rest is not None and rest == warm._warm.ready_info["rss"]
    assert warm._warm.ready_info["torch"] == {"version": torch.__version__, "cuda": torch.version.cuda}
    assert warm.max_rss_bytes is None and warm.bound_bytes == rest + WARM_GROWTH_BYTES
    floor = rest + parent_plan.FAKE_BASE_BYTES
    assert parent_plan.floor_error(floor, rest) is None
    assert f"{floor / MIB:,.0f} MiB a process with PyTorch needs" in parent_plan.floor_error(floor - MIB, rest)


def test_replaced_past_its_memory_bound_and_after_n_requests(warm):
    pid = ready(warm)
    bound, limit = warm.max_rss_bytes, warm.max_requests
    try:
        warm.max_rss_bytes = 1 * MIB  # any process is past this after a build
        tiny(warm)  # the page has its result; the process settles after answering, then is replaced (before any job)
        assert warm.wait_until(lambda: warm.warm_pid is None and not warm.settling, WAIT_S), warm.last_end
        assert not _pid_alive(pid)  # ended and reaped
        assert "past this server's bound of 1 MiB, and was replaced" in warm.last_end
        warm.max_rss_bytes = bound
        next_press_starts_a_new_one_and_says_so(warm, pid, "MiB resident after a build, past this server's bound")
        warm.max_requests = 2  # the new process has served one build: the next one is its last
        second = tiny(warm)
        assert second.result["process"]["build"] == 2
        assert warm.wait_until(lambda: warm.warm_pid is None and not warm.settling, WAIT_S), warm.last_end
        assert not _pid_alive(second.pid)
        assert warm.last_end == "was replaced after 2 builds, this server's limit for one process"
        warm.max_requests = limit
        next_press_starts_a_new_one_and_says_so(warm, second.pid, "the last one was replaced after 2 builds")
    finally:
        warm.max_rss_bytes, warm.max_requests = bound, limit


def test_a_real_tensor_build_that_needs_the_warm_process_memory_gets_it(warm, monkeypatch):
    """On a small server (Community Cloud's 1 GB) the budget counts what the warm process holds; a real-tensor build
    that needs it ends the warm process first (the next fake-tensor press starts a new one and says so)."""
    from albert_core.processes import parent_queue as runner

    pid = ready(warm)
    monkeypatch.setattr(runner, "available_bytes", lambda: 0)  # this server has nothing free beside it
    job = warm.submit(request(TINY_CFG, real=True).to_dict(), memory_bytes=700 * MIB, timeout_s=WAIT_S)
    assert warm.wait(job, WAIT_S) and job.state == "done" and not job.warm, job.message
    assert not _pid_alive(pid) and warm.warm_pid is None
    assert warm.last_end == "was ended to give its memory to a real-tensor build"
    monkeypatch.undo()
    next_press_starts_a_new_one_and_says_so(warm, pid, "the last one was ended to give its memory to a real-tensor")


def test_the_setting_turns_the_warm_process_off(monkeypatch):
    for raw, on in (("0", False), ("off", False), ("False", False), ("1", True), ("yes", True)):
        monkeypatch.setenv(jobs.WARM_ENV, raw)
        assert jobs.warm_enabled() is on, raw
    monkeypatch.delenv(jobs.WARM_ENV)
    assert jobs.warm_enabled()  # on by default


def test_a_press_before_the_prewarm_is_due_starts_the_process_at_once():
    """The server asks for the warm process a few seconds after its first page (jobs.PREWARM_DELAY_S: the browser
    draws first); a press before then does not wait for it: the job starts the process, and the prewarm, no longer
    needed, starts no second one."""
    r = Runner(warm=True)
    try:
        r.prewarm(delay_s=3600)  # due in an hour: never, within this test
        assert r.warm_pid is None and r.warm_starts == 0
        tiny(r)
        assert r.warm_starts == 1 and r.warm_pid is not None
        tiny(r)  # served by the same process
        assert r.warm_starts == 1
    finally:
        r.close()


def test_a_cancel_in_the_start_or_first_build_of_a_process_a_press_started_leaves_it_for_the_next_press():
    """jobs.PREWARM_DELAY_S holds the warm process back while a first visit's browser draws; a press before then
    starts the process itself. A Cancel while that process imports its libraries (phase "starting"), then one in
    its first build ("measuring"), each stop their job only: the process goes on and serves the next press (a Cancel
    in a first build once ended the process, when the Stop was raised from a signal handler; docs/benchmarks.md)."""
    r = Runner(warm=True)
    try:
        r.prewarm(delay_s=3600)  # not due within this test: the press starts the process
        pid = None
        for phase in ("starting", "measuring"):
            job = r.submit(LONG, memory_bytes=700 * MIB, timeout_s=WAIT_S)
            assert r.wait_until(lambda j=job, p=phase: j.finished or j.phase == p, WAIT_S) and not job.finished, phase
            pid = pid or r.warm_pid
            r.cancel(job)
            assert r.wait(job, WAIT_S) and job.state == "cancelled" and job.message == "Cancelled.", job.message
            assert r.warm_pid == pid and r.warm_starts == 1, phase
        nxt = tiny(r)
        assert nxt.pid == pid and r.warm_starts == 1 and not nxt.notice and "process_note" not in nxt.result
    finally:
        r.close()


def test_pages_in_apptest_start_no_measurement_process(monkeypatch):
    """app.py starts the warm process once a real server has served a page; AppTest's Runtime is a mock (a MagicMock
    with Runtime's spec, which passes isinstance), and taking it for a server would start one in every test process
    that opens a page."""
    from test_app_pages import open_app

    asked: list[Runner] = []
    monkeypatch.setattr(Runner, "prewarm", lambda self, delay_s=0.0: asked.append(self))
    at = open_app()
    assert not at.exception and asked == []


def test_verify_asks_for_the_warm_process_at_once_other_pages_after_their_first_draw(monkeypatch):
    """A shared Verify link's first press must not wait for the measurement process's imports: opened at /verify,
    the app asks for it with no delay; any other page first leaves the browser PREWARM_DELAY_S to draw."""
    from test_app_pages import goto, open_app

    from ui import plots

    asked: list[float] = []
    monkeypatch.setattr(jobs, "prewarm", lambda delay_s=jobs.PREWARM_DELAY_S: asked.append(delay_s))
    monkeypatch.setattr(plots, "view", lambda: {"main": 800, "stacked": False})  # a run at the browser's width
    at = open_app()
    assert not at.exception and asked and set(asked) == {jobs.PREWARM_DELAY_S}
    asked.clear()
    goto(at, "verify")
    assert not at.exception and asked and set(asked) == {0.0}
