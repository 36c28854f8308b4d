"""A fake-tensor build's result served again for the same request (issue 52: "a result already measured for the
same config and workload may be served again, said so"); a real-tensor build, another request, a failed one and a
Runner without a memo build anew. The child is a stand-in worker (a plain Python that answers JSON and counts its
runs in a file), so the test starts no torch."""

from __future__ import annotations

import json
import sys

from albert_core.processes.parent_queue import Runner
from ui.jobs import served_again

MIB = 1 << 20
WAIT_S = 120

CHILD = """
import json, sys
req = json.loads(sys.stdin.read())
with open(req["log"], "a") as f:
    f.write(json.dumps(req) + "\\n")
out = {"measurement": {"total": req["n"] * 1000}} if req["n"] >= 0 else {"measure_error": "no"}
sys.stdout.write(json.dumps(out))
"""


def _runs(log) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def _press(r: Runner, **req):
    job = r.submit(req, memory_bytes=100 * MIB, timeout_s=WAIT_S)
    assert r.wait(job, WAIT_S) and job.state == "done", job.message
    return job


def test_the_same_fake_request_is_served_again_and_says_so(tmp_path):
    log = tmp_path / "runs.txt"
    r = Runner([sys.executable, "-c", CHILD], memo=2)
    first = _press(r, log=str(log), n=1)
    again = _press(r, log=str(log), n=1)
    assert _runs(log) == 1  # no second build
    assert "served_again" not in first.result
    assert again.result["measurement"] == first.result["measurement"] == {"total": 1000}
    info = again.result["served_again"]
    assert info["seconds"] >= 0 and "Served again" in served_again(info)
    again.result["measurement"]["total"] = 0  # a page that changes what it got changes no later answer
    assert _press(r, log=str(log), n=1).result["measurement"]["total"] == 1000
    _press(r, log=str(log), n=2)  # another request: built
    _press(r, log=str(log), n=1, real=True)  # real tensors: measured anew, every time
    _press(r, log=str(log), n=1, real=True)
    _press(r, log=str(log), n=-1)  # a refusal is not kept
    _press(r, log=str(log), n=-1)
    assert _runs(log) == 6
    _press(r, log=str(log), n=3)  # a memo of 2: n=1 (used least lately) goes
    _press(r, log=str(log), n=1)
    assert _runs(log) == 8
    r.close()


def test_without_a_memo_every_press_builds(tmp_path):
    log = tmp_path / "runs.txt"
    r = Runner([sys.executable, "-c", CHILD])
    for _ in range(2):
        assert "served_again" not in _press(r, log=str(log), n=1).result
    assert _runs(log) == 2
    json.loads(log.read_text().splitlines()[0])
    r.close()
