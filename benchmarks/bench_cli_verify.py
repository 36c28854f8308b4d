"""How `python -m albert_core verify` spends its time: interpreter and albert_core, torch, transformers, the build,
each of the engine's measurements; and the whole command's wall time, as it runs now and with torchao imported as
transformers imported it before issue 27 (each in a fresh interpreter, medians of --repeats runs).

Usage: .venv/bin/python benchmarks/bench_cli_verify.py [--preset bert-base] [--batch-size 8] [--seq-len 512]
       [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from timing import machine_line  # noqa: E402

# One run of the command in a fresh interpreter, its phases timed as the command meets them: albert_core's CLI
# (no torch), torch, transformers' model code (modeling_utils: what every build imports), then the command
# itself, whose --json output names the engine's build and measurement seconds.
SPLIT = """
import io, json, sys, time, contextlib
t0 = time.perf_counter()
from albert_core.cli import main as cli
from albert_core.estimate.serving import skip_torchao
if not {old!r}:
    skip_torchao()
t1 = time.perf_counter()
import torch
if {old!r}:
    import torchao  # what transformers imported on every build before issue 27 (its "torch" figure includes it)
t2 = time.perf_counter()
import transformers.modeling_utils
t3 = time.perf_counter()
out = io.StringIO()
with contextlib.redirect_stdout(out):
    assert cli.main({argv!r}) == 0
t4 = time.perf_counter()
d = json.loads(out.getvalue())
print(json.dumps({{"albert_core": t1 - t0, "torch": t2 - t1, "transformers": t3 - t2, "command": t4 - t3,
                  "engine": d["engine_timings"], "total": t4 - t0}}))
"""


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="bert-base")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    argv = ["verify", "--preset", args.preset, "--batch-size", str(args.batch_size), "--seq-len", str(args.seq_len)]
    print(machine_line())
    print(f"python -m albert_core {' '.join(argv)}; medians of {args.repeats} fresh interpreters\n")
    for old in (False, True):
        runs = []
        for _ in range(args.repeats):
            done = subprocess.run([sys.executable, "-c", SPLIT.format(old=old, argv=[*argv, "--json"])], cwd=ROOT,
                                  capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                raise SystemExit(done.stderr[-2000:])
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        eng = {k: median([r["engine"][k] for r in runs]) for k in runs[0]["engine"]}
        rest = median([r["command"] - sum(r["engine"].values()) for r in runs])
        label = "torchao imported (as before)" if old else "now (torchao skipped)"
        print(f"{label}: total {median([r['total'] for r in runs]):.2f} s = albert_core {median([r['albert_core'] for r in runs]):.2f}"
              f" + torch {median([r['torch'] for r in runs]):.2f} + transformers {median([r['transformers'] for r in runs]):.2f}"
              f" + build {eng['build']:.2f} + " + " + ".join(f"{k} {v:.2f}" for k, v in eng.items() if k != "build")
              + f" + the rest of the command {rest:.2f} (estimates, the model's own module import)")
    walls = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "albert_core", *argv], cwd=ROOT, capture_output=True, text=True,
                              timeout=900)
        walls.append(time.perf_counter() - t)
        stderr = done.stderr.strip()
    print(f"\nthe command itself: {median(walls):.2f} s wall (median of {args.repeats}); its stderr: "
          f"{stderr[:300] if stderr else '(empty)'}")


if __name__ == "__main__":
    main()
