"""Fake-tensor Verify results kept for the same request made again (issue 52: "a result already measured for the
same config and workload may be served again, said so"). Fake tensors hold no values: a build of the same request
by the same code measures the same bytes. The runner (processes/parent_queue.py) asks before queueing and keeps what ends
well; the page says a result was served again ("served_again": when it was measured, how long that took).
"""

from __future__ import annotations

import collections
import copy
import json
import time
from typing import Any

MEMO_SIZE = 32  # results the app keeps (ui/jobs.py: Runner(memo=MEMO_SIZE))
FAILED_KEYS = ("measure_error", "count_error", "out_of_memory", "failed", "stopped", "points_error")


def memo_key(request: dict[str, Any]) -> str | None:
    """The key under which a request's result may be served again: its JSON (config, source, workload, count and
    measure), for a fake-tensor Verify build only. A real-tensor build is measured anew each time (its memory is
    this machine's, now), and the Memory page's points are not kept (its chart does not say where a point came
    from)."""
    if request.get("real") or "points" in request:
        return None
    return json.dumps(request, sort_keys=True)


class Memo:
    """The last `size` results by request, least lately used dropped first (size 0: none kept)."""

    def __init__(self, size: int = 0):
        self.size = size
        self._kept: collections.OrderedDict[str, tuple[dict[str, Any], float, float]] = collections.OrderedDict()

    def get(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """A copy of the result kept for request, with "served_again", or None."""
        key = memo_key(request)
        hit = self._kept.get(key) if key is not None else None
        if hit is None or key is None:
            return None
        self._kept.move_to_end(key)
        result, measured_at, seconds = hit
        return copy.deepcopy(result) | {"served_again": {"measured_at": measured_at, "seconds": seconds}}

    def put(self, request: dict[str, Any], result: dict[str, Any] | None, seconds: float) -> None:
        """Keep a build's result (one that ended well) for the same request made again."""
        key = memo_key(request) if self.size else None
        if key is None or not result or any(result.get(k) for k in FAILED_KEYS):
            return
        self._kept[key] = (copy.deepcopy(result), time.time(), seconds)
        self._kept.move_to_end(key)
        while len(self._kept) > self.size:
            self._kept.popitem(last=False)
