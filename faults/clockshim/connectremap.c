/*
 * libconnectremap: an LD_PRELOAD library for a worker process (glibc, Linux)
 * that dials some IPv4 addresses at others: what go-redis's Dialer or
 * redis-py's connection_class do for a cluster client, for a client library
 * that has no such hook (phpredis 5.3.7's RedisCluster).
 *
 * A Redis Cluster of lockfault announces the addresses of the nodes' peer
 * proxies (cluster/rediscluster.go); each workload client must reach each
 * node through its own proxy instead, so that a fault cut on one client's
 * links reaches that client alone. The worker puts the map (its endpoints'
 * cluster_remap) into its environment before it builds the cluster client:
 *
 *   LOCKFAULT_CONNECT_REMAP=a.b.c.d:p=e.f.g.h:q,a.b.c.d:p=e.f.g.h:q,...
 *
 * (PHP's putenv() sets libc's environment) and every connect() after that
 * reads it with getenv(): a connect to an IPv4 address:port that is a key of
 * the map goes to the mapped address:port instead. Nothing else changes: the
 * socket, its flags (a nonblocking connect still answers EINPROGRESS, and the
 * caller's poll and SO_ERROR see the mapped connection), the return value and
 * errno are the real connect's. Every other connect (another family, an
 * address not in the map, no map or an empty one) passes through untouched.
 *
 * A malformed map (an entry that is not IPv4 dotted-quad:port=dotted-quad:port,
 * more than MAX_ENTRIES entries, longer than MAX_MAP bytes, a key given twice)
 * is never used in part: every IPv4 connect fails with EINVAL, and one line
 * says why on stderr, so the caller reports a connection error rather than
 * reaching an address the map was meant to replace. The whole map is parsed
 * at each IPv4 connect (bounded: no allocation, no locks, no stdio).
 *
 * The real connect is found with dlsym(RTLD_NEXT) (so another preloaded
 * library's connect still runs), else made as a raw system call.
 *
 * Build: faults/clockshim/build.sh (make shim), next to libclockshim.so; the
 * PHP worker (examples/php-lockfault/Worker.php) preloads both.
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ENV_MAP "LOCKFAULT_CONNECT_REMAP"
#define MAX_MAP 65536   /* bytes of the map */
#define MAX_ENTRIES 1024

typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);

static connect_fn real_connect_fn;

static int real_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	connect_fn f = __atomic_load_n(&real_connect_fn, __ATOMIC_ACQUIRE);
	if (f == NULL) {
		f = (connect_fn)dlsym(RTLD_NEXT, "connect");
		if (f != NULL) {
			__atomic_store_n(&real_connect_fn, f, __ATOMIC_RELEASE);
		}
	}
	if (f != NULL) {
		return f(fd, sa, len);
	}
	return (int)syscall(SYS_connect, fd, sa, len);
}

/* An IPv4 endpoint, both fields in network byte order. */
struct ep {
	uint32_t addr;
	uint16_t port;
};

/* Parses a decimal number of at most 5 digits up to max from *p. */
static int number(const char **p, const char *end, unsigned max, unsigned *out)
{
	const char *s = *p;
	unsigned v = 0;
	int n = 0;
	while (s < end && *s >= '0' && *s <= '9' && n < 6) {
		v = v * 10 + (unsigned)(*s - '0');
		s++;
		n++;
	}
	if (n == 0 || n > 5 || v > max || (n > 1 && **p == '0')) {
		return -1;
	}
	*p = s;
	*out = v;
	return 0;
}

/* Parses "a.b.c.d:port" from *p (port 1..65535). */
static int endpoint(const char **p, const char *end, struct ep *out)
{
	unsigned b[4], port;
	for (int i = 0; i < 4; i++) {
		if (number(p, end, 255, &b[i]) != 0) {
			return -1;
		}
		char want = i < 3 ? '.' : ':';
		if (*p >= end || **p != want) {
			return -1;
		}
		(*p)++;
	}
	if (number(p, end, 65535, &port) != 0 || port == 0) {
		return -1;
	}
	out->addr = htonl((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | (uint32_t)b[3]);
	out->port = htons((uint16_t)port);
	return 0;
}

/* Appends s to line (of size cap) at *n, as much as fits. */
static void put(char *line, size_t cap, size_t *n, const char *s)
{
	while (*s != '\0' && *n < cap) {
		line[(*n)++] = *s++;
	}
}

/* One line on stderr: what is wrong with the map (entry: 1-based, 0 for none). */
static void say(const char *what, size_t entry)
{
	char line[200], num[24];
	size_t n = 0, cap = sizeof line - 1;
	put(line, cap, &n, "libconnectremap: " ENV_MAP ": ");
	put(line, cap, &n, what);
	if (entry > 0) {
		int k = (int)sizeof num - 1;
		num[k] = '\0';
		for (size_t e = entry; e > 0 && k > 0; e /= 10) {
			num[--k] = (char)('0' + e % 10);
		}
		put(line, cap, &n, " (entry ");
		put(line, cap, &n, num + k);
		put(line, cap, &n, ")");
	}
	put(line, cap, &n, "; every IPv4 connect fails");
	line[n++] = '\n';
	ssize_t r = write(2, line, n);
	(void)r;
}

/*
 * Looks dst up in the map. Returns 1 and sets *to when found, 0 when not (or
 * there is no map), -1 when the map is malformed.
 */
static int lookup(const struct ep *dst, struct ep *to)
{
	const char *m = getenv(ENV_MAP);
	if (m == NULL || *m == '\0') {
		return 0;
	}
	size_t len = strnlen(m, MAX_MAP + 1);
	if (len > MAX_MAP) {
		say("longer than 65536 bytes", 0);
		return -1;
	}
	const char *p = m, *end = m + len;
	struct ep keys[MAX_ENTRIES];
	size_t n = 0;
	int found = 0;
	while (p < end) {
		struct ep from, dest;
		if (n == MAX_ENTRIES) {
			say("more than 1024 entries", 0);
			return -1;
		}
		if (endpoint(&p, end, &from) != 0 || p >= end || *p != '=') {
			say("want a.b.c.d:port=a.b.c.d:port", n + 1);
			return -1;
		}
		p++;
		if (endpoint(&p, end, &dest) != 0 || (p < end && *p != ',')) {
			say("want a.b.c.d:port=a.b.c.d:port", n + 1);
			return -1;
		}
		for (size_t i = 0; i < n; i++) {
			if (keys[i].addr == from.addr && keys[i].port == from.port) {
				say("an address mapped twice", n + 1);
				return -1;
			}
		}
		keys[n++] = from;
		if (from.addr == dst->addr && from.port == dst->port) {
			*to = dest;
			found = 1;
		}
		if (p < end) {
			p++; /* the ',' */
			if (p == end) {
				say("a ',' with no entry after it", n + 1);
				return -1;
			}
		}
	}
	return found;
}

int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	if (sa == NULL || len < (socklen_t)sizeof(struct sockaddr_in) || sa->sa_family != AF_INET) {
		return real_connect(fd, sa, len);
	}
	struct sockaddr_in in;
	memcpy(&in, sa, sizeof in);
	struct ep dst = {in.sin_addr.s_addr, in.sin_port}, to;
	int saved = errno;
	int r = lookup(&dst, &to);
	if (r < 0) {
		errno = EINVAL;
		return -1;
	}
	errno = saved;
	if (r == 0) {
		return real_connect(fd, sa, len);
	}
	in.sin_addr.s_addr = to.addr;
	in.sin_port = to.port;
	return real_connect(fd, (const struct sockaddr *)&in, sizeof in);
}
