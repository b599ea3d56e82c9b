#!/usr/bin/env bash
# Builds the lockfault node image (default tag lockfault-node:7.0.15) from
# the host's own binaries, offline: the image is FROM scratch, so nothing is
# pulled from any registry.
#
# What goes in:
#   /usr/bin/redis-server       the host's redis-server (symlinks resolved)
#   /usr/bin/redis-sentinel     symlink to redis-server (redis runs as a
#                               sentinel when argv[0] is redis-sentinel)
#   /usr/bin/etcd               the host's etcd (Debian etcd-server); skipped
#                               with a warning when absent
#   every shared library `ldd` lists for those binaries, at the same path,
#   plus the dynamic loader
#   /lockfault/libclockshim.so  when faults/clockshim/libclockshim.so has been
#                               built (`make shim`), with its libraries
#   /usr/bin/toxiproxy-server   the real toxiproxy server, built with `go build`
#                               from the module cache (the version go.mod
#                               requires): the Docker backend runs it inside the
#                               run's network when the daemon is remote
#   /usr/bin/lockfault-nodectl  cluster/image/nodectl, which drives the node
#                               shim's files inside a container (remote daemon)
#   (both static, CGO_ENABLED=0; skipped with a warning when go is absent)
#   a minimal /etc/passwd and /etc/group, and /tmp (mode 1777)
# Labels: lockfault.image=1, lockfault.clockshim=1|0 (the docker backend
# refuses ClockShim nodes on an image without the shim), lockfault.toxiproxy
# and lockfault.nodectl =1|0 (a remote daemon needs both),
# lockfault.layout=2 (what goes in, as listed here), lockfault.inputs.
#
# Missing binaries can be installed with
#   apt-get install -y redis-server redis-sentinel etcd-server
#
# The script is idempotent: the image carries a label with a digest of its
# inputs, and when an image with the same tag and digest already exists
# nothing is rebuilt. LOCKFAULT_IMAGE_REBUILD=1 forces a rebuild;
# LOCKFAULT_IMAGE overrides the tag. The build context is a temp dir that is
# removed on exit.
#
# Usage (from anywhere): bash cluster/image/build.sh
# Go code calls it through cluster.EnsureImage when the image is missing.
set -euo pipefail

IMAGE="${LOCKFAULT_IMAGE:-lockfault-node:7.0.15}"
script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$script_dir/../.." && pwd)"

say() { printf 'build.sh: %s\n' "$*"; }
warn() { printf 'build.sh: WARNING: %s\n' "$*" >&2; }
die() { printf 'build.sh: ERROR: %s\n' "$*" >&2; exit 1; }

command -v docker >/dev/null || die "docker CLI not found"
docker info >/dev/null 2>&1 || die "no Docker engine answers"

# One build at a time (parallel test packages may all call EnsureImage):
# lock this script itself, so no lock file is left behind.
if command -v flock >/dev/null; then
	exec 9<"${BASH_SOURCE[0]}"
	flock 9
fi

find_bin() {
	local p
	p="$(command -v "$1" 2>/dev/null || true)"
	if [[ -z "$p" && -x "/usr/bin/$1" ]]; then p="/usr/bin/$1"; fi
	# Not resolved: Debian's redis-server is a symlink to redis-check-rdb and
	# behaves according to the name it is run as.
	[[ -n "$p" ]] && printf '%s\n' "$p"
}

redis="$(find_bin redis-server || true)"
[[ -n "$redis" ]] || die "redis-server not found (apt-get install -y redis-server redis-sentinel)"
etcd="$(find_bin etcd || true)"
shim="$root/faults/clockshim/libclockshim.so"

# Scratch space for the Go binaries, removed on exit (with the build context).
work="$(mktemp -d "${TMPDIR:-/tmp}/lockfault-image-XXXXXX")"
ctx="$work/context"
trap 'rm -rf "$work"' EXIT

# The Go binaries: built first, so that their digests feed the image's.
toxiproxy=""
nodectl=""
if command -v go >/dev/null; then
	say "building toxiproxy-server and lockfault-nodectl with $(go version | cut -d' ' -f3)"
	(cd "$root" && CGO_ENABLED=0 go build -trimpath -o "$work/toxiproxy-server" github.com/Shopify/toxiproxy/v2/cmd/server) ||
		die "go build of toxiproxy-server failed"
	(cd "$root" && CGO_ENABLED=0 go build -trimpath -o "$work/lockfault-nodectl" ./cluster/image/nodectl) ||
		die "go build of lockfault-nodectl failed"
	toxiproxy="$work/toxiproxy-server"
	nodectl="$work/lockfault-nodectl"
else
	warn "go not found: image has no toxiproxy-server or lockfault-nodectl (a remote Docker daemon needs both)"
fi

want_version="${IMAGE##*:}"
have_version="$("$redis" --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')"
if [[ "$have_version" != "$want_version" ]]; then
	warn "host redis-server is $have_version but the image tag says $want_version"
fi

# Files to copy: host path -> same path in the image.
files=("$redis")
[[ -n "$etcd" ]] && files+=("$etcd") || warn "etcd not found: image has no etcd (apt-get install -y etcd-server)"
has_shim=0
[[ -f "$shim" ]] && { files+=("$shim"); has_shim=1; } || say "no clock shim at $shim: image has no /lockfault/libclockshim.so"
has_toxiproxy=0
has_nodectl=0
[[ -n "$toxiproxy" ]] && { files+=("$toxiproxy"); has_toxiproxy=1; }
[[ -n "$nodectl" ]] && { files+=("$nodectl"); has_nodectl=1; }

# Shared libraries and loader, from ldd.
libs() {
	# "name => /path (addr)", "/path (addr)", "name (addr)" (vdso), "not a dynamic executable"
	ldd "$1" 2>/dev/null | awk '
		$2 == "=>" && $3 ~ /^\// { print $3; next }
		$1 ~ /^\// { print $1 }' || true
}
declare -A seen=()
liblist=()
for f in "${files[@]}"; do
	if ldd "$f" 2>&1 | grep -q 'not found'; then
		die "$f has unresolved libraries: $(ldd "$f" | grep 'not found' | tr -s ' \t' ' ')"
	fi
	while read -r l; do
		[[ -n "$l" && -z "${seen[$l]:-}" ]] || continue
		seen[$l]=1
		liblist+=("$l")
	done < <(libs "$f")
done

# Digest of every input, so an unchanged image is not rebuilt.
digest="$( { printf '%s\n' "$IMAGE" "$(sed -n '/^### dockerfile/,$p' "${BASH_SOURCE[0]}")";
	for f in "${files[@]}" "${liblist[@]}"; do printf '%s ' "${f#"$work"/}"; sha256sum <"$(readlink -f "$f")"; done; } | sha256sum | cut -c1-32)"

if [[ "${LOCKFAULT_IMAGE_REBUILD:-}" != 1 ]]; then
	current="$(docker image inspect --format '{{ index .Config.Labels "lockfault.inputs" }}' "$IMAGE" 2>/dev/null || true)"
	if [[ "$current" == "$digest" ]]; then
		say "$IMAGE is up to date (inputs $digest), nothing to do"
		exit 0
	fi
	[[ -n "$current" ]] && say "$IMAGE exists but its inputs changed: rebuilding"
fi

rootfs="$ctx/rootfs"
mkdir -p "$rootfs"/{usr/bin,etc,tmp,lockfault}
chmod 1777 "$rootfs/tmp"

copy() { # host-path image-path
	mkdir -p "$rootfs$(dirname "$2")"
	cp -L "$1" "$rootfs$2"
}
copy "$redis" /usr/bin/redis-server
ln -s redis-server "$rootfs/usr/bin/redis-sentinel"
say "added /usr/bin/redis-server ($redis -> $(readlink -f "$redis"), v$have_version) and /usr/bin/redis-sentinel -> redis-server"
if [[ -n "$etcd" ]]; then
	copy "$etcd" /usr/bin/etcd
	say "added /usr/bin/etcd ($etcd, $("$etcd" --version 2>/dev/null | head -n1))"
fi
if [[ -f "$shim" ]]; then
	copy "$shim" /lockfault/libclockshim.so
	say "added /lockfault/libclockshim.so ($shim)"
fi
if [[ -n "$toxiproxy" ]]; then
	copy "$toxiproxy" /usr/bin/toxiproxy-server
	copy "$nodectl" /usr/bin/lockfault-nodectl
	say "added /usr/bin/toxiproxy-server ($(cd "$root" && go list -m -f '{{.Path}} {{.Version}}' github.com/Shopify/toxiproxy/v2)) and /usr/bin/lockfault-nodectl"
fi
for l in "${liblist[@]}"; do
	copy "$l" "$l"
done
say "added ${#liblist[@]} shared libraries and the loader: ${liblist[*]}"

cat >"$rootfs/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
EOF
cat >"$rootfs/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
EOF

### dockerfile (everything from here to the end feeds the input digest)
cat >"$ctx/Dockerfile" <<EOF
FROM scratch
COPY rootfs/ /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
LABEL lockfault.image=1 lockfault.layout=2 lockfault.inputs=$digest lockfault.redis=$have_version lockfault.clockshim=$has_shim lockfault.toxiproxy=$has_toxiproxy lockfault.nodectl=$has_nodectl
WORKDIR /tmp
ENTRYPOINT ["redis-server"]
EOF

say "building $IMAGE from $ctx"
# The classic builder needs no BuildKit/buildx and pulls nothing for FROM scratch.
if ! DOCKER_BUILDKIT=0 docker build --force-rm -t "$IMAGE" "$ctx" >"$work/build.log" 2>&1; then
	cat "$work/build.log" >&2
	die "docker build failed"
fi
say "built $IMAGE ($(docker image inspect --format '{{.Id}} {{.Size}} bytes' "$IMAGE"))"
# A rebuild leaves the previous image untagged; drop dangling lockfault images.
dangling="$(docker images -q --filter dangling=true --filter label=lockfault.image=1)"
if [[ -n "$dangling" ]]; then
	docker rmi $dangling >/dev/null 2>&1 && say "removed superseded image(s): $(echo $dangling)" || true
fi
