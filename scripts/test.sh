#!/usr/bin/env bash
# Set up and run every test: venv + dev requirements, Debian's Chromium for the browser tests, then the linter
# (ruff check .) and the type checker (mypy: albert_core strict, charts, ui; pyproject.toml), then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# --no-compile: pip byte-compiles every .py it installs (torch, transformers: thousands); Python compiles the ones
# imported when first imported instead (measured in a new venv: 4 min 01 s -> 1 min 51 s, the machine busy)
.venv/bin/python -m pip install -q --no-compile --disable-pip-version-check -r requirements-dev.txt
# ... and keeps what it compiled: with PYTHONDONTWRITEBYTECODE set (this machine's image sets it) every process
# would compile torch, transformers and streamlit from source again: `import torch, transformers, streamlit`
# 9.6 s -> 3.9 s per process once written, and the suite starts hundreds (servers, build processes, the CLI)
unset PYTHONDONTWRITEBYTECODE
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq chromium >/dev/null
  else
    echo "Browser tests need Debian's chromium: sudo apt-get install -y chromium" >&2
  fi
fi
.venv/bin/python -m ruff check .
# mypy (files and strictness: [tool.mypy] in pyproject.toml) beside pytest, not before it: on a fresh clone (no
# cache) it takes 17 s of one core, and before pytest the other core sat idle for them; its words and its verdict
# come at the end (pytest keeps both cores 94% busy: 910 CPU s in a 482 s run, /proc/stat, 2026-12-05)
mypy_out=$(mktemp)
.venv/bin/python -m mypy >"$mypy_out" 2>&1 &
mypy_pid=$!
# two workers (the machine's two cores); each worker starts one Chromium and one server for the browser modules it
# runs (tests/browser/conftest.py; a module that presses Verify's build starts its own), so they run on both workers
# one OpenMP thread per process: the tests' tensors are tiny, and two workers' torch thread pools (plus the
# browser tests' build processes) spinning on two cores cost CPU (tests/test_engine.py: -12% CPU time)
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
status=0
.venv/bin/python -m pytest -n "${PYTEST_WORKERS:-2}" "$@" || status=$?
mypy_status=0
wait "$mypy_pid" || mypy_status=$?
cat "$mypy_out"
rm -f "$mypy_out"
if [ "$mypy_status" -ne 0 ]; then
  echo "mypy failed (exit $mypy_status): see above" >&2
  [ "$status" -ne 0 ] || status=$mypy_status
fi
exit "$status"
