"""The warm measurement process from the runner's side (albert_core.processes.parent_queue): start it, read its lines, send it
requests, end it. `python -m albert_core.processes.child_warm` is the other side.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .parent_memory import _rss_of

ROOT = Path(__file__).resolve().parents[2]
POLL_S = 0.1
Outcome = tuple[str, "dict[str, Any] | None", str]  # (state, result, message) of a finished job


class WarmProcess:
    """The warm measurement process, `python -m albert_core.processes.child_warm`, from the runner's side.

    A thread reads its stdout: the ready line marks it ready at once (on_ready(self) is called, from that thread),
    every other line waits in `lines` for the runner thread; the end of its output puts None there.
    """

    def __init__(self, command: list[str], on_ready: Callable[[WarmProcess], None] | None = None):
        self.proc = subprocess.Popen(command, cwd=ROOT, env=_child_env(), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.pid = self.proc.pid
        self.settling = False  # its settled line is still to come (Runner._settle_warm)
        self.ready = False
        self.served = 0  # requests answered
        self.started = time.monotonic()
        self.import_seconds: float | None = None
        self.ready_info: dict[str, Any] = {}  # its ready line: seconds and CPU seconds of the imports and warm-up
        self.on_ready = on_ready
        self._woken = threading.Event()  # set when it is ready, or its output ended
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stderr: collections.deque[str] = collections.deque(maxlen=20)  # its last lines, for a message
        threading.Thread(target=self._drain, name=f"albert-warm-stderr-{self.pid}", daemon=True).start()
        threading.Thread(target=self._read, name=f"albert-warm-stdout-{self.pid}", daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:  # a pipe nobody reads fills at 64 KiB and stops the process
            self.stderr.append(raw.decode(errors="replace").rstrip())

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                msg = json.loads(raw)
            except ValueError:
                break  # not the protocol: taken as a dead process (it is ended)
            if msg.get("ready") and not self.ready:
                self.ready_info, self.import_seconds, self.ready = msg, msg.get("seconds"), True
                self._woken.set()
                if self.on_ready is not None:
                    self.on_ready(self)
            else:
                self.lines.put(msg)
        self.lines.put(None)
        self._woken.set()

    def wait_ready(self, stop: Callable[[], Outcome | None]) -> tuple[bool, Outcome | None]:
        """(True, None) once it is ready, (False, stop()'s reason) when stop() gives one first, (False, None) when
        its output ended first (it died)."""
        while not self._woken.wait(POLL_S):
            reason = stop()
            if reason:
                return False, reason
        return self.ready, None

    def read(self, stop: Callable[[], Outcome | None]) -> tuple[dict[str, Any] | None, Outcome | None]:
        """(the next line as a dict, None), (None, stop()'s reason) when stop() gives one first, or (None, None)
        when the process closed its stdout (it died)."""
        while True:
            try:
                return self.lines.get(timeout=POLL_S), None
            except queue.Empty:
                reason = stop()
                if reason:
                    return None, reason

    def send(self, request: dict[str, Any]) -> bool:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def rss(self) -> int:
        return _rss_of(self.pid) if self.proc.poll() is None else 0

    def kill(self) -> None:
        _kill(self.proc)
        self.proc.wait()

    def close(self) -> None:
        """Let it exit (stdin closed: its loop ends), killed if it has not within 10 s, or at once while it is still
        importing (it reads stdin only once ready)."""
        if not self.ready:
            self.kill()
            return
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()


def _child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the child leads its own process group (start_new_session)
    except (ProcessLookupError, PermissionError):
        proc.kill()
