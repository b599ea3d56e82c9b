#!/bin/sh
# Builds the LD_PRELOAD libraries next to this script, each only when it is
# missing or older than its source: libclockshim.so (clockshim.c: the
# clock shim of nodes and workers) and libconnectremap.so (connectremap.c:
# the PHP cluster workers' address remap). Safe to run concurrently: each
# library is built under a temporary name and renamed into place.
set -eu
cd "$(dirname "$0")"
tmp=""
trap 'rm -f "$tmp"' EXIT
for lib in clockshim connectremap; do
	if [ -f "lib$lib.so" ] && [ ! "$lib.c" -nt "lib$lib.so" ] && [ ! build.sh -nt "lib$lib.so" ]; then
		continue
	fi
	tmp=".lib$lib.$$.so"
	${CC:-gcc} -O2 -Wall -Wextra -shared -fPIC -o "$tmp" "$lib.c" -ldl
	mv -f "$tmp" "lib$lib.so"
	tmp=""
done
