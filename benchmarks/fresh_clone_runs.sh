#!/usr/bin/env bash
# The test command's "same commit, same outcome" (issue 25): N fresh clones of one commit, each running CI's command
# (`CI=true bash .ci/run`: a new .venv, the installs, ruff, mypy, pytest), one after the other; the last BUSY of them
# beside one competing busy loop on a core (`while :; do :; done &`). One line per run: wall time, pytest's summary.
# Chromium must already be installed (apt-get install chromium), as CI's machine has it.
# Usage: bash benchmarks/fresh_clone_runs.sh [COMMIT] [RUNS=7] [BUSY=2] [OUT=/tmp/fresh_clone_runs]
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
rev=$(git -C "$repo" rev-parse --short "${1:-HEAD}")
runs=${2:-7} busy_runs=${3:-2} out=${4:-/tmp/fresh_clone_runs}
mkdir -p "$out"
for n in $(seq 1 "$runs"); do
  dir="$out/clone$n"; rm -rf "$dir"
  git clone -q "$repo" "$dir" && git -C "$dir" checkout -q "$rev"
  busy=""
  if [ "$n" -gt $((runs - busy_runs)) ]; then (while :; do :; done) & busy=$!; fi
  start=$(date +%s)
  (cd "$dir" && CI=true bash .ci/run) > "$out/run$n.log" 2>&1
  rc=$?
  end=$(date +%s)
  [ -n "$busy" ] && kill "$busy"
  echo "run $n  commit $rev  busy loop: $([ -n "$busy" ] && echo yes || echo no)  exit $rc  wall $((end - start)) s" \
       "($(date -u -d @"$start" +%H:%M:%S) UTC)  $(grep -E '(passed|failed)' "$out/run$n.log" | tail -1)" \
    | tee -a "$out/runs.txt"
  rm -rf "$dir/.venv"
done
