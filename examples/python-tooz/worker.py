#!/usr/bin/python3
"""A lockfault worker for tooz's redis driver lock, unchanged, heartbeat included.

The protocol (docs/PROTOCOL.md) is examples/python-lockfault/lockfault_worker.py;
this file only maps it onto tooz:

  acquire  coordinator.get_lock(key).acquire(blocking=wait): True -> ok,
           False -> fail, a tooz error (connection, timeout) -> info.
  release  lock.release(): True -> ok; False (tooz logs the LockError: not
           owned, not locked) -> fail; a tooz error -> info.
  extend   tooz's Lock has none: refused with code not-supported.

The TTL. tooz fixes a lock's TTL per coordinator (the URL's lock_timeout,
whole seconds), so the worker keeps one coordinator per TTL it was asked for
(ttl_ms rounded up to whole seconds), each started as tooz documents it.

The heartbeat (the watchdog). A tooz coordinator must beat; each beat renews
the coordinator's membership key and every lock it holds (the redis
driver's heartbeat calls reacquire on each, which resets its TTL). tooz's
own pump, tooz.coordination.Heart, beats from a thread of its own at the
interval the driver asks for. The worker runs that same Heart, on an
observer whose heartbeat() calls the coordinator's heartbeat() and watches
it: the beat's start on CLOCK_MONOTONIC, and the warnings the driver logs for
each lock it could not renew ("Unable to heartbeat lock"). Every lock the
worker holds that the beat renewed is reported as a `renew` with the
validity that renewal set: the beat's start plus the TTL. tooz itself claims
no end for a held lock (it keeps renewing until release), so an acquire
reports valid_until 0. With the option heart=false the worker starts no
heart: no watchdog, and an acquire reports its start plus the TTL.

    ./bin/simulate suite -backend process -worker '/usr/bin/python3 examples/python-tooz/worker.py'
"""

import logging
import math
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python-lockfault"))
import lockfault_worker as lw  # noqa: E402

lw.under_clock_shim()

import importlib.metadata  # noqa: E402

import redis  # noqa: E402

SOCKET_TIMEOUT_S = 5  # tooz's `timeout` (socket timeout, membership timeout); its default is 30 s
IMPORT_BUDGET_S = 6

# Importing tooz costs over a second of CPU (futurist brings in eventlet and
# dnspython): on a loaded machine more than the harness's 20 s for `ready`.
# It is imported on a thread from the start; an init with endpoints waits
# for it until IMPORT_BUDGET_S after the process started, and the first
# acquire waits for the rest.
_tooz = {}
_tooz_imported = threading.Event()


def _import_tooz():
    try:
        import tooz.coordination
        _tooz["tooz"] = tooz
    except BaseException as e:  # reported at the first acquire
        _tooz["error"] = e
    finally:
        _tooz_imported.set()


threading.Thread(target=_import_tooz, daemon=True, name="import-tooz").start()


def tooz_module():
    _tooz_imported.wait()
    if "error" in _tooz:
        raise lw.Unknown("cannot import tooz: %r" % _tooz["error"])
    return _tooz["tooz"]


class BeatWatch(logging.Handler):
    """Collects, per thread, the locks the redis driver logs it could not renew."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.local = threading.local()

    def emit(self, record):
        failed = getattr(self.local, "failed", None)
        if failed is not None and record.msg.startswith("Unable to heartbeat lock") and record.args:
            failed.append(record.args[0] if isinstance(record.args, tuple) else record.args)


WATCH = BeatWatch()
logging.getLogger("tooz.drivers.redis").addHandler(WATCH)


class Observed:
    """What tooz's Heart drives: the coordinator's own heartbeat, watched."""

    def __init__(self, adapter, coord, ttl_ms):
        self.adapter, self.coord, self.ttl_ms = adapter, coord, ttl_ms

    def heartbeat(self):
        held = self.adapter.held_by(self.coord)  # grants complete before the beat begins
        start = lw.now()
        WATCH.local.failed = []
        try:
            wait = self.coord.heartbeat()  # raises when the beat itself failed: nothing renewed
            failed = WATCH.local.failed
        finally:
            WATCH.local.failed = None
        for lock in held:
            if not any(f is lock for f in failed):
                self.adapter.worker.renewed(lock, lw.until(start, self.ttl_ms))
        return wait


class Tooz(lw.Adapter):
    lock = "tooz-redis"
    needs = "single"
    caps = ["watchdog"]
    options = {"heart": (["true", "false"], "start the heartbeat that renews held locks (default true, as tooz's users do)")}
    reads_wall_clock = False

    def __init__(self, worker):
        super().__init__(worker)
        self.heart = True
        self.base = None  # the coordinator URL without its query
        self.coords = {}  # TTL in seconds -> (coordinator, Heart or None)
        self.mu = threading.Lock()
        self.held = {}  # id(lock) -> (lock, coordinator): acquired, not yet released

    def version(self):
        return "tooz %s (python3-tooz %s), redis-py %s (python3-redis %s)" % (
            importlib.metadata.version("tooz"), lw.debian_version("python3-tooz"), redis.__version__, lw.debian_version("python3-redis"))

    def configure(self, opts):
        self.heart = opts.get("heart", "true") == "true"
        if not self.heart:
            self.caps = []

    def connect(self, ep):
        pw = ep.get("password") or ""
        if any(ch in pw for ch in ":@/?#%[] "):
            raise lw.not_supported("field endpoints.password: tooz takes the password in its URL, unescaped; this one has a character the URL cannot carry")
        auth = ":%s@" % pw if pw else ""
        if ep.get("primary"):
            host, port = lw.host_port(ep["primary"], "endpoints.primary")
            self.base, self.query = "redis://%s%s:%d" % (auth, host, port), ""
        else:
            nodes = ["%s:%d" % lw.host_port(s, "endpoints.sentinels") for s in ep["sentinels"]]
            self.base = "redis://%s%s" % (auth, nodes[0])
            self.query = "&sentinel=" + ep["master"] + "".join("&sentinel_fallback=" + n for n in nodes[1:])
        # Held locks stay with the coordinator that granted them (tooz has no
        # way to re-point a lock); new grants use new coordinators.
        self.coords = {}
        _tooz_imported.wait(max(0.0, lw.STARTED + IMPORT_BUDGET_S - time.monotonic()))

    def coordinator(self, ttl_s):
        tooz = tooz_module()
        if ttl_s not in self.coords:
            url = "%s?timeout=%d&lock_timeout=%d%s" % (self.base, SOCKET_TIMEOUT_S, ttl_s, self.query)
            member = ("%s-%d-%ds" % (self.worker.client_name, os.getpid(), ttl_s)).encode()
            coord = tooz.coordination.get_coordinator(url, member)
            coord.start(start_heart=False)
            heart = None
            if self.heart:
                heart = tooz.coordination.Heart(Observed(self, coord, ttl_s * 1000))
                heart.start()
            self.coords[ttl_s] = (coord, heart)
        return self.coords[ttl_s][0]

    def held_by(self, coord):
        with self.mu:
            return [lock for lock, c in self.held.values() if c is coord]

    def acquire(self, key, ttl_ms, wait_ms):
        ttl_s = max(1, math.ceil(ttl_ms / 1000))
        tooz = tooz_module()
        try:
            coord = self.coordinator(ttl_s)
            lock = coord.get_lock(key.encode())
            start = lw.now()
            deadline = time.monotonic() + wait_ms / 1000
            ok = lock.acquire(blocking=wait_ms / 1000 if wait_ms else False)
            # tooz hands the wait to redis-py, which gives up as soon as its
            # next try would fall after it: keep trying until wait_ms ran out.
            while not ok and time.monotonic() < deadline:
                time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
                ok = lock.acquire(blocking=False)
        except tooz.ToozError as e:
            raise lw.Unknown("%s: %s" % (type(e).__name__, e))
        if not ok:
            raise lw.Fail("lock not acquired within wait_ms")
        with self.mu:
            self.held[id(lock)] = (lock, coord)
        token = lock._lock.local.token  # redis-py's token, read for the history only
        return lw.Grant(lock, token=token.decode() if isinstance(token, bytes) else str(token),
                        valid_until=0 if self.heart else lw.until(start, ttl_s * 1000))

    def release(self, lock):
        tooz = tooz_module()
        with self.mu:
            self.held.pop(id(lock), None)  # no renewal is reported once its release began
        try:
            ok = lock.release()
        except tooz.ToozError as e:
            raise lw.Unknown("%s: %s" % (type(e).__name__, e))
        if not ok:
            raise lw.Fail("tooz refused the release (the lock was not held by this lease: see the worker log)")

    def close(self):
        if not self.coords:
            return
        tooz = tooz_module()
        for coord, heart in self.coords.values():
            if heart is not None:
                heart.stop()
            try:
                coord.stop()
            except tooz.ToozError:
                pass


if __name__ == "__main__":
    code = lw.main(Tooz)
    # The interpreter's own exit would wait for the tooz import still under
    # way in its thread (seconds on a loaded machine): a worker told to shut
    # down exits now, its output flushed and its locks' close already done.
    sys.stdout.flush()
    os._exit(code)
