#!/usr/bin/env bash
# The README's first command as a new user meets it (make bench-first-contact):
# a `git clone` of this checkout's HEAD into a temporary folder, then
# `make scenario name=master-failover` there with an empty Go module cache and
# an empty build cache, timed from the clone to the verdict.
#
# What it cannot empty is printed beside the figure: the Debian packages
# already installed (apt-need installs only what is missing, so on a machine
# that has redis the figure has no apt in it) and whether the node image
# already exists (then it is not rebuilt). For the fresh-machine figure, run
# it on a machine without redis and without the image.
#
# Everything it creates (the clone, both caches, the scenario's reports) is
# in one temporary folder removed at the end.
set -u
src=$(git rev-parse --show-toplevel)
work=$(mktemp -d "${TMPDIR:-/tmp}/lockfault-first-contact.XXXXXX")
cleanup() {
  # The module cache is read-only by design; make it writable to remove it.
  chmod -R u+w "$work" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

have=()
for p in redis-server redis-sentinel; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q ' installed$' && have+=("$p")
done
image=absent
if docker info >/dev/null 2>&1; then
  docker image inspect lockfault-node:7.0.15 >/dev/null 2>&1 && image=present
else
  image="no Docker engine (process backend)"
fi

start=$EPOCHREALTIME
git clone -q "$src" "$work/lockfault" &&
  (cd "$work/lockfault" && env GOMODCACHE="$work/gomod" GOCACHE="$work/gocache" GOFLAGS=-modcacherw \
    make scenario name=master-failover) >"$work/log" 2>&1
rc=$?
end=$EPOCHREALTIME
grep -a -E '^(installing|verdict|match|evidence)' "$work/log" | sed 's/^/    /'
[ $rc -eq 0 ] || tail -20 "$work/log" | sed 's/^/    /' >&2
echo "| figure | wall time | exit |"
echo "|---|---|---|"
awk -v s="$start" -v e="$end" -v rc="$rc" 'BEGIN { printf "| git clone + make scenario name=master-failover | %.1f s | %d |\n", e - s, rc }'
echo "Debian packages already installed before: ${have[*]:-none}; node image before: $image; $(nproc) cores"
exit $rc
