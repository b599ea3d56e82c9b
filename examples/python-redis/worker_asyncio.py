#!/usr/bin/python3
"""A lockfault worker for redis-py's asyncio lock, redis.asyncio.lock.Lock, unchanged.

The mapping is the one of worker.py (the synchronous redis.lock.Lock); what
differs is where the library runs: an asyncio event loop on a thread of its
own, started once, owning every connection. Each operation is a coroutine
submitted to that loop from the worker's operation thread
(asyncio.run_coroutine_threadsafe) and awaited there, so the protocol's
threads never touch the loop's objects. redis.asyncio's Lock measures its
wait with loop.time(), the monotonic clock: a wall-clock step reaches none
of its decisions.

    ./bin/simulate run -backend process -worker '/usr/bin/python3 examples/python-redis/worker_asyncio.py' gc-pause
"""

import asyncio
import os
import sys
import time
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python-lockfault"))
import lockfault_worker as lw  # noqa: E402

lw.under_clock_shim()

import redis.asyncio  # noqa: E402
import redis.asyncio.lock  # noqa: E402
import redis.asyncio.sentinel  # noqa: E402
import redis.exceptions  # noqa: E402

from worker import SOCKET_TIMEOUT, RedisPy, outcome, token_of  # noqa: E402


class RedisPyAsyncio(RedisPy):
    """RedisPy's declaration and options; every call goes through the loop."""

    lock = "redis-py-asyncio"

    def __init__(self, worker):
        super().__init__(worker)
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True, name="asyncio").start()

    def run(self, coro):
        """Runs a coroutine on the library's loop and waits for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def version(self):
        return super().version() + ", redis.asyncio.lock"

    def connect(self, ep):
        self.run(self._connect(ep))

    async def _connect(self, ep):
        password = ep.get("password") or None
        kw = dict(password=password, socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=SOCKET_TIMEOUT)
        if ep.get("primary"):
            host, port = lw.host_port(ep["primary"], "endpoints.primary")
            client = redis.asyncio.Redis(host=host, port=port, **kw)
        else:
            nodes = [lw.host_port(s, "endpoints.sentinels") for s in ep["sentinels"]]
            sentinel = redis.asyncio.sentinel.Sentinel(nodes, socket_timeout=SOCKET_TIMEOUT, sentinel_kwargs={"socket_timeout": SOCKET_TIMEOUT})
            client = sentinel.master_for(ep["master"], **kw)
        old, self.redis = self.redis, client
        for lk in self.locks:
            lk.redis = client
        if old is not None:
            try:
                await old.close()
            except Exception:
                pass

    def acquire(self, key, ttl_ms, wait_ms):
        return self.run(self._acquire(key, ttl_ms, wait_ms))

    async def _acquire(self, key, ttl_ms, wait_ms):
        lk = redis.asyncio.lock.Lock(self.redis, key, timeout=ttl_ms / 1000, sleep=self.sleep, blocking_timeout=wait_ms / 1000)
        start = lw.now()
        deadline = time.monotonic() + wait_ms / 1000
        try:
            # As worker.py: keep trying until wait_ms has run out (redis-py
            # stops when its next try would fall after blocking_timeout).
            ok = await lk.acquire(blocking_timeout=wait_ms / 1000)
            while not ok and time.monotonic() < deadline:
                await asyncio.sleep(min(self.sleep, max(0.0, deadline - time.monotonic())))
                ok = await lk.acquire(blocking=False)
        except redis.exceptions.RedisError as e:
            raise lw.Unknown("%s: %s" % (type(e).__name__, e))
        if not ok:
            raise lw.Fail("lock not acquired within wait_ms")
        self.locks.append(lk)
        return lw.Grant(lk, token=token_of(lk), valid_until=lw.until(start, ttl_ms))

    def release(self, lk):
        self.run(self._release(lk))

    async def _release(self, lk):
        try:
            await lk.release()
        except redis.exceptions.RedisError as e:
            raise outcome(e)

    def extend(self, lk, ttl_ms):
        return self.run(self._extend(lk, ttl_ms))

    async def _extend(self, lk, ttl_ms):
        start = lw.now()
        try:
            await lk.extend(ttl_ms / 1000, replace_ttl=True)
        except redis.exceptions.RedisError as e:
            raise outcome(e)
        return lw.Grant(valid_until=lw.until(start, ttl_ms))

    def close(self):
        if self.redis is not None:
            self.run(self.redis.close())


if __name__ == "__main__":
    sys.exit(lw.main(RedisPyAsyncio))
