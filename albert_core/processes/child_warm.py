"""The warm measurement process (`python -m albert_core.processes.child_warm`): torch and transformers imported
once, then one JSON request per line on stdin, each answered on stdout as child_request.answer answers it, until stdin
closes; a Stop from the runner (Cancel, the time limit, a closed session) is raised at the engine's next safe point
(engine/dispatch.py). albert_core.processes.parent_queue starts it, replaces it and speaks its protocol.
"""

from __future__ import annotations

import json
import os
import queue
import sys
from typing import Any

from .child_request import _cpu_seconds, answer
from .limits import MIB, _die_with_parent, _first_to_go, _peak_rss, _rss, _start_threads, data_cap


class Stopped(BaseException):
    """Raised in the warm process's main thread when the runner stops the running request (Cancel, the time limit,
    a closed session). A BaseException, so no `except Exception` on the way (the engine's, torch's) keeps it."""


def serve() -> int:
    """Import once, then answer requests one at a time (albert_core.processes.parent_warm.WarmProcess is the other side).

    Protocol, one JSON object per line each way. Out: first {"ready": true, "pid", "rss", "seconds", "torch":
    {"version", "cuda"}, ...} once torch and transformers are imported ("rss": its size at rest, which sets the
    runner's bounds); then per request {"id", "result", "rss": resident bytes after it, "retire":
    why this process should not serve another, or null} and, unless it retires, {"settled": id, "rss": resident
    bytes once it has given back what the build left (_settle)}. In: a request as `answer` takes it plus "id"
    and "memory_mb" (the cap for this request), or {"stop": id}: the request with that id is interrupted
    (Stopped, raised in the main thread at the engine's next safe point: before an op, between a build's parts) and
    answered {"stopped": true}; the process then checks that the interrupted build left nothing set (torch's mode
    stacks, grad mode, autocast, saved-tensor hooks, the engine's patch of transformers' is_tracing) and retires if it
    did. (A Stopped that lands in a finalizer, which Python drops, is raised again: on_unraisable; should none land,
    the runner ends the process when no answer comes within its grace period.) Stdout carries only these lines: anything a
    library prints goes to stderr. The process ends when stdin closes, or after a reply that says retire.
    """
    import time

    t0 = time.perf_counter()
    reply = _protocol_out()
    niced = _nice(IMPORT_NICE)  # the imports yield the CPU to the server and the first visit's browser
    _start_threads()  # imports torch, and starts its threads before any cap (see _start_threads)
    t1, cpu1 = time.perf_counter(), _cpu_seconds()
    warm_up()
    if niced:
        _nice(0)  # measured at the server's own priority where this process may go back (root, CAP_SYS_NICE)
    state: dict[str, Any] = {"current": None, "stop": None}  # the running request's id; the id asked to stop
    lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
    _listen(state, lines)
    import torch

    _say(reply, {"ready": True, "pid": os.getpid(), "rss": _rss(), "seconds": time.perf_counter() - t0,
                 "torch": {"version": torch.__version__, "cuda": torch.version.cuda},
                 "nice": os.getpriority(os.PRIO_PROCESS, 0),
                 "import_cpu_seconds": cpu1, "warm_up_seconds": time.perf_counter() - t1,
                 "warm_up_cpu_seconds": _cpu_seconds() - cpu1})
    while (request := lines.get()) is not None:
        answered = _serve_one(request, state)
        _say(reply, answered)
        if answered["retire"]:
            return 0
        _settle()  # after the answer, so the page has its result first (0.2 s a build here, 2026-12-04)
        _say(reply, {"settled": answered["id"], "rss": _rss()})
    return 0


def _listen(state: dict[str, Any], lines: queue.Queue[dict[str, Any] | None]) -> None:
    """Stdin read on a thread of its own (requests into `lines`, a stop into `state`), the Stop raised at the
    engine's next safe point in the main thread, and a Stop that lands in a finalizer asked again."""
    import threading

    from ..engine import dispatch

    def safe_point() -> None:  # the engine calls it in the main thread, where an exception passes through torch
        if state["current"] is not None and state["stop"] == state["current"]:
            state["current"] = None  # once per request: the unwinding's own ops are not interrupted again
            raise Stopped

    def read() -> None:  # owns stdin: requests go to the main thread, a stop to its next safe point
        for raw in sys.stdin:
            if raw.strip():
                msg = json.loads(raw)
                if "stop" in msg:
                    state["stop"] = msg["stop"]
                else:
                    lines.put(msg)
        lines.put(None)

    def on_unraisable(u: Any) -> None:
        """A Stopped raised where Python drops it (a safe point reached inside a finalizer: a weakref callback, a
        __del__) would let the build run on past the runner's grace period, which then ends this process: ask
        again, at the next safe point."""
        if isinstance(u.exc_value, Stopped) and state["stop"] is not None:
            state["current"] = state["stop"]  # the stopped request is still running: it was raised inside it
            return
        default_unraisable(u)

    default_unraisable = sys.unraisablehook
    sys.unraisablehook = on_unraisable
    dispatch.safe_point = safe_point  # the hook engine/dispatch.py calls before each op that computes
    threading.Thread(target=read, name="albert-warm-stdin", daemon=True).start()


IMPORT_NICE = 10  # the warm process's priority while it imports (it starts right after the server's first page)


def _nice(value: int) -> bool:
    """Set this process's nice value; False where it may not (lowering it needs CAP_SYS_NICE: an unprivileged
    process then stays at IMPORT_NICE, which on an otherwise idle server changes nothing, and leaves the pages
    the CPU first while a build runs)."""
    try:  # Linux sets a thread's priority (PRIO_PROCESS with a tid): each of this process's threads, torch's too
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tids = [0]
    try:
        for tid in tids:
            os.setpriority(os.PRIO_PROCESS, tid, value)
        return True
    except (PermissionError, OSError, AttributeError):
        return False


def _serve_one(request: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    """One request in the warm process, under its cap, interruptible while it runs (state["current"] is its id);
    the reply line: {"id", "result", "rss", "retire"} (serve settles the process after sending it)."""
    rid = request.pop("id", None)
    cpu = _cpu_seconds()
    cap = int(request.pop("memory_mb", 0)) * MIB
    _reset_peak()
    retire = None
    try:
        try:
            state["current"] = rid
            if rid is not None and state["stop"] == rid:  # stopped before it began
                raise Stopped
            if cap:
                _soft_limit(data_cap(cap))  # the cap on resident bytes, as RLIMIT_DATA counts (process.data_cap)
            out = answer(request)
        finally:
            state["current"] = None
            _soft_limit(None)
    except Stopped:  # raised at the latest as the finally above began: its cap may still be set
        _soft_limit(None)
        out = {"stopped": True}
        left = _left_set()
        retire = f"was replaced: a stopped build left {left} set" if left else None
    except MemoryError:
        out = {"out_of_memory": True}
    except Exception as e:  # noqa: BLE001 - a bug must reach the page as a message; this process then retires
        out = {"failed": f"{type(e).__name__}: {str(e)[:300]}"}
        retire = "stopped on an error in its last build"
    if out.get("out_of_memory"):
        retire = "ran past its memory cap in its last build"
    out["peak_rss"] = _peak_rss()
    out["cpu_seconds"] = _cpu_seconds() - cpu  # this request's
    return {"id": rid, "result": out, "rss": _rss(), "retire": retire}


def _left_set() -> str:
    """What an interrupted build left set in this process ("" when nothing): the next build would run under it."""
    import torch

    left = [name for name, bad in (
        ("a torch dispatch mode", torch._C._len_torch_dispatch_stack() != 0),
        ("a torch function mode", torch._C._len_torch_function_stack() != 0),
        ("grad mode off", not torch.is_grad_enabled()),
        ("autocast", torch.is_autocast_enabled("cpu")),
        ("saved-tensor hooks", torch._C._autograd._top_saved_tensors_default_hooks(False) is not None),
        ("the engine's is_tracing patch", _tracing_patched())) if bad]
    return ", ".join(left)


def _tracing_patched() -> bool:
    return any(getattr(getattr(sys.modules.get(m), "is_tracing", None), "__name__", "") == "real_paths"
               for m in ("transformers.masking_utils", "transformers.modeling_attn_mask_utils"))


def warm_up() -> None:
    """Import transformers' model code for every family (BertModel ... ModernBertModel) at start, not at each
    family's first build: 0.25 s here. (A first small run of the engine as well made no difference to the first
    request that a busy 2-core machine could show, 2026-12-03, and cost about 1 s of CPU per start.)"""
    import gc

    from ..families import family
    from ..names import FAMILIES

    for name in FAMILIES:
        family(name).hf_classes(False)
    _settle()
    gc.freeze()  # the imports live as long as the process: each request's full collection (_settle) then walks only
    # what requests made (0.19 s -> 0.01 s a collection here, 2026-12-06), as serve.py does for the server


def _protocol_out() -> Any:
    """A private copy of stdout for the protocol's lines; fd 1 itself then points at stderr, so a library's
    print() cannot break a line the runner reads."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    return out


def _say(out: Any, obj: dict[str, Any]) -> None:
    out.write(json.dumps(obj) + "\n")
    out.flush()


def _reset_peak() -> None:
    """Start VmHWM again from the current RSS (Linux >= 4.0: "5" to /proc/self/clear_refs), so each request's
    peak_rss is its own, not the highest of this process's life."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _soft_limit(limit_bytes: int | None) -> None:
    """The request's cap as RLIMIT_DATA's soft limit (None: none); the hard limit stays as it is, so the next
    request can raise it again."""
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    soft = resource.RLIM_INFINITY if limit_bytes is None else limit_bytes
    if hard != resource.RLIM_INFINITY:
        soft = hard if soft == resource.RLIM_INFINITY else min(soft, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def _settle() -> None:
    """Give back what a request left: Python's cycles, FakeTensorMode's class-wide dispatch cache, and the C
    heap's free pages (glibc malloc_trim)."""
    import gc

    gc.collect()
    try:
        from torch._subclasses.fake_tensor import FakeTensorMode

        FakeTensorMode.cache_clear()
    except (ImportError, AttributeError):
        pass
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def main() -> int:
    """`python -m albert_core.processes.child_warm`: the process set up as a one-shot build process (child_request) is, then serve()."""
    from ..estimate.serving import skip_torchao

    _die_with_parent()
    _first_to_go()
    skip_torchao()  # never quantizes: transformers' torchao import (0.4 s, messages on stderr) is skipped
    return serve()


if __name__ == "__main__":
    sys.exit(main())
