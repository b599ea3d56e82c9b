/*
 * libclockshim: an LD_PRELOAD library for redis-server (glibc, Linux) that
 *
 *  1. moves the process's realtime clock by an offset the harness can change
 *     at any moment, leaving every other clock (CLOCK_MONOTONIC, CPU clocks,
 *     ...) untouched so that timers keep running across a backward jump;
 *  2. records which bytes of which files were made durable by fsync or
 *     fdatasync, so that the harness can emulate a power loss honestly by
 *     cutting every file back to what had been synced (see
 *     cluster/nodeshim.go, PowerLoss).
 *
 * Clock
 *   Intercepted: gettimeofday, time, clock_gettime (only CLOCK_REALTIME and
 *   CLOCK_REALTIME_COARSE are moved). redis-server 7.0 reads the wall clock
 *   through gettimeofday (ustime/mstime: key expiry, TIME, server.unixtime)
 *   and time(); its timers use clock_gettime(CLOCK_MONOTONIC).
 *
 *   The offset lives in the file named by LOCKFAULT_CLOCK_FILE, mapped
 *   shared, so each call is a plain memory read and a write to the file by
 *   the harness takes effect at once. Layout, native-endian (the harness runs
 *   on the same machine):
 *     bytes  0..7   int64  offset in nanoseconds added to the realtime clock
 *     bytes  8..15  int64  drift: nanoseconds added per second of CLOCK_MONOTONIC
 *     bytes 16..23  int64  drift epoch: CLOCK_MONOTONIC nanoseconds at which
 *                          the offset was exactly bytes 0..7
 *     bytes 24..31  uint64 sequence counter, odd while a writer updates the
 *                          fields (a seqlock; a writer that only stores the
 *                          8-byte offset can ignore it)
 *   The effective offset is offset + drift * (monotonic_now - epoch) / 1s.
 *   The shim creates the file if it is absent and extends it to 32 bytes; it
 *   must never be truncated while a process maps it (reading a mapped page
 *   past the end of the file raises SIGBUS).
 *   If LOCKFAULT_CLOCK_FILE is unset or empty, the clock passes through.
 *
 *   The real clock functions are not looked up with dlsym: dlsym can call
 *   malloc, jemalloc's initialisation reads the clock, and that recursion is
 *   what deadlocks libfaketime with Debian's redis-server. Instead the shim
 *   finds the kernel's vDSO entry points itself (getauxval(AT_SYSINFO_EHDR)
 *   and the vDSO's ELF dynamic symbol table: no allocation, no locks), and
 *   falls back to raw system calls if there is no vDSO. The hot path takes no
 *   lock, allocates nothing and uses no stdio.
 *
 * Durability log
 *   Intercepted: fsync, fdatasync (durability barriers), rename, renameat,
 *   renameat2, unlink, unlinkat, truncate, ftruncate (and their *64 aliases),
 *   which change what name or what size a synced file has. Each event is
 *   appended with one write() to the log named by LOCKFAULT_FSYNC_LOG or, when
 *   that is unset, <directory of LOCKFAULT_CLOCK_FILE>/fsync.log (set it to
 *   the empty string to disable the log). Lines, paths absolute as the kernel
 *   reports them through /proc/self/fd:
 *     F <size> <path>\n     the file was fsync'd: its first <size> bytes are
 *                           durable (size taken by fstat just before the
 *                           call, so bytes appended by another thread while
 *                           the sync ran are not claimed)
 *     T <size> <path>\n     the file was truncated to <size>
 *     R <old>\t<new>\n      the file <old> was renamed to <new>
 *     U <path>\n            the file was unlinked
 *   Only regular files are logged (a directory fsync is not; see
 *   PowerLoss for how directory operations are modelled). Paths containing a
 *   tab or a newline are not supported. sync_file_range is not intercepted:
 *   redis 7.0 uses it only to pace write-back while it writes a rewrite or
 *   an RDB file, it persists neither the file size nor the disk cache, and
 *   redis follows it with fsync.
 *
 * Build: build.sh (gcc -O2 -Wall -Wextra -shared -fPIC).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h> /* prototypes of rename, renameat, renameat2 only */
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
/* <sys/time.h> is deliberately not included: glibc declares gettimeofday's
 * first argument nonnull, and the shim must accept NULL like the kernel does.
 * struct timeval comes from <sys/types.h> (via <sys/select.h>). */
#include <time.h>
#include <unistd.h>

#define NSEC_PER_SEC 1000000000LL
#define CLOCK_FILE_SIZE 32

#define EXPORT __attribute__((visibility("default")))

_Static_assert(sizeof(off_t) == 8 && sizeof(time_t) == 8, "clockshim supports 64-bit Linux only");

/* ------------------------------------------------------------------------
 * Real clocks: the vDSO, or system calls.
 * ---------------------------------------------------------------------- */

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
typedef int (*gettimeofday_fn)(struct timeval *, void *);
typedef time_t (*time_fn)(time_t *);

static clock_gettime_fn vdso_clock_gettime;
static gettimeofday_fn vdso_gettimeofday;
static time_fn vdso_time;
static int vdso_ready;

/* vdso_lookup finds a defined function symbol in the vDSO mapped at base. */
static void *vdso_lookup(uintptr_t base, const char *name)
{
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
        return NULL;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(base + eh->e_phoff);
    uintptr_t load = 0;
    int have_load = 0;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD && !have_load) {
            load = base + ph[i].p_offset - ph[i].p_vaddr;
            have_load = 1;
        } else if (ph[i].p_type == PT_DYNAMIC) {
            dyn = (const ElfW(Dyn) *)(base + ph[i].p_offset);
        }
    }
    if (!have_load || dyn == NULL)
        return NULL;

    const char *strtab = NULL;
    const ElfW(Sym) *symtab = NULL;
    const ElfW(Word) *hash = NULL;
    const uint32_t *gnu_hash = NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_STRTAB:
            strtab = (const char *)(load + dyn->d_un.d_ptr);
            break;
        case DT_SYMTAB:
            symtab = (const ElfW(Sym) *)(load + dyn->d_un.d_ptr);
            break;
        case DT_HASH:
            hash = (const ElfW(Word) *)(load + dyn->d_un.d_ptr);
            break;
        case DT_GNU_HASH:
            gnu_hash = (const uint32_t *)(load + dyn->d_un.d_ptr);
            break;
        }
    }
    if (strtab == NULL || symtab == NULL)
        return NULL;

    /* The number of dynamic symbols: nchain of DT_HASH, or the end of the
     * last GNU hash chain. */
    uint32_t nsyms = 0;
    if (hash != NULL) {
        nsyms = hash[1];
    } else if (gnu_hash != NULL) {
        uint32_t nbuckets = gnu_hash[0], symoffset = gnu_hash[1], bloom = gnu_hash[2];
        const uint32_t *buckets = gnu_hash + 4 + bloom * (sizeof(ElfW(Addr)) / 4);
        const uint32_t *chain = buckets + nbuckets;
        uint32_t last = 0;
        for (uint32_t b = 0; b < nbuckets; b++)
            if (buckets[b] > last)
                last = buckets[b];
        if (last < symoffset) {
            nsyms = symoffset;
        } else {
            while (!(chain[last - symoffset] & 1))
                last++;
            nsyms = last + 1;
        }
    } else {
        return NULL;
    }

    for (uint32_t i = 0; i < nsyms; i++) {
        const ElfW(Sym) *s = &symtab[i];
        int bind = s->st_info >> 4, type = s->st_info & 0xf; /* ELF{32,64}_ST_BIND, _TYPE */
        if (s->st_shndx == SHN_UNDEF || type != STT_FUNC || (bind != STB_GLOBAL && bind != STB_WEAK))
            continue;
        if (strcmp(strtab + s->st_name, name) == 0)
            return (void *)(load + s->st_value);
    }
    return NULL;
}

static void vdso_init(void)
{
    if (__atomic_load_n(&vdso_ready, __ATOMIC_ACQUIRE))
        return;
    /* Idempotent: threads that race here compute the same pointers. */
    uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    if (base != 0) {
#if defined(__x86_64__)
        const char *cg = "__vdso_clock_gettime", *gtod = "__vdso_gettimeofday", *t = "__vdso_time";
#else
        const char *cg = "__kernel_clock_gettime", *gtod = "__kernel_gettimeofday", *t = "__kernel_time";
#endif
        __atomic_store_n(&vdso_clock_gettime, (clock_gettime_fn)vdso_lookup(base, cg), __ATOMIC_RELAXED);
        __atomic_store_n(&vdso_gettimeofday, (gettimeofday_fn)vdso_lookup(base, gtod), __ATOMIC_RELAXED);
        __atomic_store_n(&vdso_time, (time_fn)vdso_lookup(base, t), __ATOMIC_RELAXED);
    }
    __atomic_store_n(&vdso_ready, 1, __ATOMIC_RELEASE);
}

static int real_clock_gettime(clockid_t clk, struct timespec *ts)
{
    vdso_init();
    clock_gettime_fn f = __atomic_load_n(&vdso_clock_gettime, __ATOMIC_RELAXED);
    if (f != NULL)
        return f(clk, ts);
    return (int)syscall(SYS_clock_gettime, clk, ts);
}

static int real_gettimeofday(struct timeval *tv, void *tz)
{
    vdso_init();
    gettimeofday_fn f = __atomic_load_n(&vdso_gettimeofday, __ATOMIC_RELAXED);
    if (f != NULL)
        return f(tv, tz);
#ifdef SYS_gettimeofday
    return (int)syscall(SYS_gettimeofday, tv, tz);
#else
    struct timespec ts;
    if (real_clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return -1;
    if (tv != NULL) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return 0;
#endif
}

static time_t real_time(time_t *tloc)
{
    vdso_init();
    time_fn f = __atomic_load_n(&vdso_time, __ATOMIC_RELAXED);
    if (f != NULL)
        return f(tloc);
    struct timespec ts;
    if (real_clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return (time_t)-1;
    if (tloc != NULL)
        *tloc = ts.tv_sec;
    return ts.tv_sec;
}

/* ------------------------------------------------------------------------
 * Small helpers that neither allocate nor use stdio.
 * ---------------------------------------------------------------------- */

/* put_str appends s to buf[*n], bounded by cap; returns 0 if it did not fit. */
static int put_str(char *buf, size_t cap, size_t *n, const char *s)
{
    size_t l = strlen(s);
    if (*n + l > cap)
        return 0;
    memcpy(buf + *n, s, l);
    *n += l;
    return 1;
}

static int put_int(char *buf, size_t cap, size_t *n, long long v)
{
    char tmp[24];
    int i = sizeof(tmp);
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    tmp[--i] = '\0';
    do {
        tmp[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0)
        tmp[--i] = '-';
    return put_str(buf, cap, n, tmp + i);
}

/* warn writes "lockfault clockshim: <msg> <path>: errno <e>" to stderr. */
static void warn(const char *msg, const char *path, int e)
{
    char buf[PATH_MAX + 128];
    size_t n = 0;
    put_str(buf, sizeof(buf), &n, "lockfault clockshim: ");
    put_str(buf, sizeof(buf), &n, msg);
    if (path != NULL) {
        put_str(buf, sizeof(buf), &n, " ");
        put_str(buf, sizeof(buf), &n, path);
    }
    if (e != 0) {
        put_str(buf, sizeof(buf), &n, ": errno ");
        put_int(buf, sizeof(buf), &n, e);
    }
    put_str(buf, sizeof(buf), &n, "\n");
    ssize_t r = write(2, buf, n);
    (void)r;
}

/* ------------------------------------------------------------------------
 * The clock offset.
 * ---------------------------------------------------------------------- */

struct clock_words {
    int64_t offset;
    int64_t drift;
    int64_t epoch;
    uint64_t seq;
};

static struct clock_words *clock_map;
static int clock_state; /* 0 not initialised, 1 initialising, 2 done */

static void clock_init(void)
{
    int expect = 0;
    if (!__atomic_compare_exchange_n(&clock_state, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return; /* done, or another thread is at it: pass through meanwhile */
    const char *path = getenv("LOCKFAULT_CLOCK_FILE");
    if (path != NULL && path[0] != '\0') {
        int writable = 1;
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            writable = 0;
            fd = open(path, O_RDONLY | O_CLOEXEC);
        }
        if (fd < 0) {
            warn("cannot open clock file", path, errno);
        } else {
            struct stat st;
            if (fstat(fd, &st) != 0) {
                warn("cannot stat clock file", path, errno);
            } else {
                /* Only ever grow the file. */
                if (writable && st.st_size < CLOCK_FILE_SIZE && syscall(SYS_ftruncate, fd, (off_t)CLOCK_FILE_SIZE) == 0)
                    st.st_size = CLOCK_FILE_SIZE;
                if (st.st_size == 0) {
                    warn("empty read-only clock file, clock not moved:", path, 0);
                } else {
                    void *m = mmap(NULL, CLOCK_FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
                    if (m == MAP_FAILED)
                        warn("cannot map clock file", path, errno);
                    else
                        __atomic_store_n(&clock_map, (struct clock_words *)m, __ATOMIC_RELEASE);
                }
            }
            close(fd);
        }
    }
    __atomic_store_n(&clock_state, 2, __ATOMIC_RELEASE);
}

/* clock_offset returns the current offset of the realtime clock in ns. */
static int64_t clock_offset(void)
{
    struct clock_words *m = __atomic_load_n(&clock_map, __ATOMIC_ACQUIRE);
    if (m == NULL) {
        if (__atomic_load_n(&clock_state, __ATOMIC_ACQUIRE) != 0)
            return 0;
        clock_init();
        m = __atomic_load_n(&clock_map, __ATOMIC_ACQUIRE);
        if (m == NULL)
            return 0;
    }
    int64_t off = 0, drift = 0, epoch = 0;
    /* Seqlock read. A writer that died mid-update leaves seq odd: after a
     * bounded number of tries, use what is there. */
    for (int tries = 0;; tries++) {
        uint64_t s1 = __atomic_load_n(&m->seq, __ATOMIC_ACQUIRE);
        off = __atomic_load_n(&m->offset, __ATOMIC_RELAXED);
        drift = __atomic_load_n(&m->drift, __ATOMIC_RELAXED);
        epoch = __atomic_load_n(&m->epoch, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        uint64_t s2 = __atomic_load_n(&m->seq, __ATOMIC_RELAXED);
        if ((s1 == s2 && !(s1 & 1)) || tries >= 10000)
            break;
    }
    if (drift != 0) {
        struct timespec now;
        if (real_clock_gettime(CLOCK_MONOTONIC, &now) == 0) {
            int64_t elapsed = (int64_t)now.tv_sec * NSEC_PER_SEC + now.tv_nsec - epoch;
            if (elapsed > 0)
                off += (int64_t)((__int128)drift * elapsed / NSEC_PER_SEC);
        }
    }
    return off;
}

static void timespec_add(struct timespec *ts, int64_t off)
{
    ts->tv_sec += off / NSEC_PER_SEC;
    ts->tv_nsec += off % NSEC_PER_SEC;
    if (ts->tv_nsec >= NSEC_PER_SEC) {
        ts->tv_nsec -= NSEC_PER_SEC;
        ts->tv_sec++;
    } else if (ts->tv_nsec < 0) {
        ts->tv_nsec += NSEC_PER_SEC;
        ts->tv_sec--;
    }
}

EXPORT int clock_gettime(clockid_t clk, struct timespec *ts)
{
    int r = real_clock_gettime(clk, ts);
    if (r == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)) {
        int64_t off = clock_offset();
        if (off != 0)
            timespec_add(ts, off);
    }
    return r;
}

EXPORT int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    int r = real_gettimeofday(tv, tz);
    if (r == 0 && tv != NULL) {
        int64_t off = clock_offset();
        if (off != 0) {
            struct timespec ts = {.tv_sec = tv->tv_sec, .tv_nsec = (long)tv->tv_usec * 1000};
            timespec_add(&ts, off);
            tv->tv_sec = ts.tv_sec;
            tv->tv_usec = ts.tv_nsec / 1000;
        }
    }
    return r;
}

EXPORT time_t time(time_t *tloc)
{
    int64_t off = clock_offset();
    if (off == 0)
        return real_time(tloc);
    struct timespec ts;
    if (real_clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return (time_t)-1;
    timespec_add(&ts, off);
    if (tloc != NULL)
        *tloc = ts.tv_sec;
    return ts.tv_sec;
}

/* ------------------------------------------------------------------------
 * The durability log.
 * ---------------------------------------------------------------------- */

static int log_fd = -2; /* -2 not opened yet, -1 disabled or failed */

static void log_open(void)
{
    char path[PATH_MAX];
    const char *p = getenv("LOCKFAULT_FSYNC_LOG");
    if (p == NULL) {
        const char *clock = getenv("LOCKFAULT_CLOCK_FILE");
        if (clock != NULL && clock[0] != '\0') {
            const char *slash = strrchr(clock, '/');
            size_t n = 0;
            int ok = 1;
            if (slash != NULL) {
                size_t dl = (size_t)(slash - clock) + 1;
                if (dl >= sizeof(path))
                    ok = 0;
                else {
                    memcpy(path, clock, dl);
                    n = dl;
                }
            }
            if (ok && put_str(path, sizeof(path) - 1, &n, "fsync.log")) {
                path[n] = '\0';
                p = path;
            }
        }
    }
    int fd = -1;
    if (p != NULL && p[0] != '\0') {
        fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
            warn("cannot open fsync log", p, errno);
    }
    int expect = -2;
    if (!__atomic_compare_exchange_n(&log_fd, &expect, fd, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) && fd >= 0)
        close(fd); /* another thread won */
}

static int log_get(void)
{
    int fd = __atomic_load_n(&log_fd, __ATOMIC_ACQUIRE);
    if (fd == -2) {
        log_open();
        fd = __atomic_load_n(&log_fd, __ATOMIC_ACQUIRE);
    }
    return fd;
}

/* fd_path resolves an open descriptor to its absolute path; returns the
 * length, or 0 if it cannot (or if the file has been deleted). */
static size_t fd_path(int fd, char *out, size_t cap)
{
    char link[40];
    size_t n = 0;
    put_str(link, sizeof(link) - 1, &n, "/proc/self/fd/");
    put_int(link, sizeof(link) - 1, &n, fd);
    link[n] = '\0';
    ssize_t l = readlink(link, out, cap - 1);
    if (l <= 0 || (size_t)l >= cap - 1)
        return 0;
    out[l] = '\0';
    static const char deleted[] = " (deleted)";
    size_t dl = sizeof(deleted) - 1;
    if ((size_t)l >= dl && memcmp(out + l - dl, deleted, dl) == 0)
        return 0;
    return (size_t)l;
}

/* at_path resolves path (relative to dirfd) to the absolute path of the
 * regular file it names, without following a final symlink; 0 if none. */
static size_t at_path(int dirfd, const char *path, char *out, size_t cap)
{
    int fd = openat(dirfd, path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    size_t n = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        n = fd_path(fd, out, cap);
    close(fd);
    return n;
}

/* log_line writes "<tag> <size> <path>\n" (size omitted if < 0). */
static void log_line(int lfd, char tag, long long size, const char *path)
{
    char buf[PATH_MAX + 64];
    size_t n = 0;
    buf[n++] = tag;
    buf[n++] = ' ';
    if (size >= 0) {
        put_int(buf, sizeof(buf), &n, size);
        buf[n++] = ' ';
    }
    if (!put_str(buf, sizeof(buf) - 1, &n, path))
        return;
    buf[n++] = '\n';
    ssize_t r = write(lfd, buf, n);
    (void)r;
}

static int do_sync(long nr, int fd)
{
    int lfd = log_get();
    if (lfd < 0)
        return (int)syscall(nr, fd);
    struct stat st;
    int reg = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    int r = (int)syscall(nr, fd);
    if (r == 0 && reg) {
        int saved = errno;
        char path[PATH_MAX];
        if (fd_path(fd, path, sizeof(path)) > 0)
            log_line(lfd, 'F', (long long)st.st_size, path);
        errno = saved;
    }
    return r;
}

EXPORT int fsync(int fd) { return do_sync(SYS_fsync, fd); }
EXPORT int fdatasync(int fd) { return do_sync(SYS_fdatasync, fd); }

static int do_renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags)
{
    int lfd = log_get();
    char oldabs[PATH_MAX];
    size_t ol = lfd >= 0 ? at_path(olddirfd, oldpath, oldabs, sizeof(oldabs)) : 0;
    long r;
    if (flags == 0) {
#ifdef SYS_renameat
        r = syscall(SYS_renameat, olddirfd, oldpath, newdirfd, newpath);
#else
        r = syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, 0);
#endif
    } else {
#ifdef SYS_renameat2
        r = syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, flags);
#else
        errno = ENOSYS;
        r = -1;
#endif
    }
    if (r == 0 && ol > 0) {
        int saved = errno;
        char newabs[PATH_MAX];
        char buf[2 * PATH_MAX + 8];
        size_t n = 0;
        if (at_path(newdirfd, newpath, newabs, sizeof(newabs)) > 0 && put_str(buf, sizeof(buf), &n, "R ") &&
            put_str(buf, sizeof(buf), &n, oldabs) && put_str(buf, sizeof(buf), &n, "\t") &&
            put_str(buf, sizeof(buf), &n, newabs) && put_str(buf, sizeof(buf), &n, "\n")) {
            ssize_t w = write(lfd, buf, n);
            (void)w;
        }
        errno = saved;
    }
    return (int)r;
}

EXPORT int rename(const char *oldpath, const char *newpath)
{
    return do_renameat2(AT_FDCWD, oldpath, AT_FDCWD, newpath, 0);
}

EXPORT int renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
    return do_renameat2(olddirfd, oldpath, newdirfd, newpath, 0);
}

EXPORT int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags)
{
    return do_renameat2(olddirfd, oldpath, newdirfd, newpath, flags);
}

static int do_unlinkat(int dirfd, const char *path, int flags)
{
    int lfd = log_get();
    char abs[PATH_MAX];
    size_t l = (lfd >= 0 && !(flags & AT_REMOVEDIR)) ? at_path(dirfd, path, abs, sizeof(abs)) : 0;
    int r = (int)syscall(SYS_unlinkat, dirfd, path, flags);
    if (r == 0 && l > 0) {
        int saved = errno;
        log_line(lfd, 'U', -1, abs);
        errno = saved;
    }
    return r;
}

EXPORT int unlink(const char *path) { return do_unlinkat(AT_FDCWD, path, 0); }
EXPORT int unlinkat(int dirfd, const char *path, int flags) { return do_unlinkat(dirfd, path, flags); }

static int do_ftruncate(int fd, off_t length)
{
    int r = (int)syscall(SYS_ftruncate, fd, length);
    int lfd;
    if (r == 0 && (lfd = log_get()) >= 0) {
        int saved = errno;
        struct stat st;
        char path[PATH_MAX];
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && fd_path(fd, path, sizeof(path)) > 0)
            log_line(lfd, 'T', (long long)length, path);
        errno = saved;
    }
    return r;
}

static int do_truncate(const char *path, off_t length)
{
    int r = (int)syscall(SYS_truncate, path, length);
    int lfd;
    if (r == 0 && (lfd = log_get()) >= 0) {
        int saved = errno;
        char abs[PATH_MAX];
        if (at_path(AT_FDCWD, path, abs, sizeof(abs)) > 0)
            log_line(lfd, 'T', (long long)length, abs);
        errno = saved;
    }
    return r;
}

EXPORT int ftruncate(int fd, off_t length) { return do_ftruncate(fd, length); }
EXPORT int ftruncate64(int fd, off64_t length) { return do_ftruncate(fd, (off_t)length); }
EXPORT int truncate(const char *path, off_t length) { return do_truncate(path, length); }
EXPORT int truncate64(const char *path, off64_t length) { return do_truncate(path, (off_t)length); }

/* Initialise early, so that the log exists (PowerLoss checks for it) and the
 * first clock reads do not race; every entry point also initialises lazily,
 * for callers that run before this constructor. */
__attribute__((constructor)) static void clockshim_init(void)
{
    vdso_init();
    clock_init();
    log_get();
}
