"""Test code only: redis-py's lock, as examples/python-redis/worker.py runs
it, with an adapter broken on purpose the way many locks are: it dates the
key's expiry from the wall clock (time.time(), Unix ms) before the SET and
trusts it, claiming as validity what that date says is left. With the
clock shim, a client clock step back during the acquire makes it claim
time the key does not have: clock/client-steps catches it. Its correct
twin is examples/python-redis/worker.py (validity on CLOCK_MONOTONIC).
"""

import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "python-lockfault"))
sys.path.insert(0, os.path.join(here, "..", "python-redis"))
import lockfault_worker as lw  # noqa: E402

lw.under_clock_shim()

import worker as redis_py  # noqa: E402  (examples/python-redis/worker.py)


class WallClock(redis_py.RedisPy):
    lock = "redis-py-wallclock"
    reads_wall_clock = True

    def acquire(self, key, ttl_ms, wait_ms):
        expires_ms = time.time_ns() // 1_000_000 + ttl_ms  # the slip: a wall-clock date
        g = super().acquire(key, ttl_ms, wait_ms)
        left_ms = expires_ms - time.time_ns() // 1_000_000
        g.valid_until = lw.now() + left_ms * 1_000_000
        return g


if __name__ == "__main__":
    sys.exit(lw.main(WallClock))
