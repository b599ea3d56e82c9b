#!/bin/sh
# Builds libclockshim.so next to this script, only when it is missing or
# older than its source. Safe to run concurrently: the library is built
# under a temporary name and renamed into place.
set -eu
cd "$(dirname "$0")"
if [ -f libclockshim.so ] && [ ! clockshim.c -nt libclockshim.so ] && [ ! build.sh -nt libclockshim.so ]; then
	exit 0
fi
tmp=".libclockshim.$$.so"
trap 'rm -f "$tmp"' EXIT
${CC:-gcc} -O2 -Wall -Wextra -shared -fPIC -o "$tmp" clockshim.c -ldl
mv -f "$tmp" libclockshim.so
