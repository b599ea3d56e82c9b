#!/usr/bin/env bash
# Builds the campaign image (make campaign-image): what a pod of the
# Kubernetes Job `simulate campaign -emit k8s` prints runs, built offline
# from this machine's own files as the node image is (FROM scratch: nothing
# is pulled from any registry). Tagged lockfault-campaign:<version>, the
# version being lockfault's: the commit of a clean tree, else dev-<the first
# 12 hex digits of bin/simulate's sha256> (runner.Version names a build with
# local changes by its binary's hash too). LOCKFAULT_CAMPAIGN_IMAGE
# overrides the whole reference.
#
# What goes in (each host file at the same path, with every shared library
# ldd lists for it and the loader):
#   /usr/bin/simulate, /usr/bin/lockfault-ext   bin/ (make build)
#   /usr/bin/toxiproxy-server                   bin/ (make build): the proxies' server, found beside simulate
#   /usr/bin/redis-server, /usr/bin/redis-sentinel -> redis-server
#   /usr/bin/etcd                               the host's (Debian etcd-server)
#   /lockfault/libclockshim.so                  make shim; LOCKFAULT_CLOCK_SHIM names it
#   /lockfault/libconnectremap.so               make shim: beside the clock shim, where the
#                                               PHP cluster workers look for it
#   /bin/sh                                     the host's (the Job's command is a sh script)
#   the Python workers' interpreter and libraries (/usr/bin/python3 and
#   /usr/lib/python3*), when the host has python3-redis; the PHP workers'
#   (/usr/bin/php, /usr/lib/php, /usr/share/php, /etc/php), when it has
#   php-cli; each skipped with a warning otherwise
#   /lockfault/examples                         the example workers, for
#                                               commands like `/usr/bin/python3
#                                               examples/python-redis/worker.py`
#   /etc/passwd and /etc/group with lockfault (65532:65532), the user it
#   runs as (the Job's pod runs as 65532 too), /tmp (mode 1777)
# WORKDIR /lockfault; HOME and TMPDIR /tmp (the pod's emptyDir).
#
# Usage: bash cluster/image/campaign.sh   (from anywhere; prints the tag last)
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$script_dir/../.." && pwd)"
say() { printf 'campaign.sh: %s\n' "$*" >&2; }
warn() { printf 'campaign.sh: WARNING: %s\n' "$*" >&2; }
die() { printf 'campaign.sh: ERROR: %s\n' "$*" >&2; exit 1; }

command -v docker >/dev/null || die "docker CLI not found"
docker info >/dev/null 2>&1 || die "no Docker engine answers"

simulate="$root/bin/simulate"
ext="$root/bin/lockfault-ext"
toxiproxy="$root/bin/toxiproxy-server"
shim="$root/faults/clockshim/libclockshim.so"
remap="$root/faults/clockshim/libconnectremap.so"
[[ -x "$simulate" && -x "$ext" && -x "$toxiproxy" ]] || die "bin/simulate, bin/lockfault-ext and bin/toxiproxy-server are not built (make build)"
[[ -f "$shim" && -f "$remap" ]] || die "the clock shim or the connect remap is not built (make shim)"
redis="$(command -v redis-server || true)"
[[ -n "$redis" ]] || die "redis-server not found: install the Debian package redis-server"
etcd="$(command -v etcd || true)"
[[ -n "$etcd" ]] || die "etcd not found: install the Debian package etcd-server"

if [[ -n "${LOCKFAULT_CAMPAIGN_IMAGE:-}" ]]; then
	IMAGE="$LOCKFAULT_CAMPAIGN_IMAGE"
else
	rev=""
	if git -C "$root" rev-parse HEAD >/dev/null 2>&1 && [[ -z "$(git -C "$root" status --porcelain 2>/dev/null)" ]]; then
		rev="$(git -C "$root" rev-parse HEAD | cut -c1-12)"
	fi
	IMAGE="lockfault-campaign:${rev:-dev-$(sha256sum <"$simulate" | cut -c1-12)}"
fi

# Digest of the inputs: an image of this tag built from the same files is
# not built again (LOCKFAULT_IMAGE_REBUILD=1 forces it).
digest="$( {
	cat "${BASH_SOURCE[0]}"
	for f in "$simulate" "$ext" "$toxiproxy" "$redis" "$etcd" "$shim" "$(readlink -f /bin/sh)"; do sha256sum <"$(readlink -f "$f")"; done
	dpkg-query -W python3-redis python3-tooz php-cli php-redis php-malkusch-lock php-symfony-lock php-illuminate-cache php-illuminate-redis tzdata 2>/dev/null || true
	(cd "$root/examples" && find . -type f ! -name '*.go' -print0 | sort -z | xargs -0 sha256sum)
} | sha256sum | cut -c1-32)"
previous="$(docker image inspect --format '{{.Id}} {{ index .Config.Labels "lockfault.inputs" }}' "$IMAGE" 2>/dev/null || true)"
if [[ "${LOCKFAULT_IMAGE_REBUILD:-}" != 1 && "${previous#* }" == "$digest" ]]; then
	say "$IMAGE is up to date (inputs $digest)"
	echo "$IMAGE"
	exit 0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/lockfault-campaign-image-XXXXXX")"
trap 'rm -rf "$work"' EXIT
rootfs="$work/context/rootfs"
mkdir -p "$rootfs"/{usr/bin,bin,etc,tmp,lockfault}
chmod 1777 "$rootfs/tmp"

elves=() # the ELF files copied, whose libraries go in too
copy() { # host-path image-path
	mkdir -p "$rootfs$(dirname "$2")"
	cp -L "$1" "$rootfs$2"
	[[ "$(head -c4 "$1" | od -An -c | tr -d ' ')" == 177ELF ]] && elves+=("$1")
	return 0
}
tree() { # a host folder, at the same path, symbolic links kept inside it
	[[ -d "$1" ]] || return 0
	mkdir -p "$rootfs$(dirname "$1")"
	cp -a "$1" "$rootfs$1"
	while IFS= read -r -d '' f; do
		[[ "$(head -c4 "$f" | od -An -c | tr -d ' ')" == 177ELF ]] && elves+=("$f")
	done < <(find "$1" -type f \( -name '*.so' -o -name '*.so.*' \) -print0)
}

copy "$simulate" /usr/bin/simulate
copy "$ext" /usr/bin/lockfault-ext
copy "$toxiproxy" /usr/bin/toxiproxy-server
copy "$redis" /usr/bin/redis-server
ln -s redis-server "$rootfs/usr/bin/redis-sentinel"
copy "$etcd" /usr/bin/etcd
copy "$shim" /lockfault/libclockshim.so
copy "$remap" /lockfault/libconnectremap.so
copy "$(readlink -f /bin/sh)" /bin/sh
say "added simulate, lockfault-ext, toxiproxy-server, redis-server $("$redis" --version | sed -n 's/.* v=\([^ ]*\).*/\1/p') (and redis-sentinel), $("$etcd" --version 2>/dev/null | head -n1), the clock shim and the connect remap, /bin/sh"

workers=""
py="$(readlink -f /usr/bin/python3 2>/dev/null || true)"
if [[ -n "$py" && -x "$py" ]] && dpkg-query -W -f='${Status}\n' python3-redis 2>/dev/null | grep -q ' installed$'; then
	copy "$py" "$py"
	ln -sf "$(basename "$py")" "$rootfs/usr/bin/python3"
	v="$(basename "$py")"
	tree "/usr/lib/$v"
	tree /usr/lib/python3/dist-packages
	tree /usr/share/zoneinfo # pytz (tooz) reads it
	# OpenSSL's configuration and modules (cryptography, through tooz's eventlet)
	tree /etc/ssl
	for d in /usr/lib/*-linux-gnu/ossl-modules /usr/lib/*-linux-gnu/engines-3; do tree "$d"; done
	workers="$workers python"
	say "added the Python workers: $py, /usr/lib/$v, /usr/lib/python3/dist-packages"
else
	warn "no python3-redis on this machine: the image has no Python workers (make debs-python installs them)"
fi
php="$(readlink -f /usr/bin/php 2>/dev/null || true)"
if [[ -n "$php" && -x "$php" ]]; then
	copy "$php" "$php"
	ln -sf "$(basename "$php")" "$rootfs/usr/bin/php"
	tree /usr/lib/php
	tree /usr/share/php
	tree /etc/php
	workers="$workers php"
	say "added the PHP workers: $php, /usr/lib/php, /usr/share/php, /etc/php"
else
	warn "no php on this machine: the image has no PHP workers (make debs-php installs them)"
fi
mkdir -p "$rootfs/lockfault/examples"
(cd "$root/examples" && tar cf - --exclude='*.go' --exclude=golock --exclude=ci --exclude=testdata . | tar xf - -C "$rootfs/lockfault/examples")

libs() {
	ldd "$1" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3; next } $1 ~ /^\// { print $1 }' || true
}
declare -A seen=()
n=0
for f in "${elves[@]}"; do
	while read -r l; do
		[[ -n "$l" && -z "${seen[$l]:-}" ]] || continue
		seen[$l]=1
		if [[ ! -e "$rootfs$l" ]]; then
			mkdir -p "$rootfs$(dirname "$l")"
			cp -L "$l" "$rootfs$l"
			n=$((n + 1))
		fi
	done < <(libs "$f")
done
say "added $n shared libraries and the loader"

cat >"$rootfs/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
lockfault:x:65532:65532:lockfault:/tmp:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
EOF
cat >"$rootfs/etc/group" <<'EOF'
root:x:0:
lockfault:x:65532:
nogroup:x:65534:
EOF
printf '127.0.0.1 localhost\n::1 localhost\n' >"$rootfs/etc/hosts"

version="$(sha256sum <"$simulate" | cut -c1-64)"
cat >"$work/context/Dockerfile" <<EOF
FROM scratch
COPY rootfs/ /
ENV PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp TMPDIR=/tmp LOCKFAULT_CLOCK_SHIM=/lockfault/libclockshim.so
LABEL lockfault.campaign-image=1 lockfault.inputs=$digest lockfault.simulate-sha256=$version lockfault.workers="${workers# }"
USER 65532:65532
WORKDIR /lockfault
CMD ["simulate", "-h"]
EOF
say "building $IMAGE"
if ! DOCKER_BUILDKIT=0 docker build --force-rm -t "$IMAGE" "$work/context" >"$work/build.log" 2>&1; then
	cat "$work/build.log" >&2
	die "docker build failed"
fi
# The image this tag named before, if nothing else names it now.
old_id="${previous%% *}"
if [[ -n "$old_id" && "$old_id" != "$(docker image inspect --format '{{.Id}}' "$IMAGE")" ]]; then
	docker rmi "$old_id" >/dev/null 2>&1 && say "removed the image $IMAGE named before" || true
fi
say "built $IMAGE ($(docker image inspect --format '{{.Size}}' "$IMAGE") bytes); push it with: docker tag $IMAGE REGISTRY/lockfault-campaign:TAG && docker push REGISTRY/lockfault-campaign:TAG"
echo "$IMAGE"
