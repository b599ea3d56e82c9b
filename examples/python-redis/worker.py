#!/usr/bin/python3
"""A lockfault worker for redis-py's own lock, redis.lock.Lock, unchanged.

The protocol (docs/PROTOCOL.md) is examples/python-lockfault/lockfault_worker.py;
this file only maps it onto redis-py:

  acquire  Lock(r, key, timeout=ttl, blocking_timeout=wait, sleep=sleep).acquire()
           True -> ok, False -> fail (the lock is taken), connection or
           timeout error -> info (the SET may have happened).
  release  Lock.release(): LockError (not owned, or not locked) -> fail,
           connection or timeout error -> info.
  extend   Lock.extend(ttl, replace_ttl=True): same mapping.
  clock    redis-py's Lock reads only time.monotonic(): a wall-clock step
           reaches none of its decisions.

valid_until is the start of the acquire (or extend) call plus the TTL, on
CLOCK_MONOTONIC: redis-py itself claims no validity, and the key cannot
expire before that instant, because the SET that created it came later.

    ./bin/simulate run -backend process -worker '/usr/bin/python3 examples/python-redis/worker.py' gc-pause
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python-lockfault"))
import lockfault_worker as lw  # noqa: E402

lw.under_clock_shim()

import redis  # noqa: E402
import redis.exceptions  # noqa: E402
import redis.lock  # noqa: E402
import redis.sentinel  # noqa: E402

SOCKET_TIMEOUT = 5.0  # seconds: a dead or partitioned server gives info, not a hang


def version():
    return "redis-py %s (python3-redis %s)" % (redis.__version__, lw.debian_version("python3-redis"))


def ms_option(opts, name, default_s):
    """An option in whole milliseconds, as seconds."""
    v = opts.get(name)
    if v is None:
        return default_s
    if not v.isdigit() or not 0 < int(v) <= lw.MAX_MS:
        raise lw.malformed("field options.%s: %r is not a number of milliseconds from 1 to %d" % (name, v, lw.MAX_MS))
    return int(v) / 1000


def token_of(lk):
    t = lk.local.token
    return t.decode() if isinstance(t, bytes) else str(t)


def outcome(e):
    """LockError (LockNotOwnedError too): certainly not done; any other
    RedisError (connection, timeout): unknown."""
    msg = "%s: %s" % (type(e).__name__, e)
    if isinstance(e, redis.exceptions.LockError):
        return lw.Fail(msg)
    return lw.Unknown(msg)


class RedisPy(lw.Adapter):
    lock = "redis-py"
    needs = "single"
    caps = ["extend"]
    options = {"sleep_ms": (None, "the wait between attempts of a blocking acquire (redis-py's sleep, default 100)")}
    reads_wall_clock = False

    def __init__(self, worker):
        super().__init__(worker)
        self.redis = None
        self.locks = []  # every Lock made, re-pointed by connect
        self.sleep = 0.1

    def version(self):
        return version()

    def configure(self, opts):
        self.sleep = ms_option(opts, "sleep_ms", 0.1)

    def connect(self, ep):
        """A client for the current primary. Held locks are re-pointed too:
        their grant is a key and a token, valid on whichever server now
        serves the primary's data."""
        password = ep.get("password") or None
        kw = dict(password=password, socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=SOCKET_TIMEOUT)
        if ep.get("primary"):
            host, port = lw.host_port(ep["primary"], "endpoints.primary")
            client = redis.Redis(host=host, port=port, **kw)
        else:
            nodes = [lw.host_port(s, "endpoints.sentinels") for s in ep["sentinels"]]
            sentinel = redis.sentinel.Sentinel(nodes, socket_timeout=SOCKET_TIMEOUT, sentinel_kwargs={"socket_timeout": SOCKET_TIMEOUT})
            client = sentinel.master_for(ep["master"], **kw)
        self.use(client)

    def use(self, client):
        """Point the worker, and every lock it made, at a new client."""
        old, self.redis = self.redis, client
        for lk in self.locks:
            lk.redis = client
        if old is not None:
            try:
                old.close()
            except Exception:
                pass

    def new_lock(self, key, ttl_ms, wait_ms):
        return redis.lock.Lock(self.redis, key, timeout=ttl_ms / 1000, sleep=self.sleep, blocking_timeout=wait_ms / 1000)

    def acquire(self, key, ttl_ms, wait_ms):
        lk = self.new_lock(key, ttl_ms, wait_ms)
        start = lw.now()
        deadline = time.monotonic() + wait_ms / 1000
        try:
            # redis-py gives up as soon as its next try (every `sleep`)
            # would fall after blocking_timeout: keep calling it until
            # wait_ms has run out, as a caller that means "wait that long"
            # must.
            ok = lk.acquire(blocking_timeout=wait_ms / 1000)
            while not ok and time.monotonic() < deadline:
                time.sleep(min(self.sleep, max(0.0, deadline - time.monotonic())))
                ok = lk.acquire(blocking=False)
        except redis.exceptions.RedisError as e:
            raise lw.Unknown("%s: %s" % (type(e).__name__, e))
        if not ok:
            raise lw.Fail("lock not acquired within wait_ms")
        self.locks.append(lk)
        return lw.Grant(lk, token=token_of(lk), valid_until=lw.until(start, ttl_ms))

    def release(self, lk):
        try:
            lk.release()
        except redis.exceptions.RedisError as e:
            raise outcome(e)

    def extend(self, lk, ttl_ms):
        start = lw.now()
        try:
            lk.extend(ttl_ms / 1000, replace_ttl=True)
        except redis.exceptions.RedisError as e:
            raise outcome(e)
        return lw.Grant(valid_until=lw.until(start, ttl_ms))

    def close(self):
        if self.redis is not None:
            self.redis.close()


if __name__ == "__main__":
    sys.exit(lw.main(RedisPy))
