#!/usr/bin/env bash
# Wall time of whole runs, printed as a table (make bench-scenarios).
#
#   tools/bench/scenarios.sh                 master-failover and the suite of single and redlock, on both backends
#   BENCH_CLAIMS=1 tools/bench/scenarios.sh  also the whole catalogue (simulate claims, as make claims runs it), both backends
#
# Each row is one run of bin/simulate; its exit code is reported next to the
# time (0: the verdict matched). Reports go to a temporary folder that is
# removed at the end. Docker rows are skipped when no engine answers.
set -u
bin=${BIN:-bin/simulate}
suite_locks=${SUITE_LOCKS:-single redlock} # a single-master and an independent-masters lock
out=$(mktemp -d "${TMPDIR:-/tmp}/lockfault-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT

rows=()
timeit() { # label, command...
  local label=$1; shift
  local start end rc
  start=$EPOCHREALTIME
  "$@" >"$out/log" 2>&1
  rc=$?
  end=$EPOCHREALTIME
  rows+=("$(awk -v l="$label" -v s="$start" -v e="$end" -v rc="$rc" 'BEGIN { printf "| %s | %.1f s | %d |", l, e - s, rc }')")
  if [ $rc -ne 0 ]; then
    # The rows that did not match (a catalogue run), then the end of the log.
    grep -a 'NO MATCH' "$out/log" | sed 's/^/    /' >&2
    tail -5 "$out/log" | sed 's/^/    /' >&2
  fi
}

load=$(cut -d' ' -f1-3 /proc/loadavg)
# Ask the engine once; every Docker row depends on the answer.
backends=process
if docker info >/dev/null 2>&1; then
  backends="process docker"
else
  rows+=("| docker rows | skipped: no Docker engine | - |")
fi
for be in $backends; do
  timeit "run master-failover, $be" "$bin" run -q -backend "$be" -reports "$out/r" master-failover
done
# `simulate suite -h` exits 2 (flag's usage), so ask for the list instead.
if "$bin" suite -list >/dev/null 2>&1; then
  for lock in $suite_locks; do
    for be in $backends; do
      timeit "suite, lock $lock, $be" "$bin" suite -backend "$be" -reports "$out/r" -lock "$lock"
    done
  done
else
  rows+=("| suite | skipped: this build has no \`simulate suite\` | - |")
fi
if [ "${BENCH_CLAIMS:-0}" = 1 ]; then
  # As `make claims` runs it: three rows at a time.
  for be in $backends; do
    timeit "claims, $be, -parallel 3" "$bin" claims -backend "$be" -parallel 3 -reports "$out/r" -out "$out/claims.md"
  done
fi

echo "load average before: $load, after: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo "| figure | wall time | exit |"
echo "|---|---|---|"
printf '%s\n' "${rows[@]}"
