#!/usr/bin/python3
"""A lockfault worker for redis-py's lock on a Redis Cluster, unchanged:
RedisCluster(...).lock(...), the same redis.lock.Lock as worker.py's, on
redis-py's own cluster client (redis.cluster.RedisCluster).

Everything but the client is worker.py's (acquire, release, extend and their
outcomes, valid_until, the sleep_ms option): see its docstring.

The client: RedisCluster seeded with endpoints.cluster (this client's own
proxy to every node). The cluster announces other addresses (the nodes'
peer proxies) in CLUSTER SLOTS, MOVED and ASK; endpoints.cluster_remap maps
each to this client's own proxy to that node. redis-py 4.3.4 has no
address_remap (it came in redis-py 5), so the worker gives RedisCluster a
connection_class, one of the connection arguments RedisCluster passes on to
every node's pool (redis.cluster.REDIS_ALLOWED_KEYS; with url= it builds
each node's ConnectionPool from them): a redis.connection.Connection that
dials the remapped address of the node it is made for. The cluster client
keeps the node's announced name, so its slot map, redirections and retries
are redis-py's own; only the socket goes through the client's proxy, where
the client-scoped faults reach it.

    ./bin/simulate suite -backend process -worker '/usr/bin/python3 examples/python-redis/worker_cluster.py'
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python-lockfault"))
import lockfault_worker as lw  # noqa: E402

lw.under_clock_shim()

import redis.cluster  # noqa: E402
import redis.connection  # noqa: E402

from worker import SOCKET_TIMEOUT, RedisPy  # noqa: E402


def remapping(remap):
    """A Connection class that dials remap[(host, port)] for a node
    announced as (host, port), and the address itself for any other."""

    class RemappedConnection(redis.connection.Connection):
        def __init__(self, host="localhost", port=6379, **kw):
            host, port = remap.get((host, int(port)), (host, port))
            super().__init__(host=host, port=port, **kw)

    return RemappedConnection


class RedisPyCluster(RedisPy):
    lock = "redis-py-cluster"
    needs = "cluster"

    def connect(self, ep):
        seeds = [lw.host_port(s, "endpoints.cluster") for s in ep["cluster"]]
        remap = {lw.host_port(a, "endpoints.cluster_remap"): lw.host_port(b, "endpoints.cluster_remap")
                 for a, b in ep.get("cluster_remap", {}).items()}
        host, port = seeds[0]
        client = redis.cluster.RedisCluster(
            url="redis://%s:%d" % (host, port),
            startup_nodes=[redis.cluster.ClusterNode(h, p) for h, p in seeds[1:]],
            password=ep.get("password") or None,
            socket_timeout=SOCKET_TIMEOUT,
            socket_connect_timeout=SOCKET_TIMEOUT,
            connection_class=remapping(remap),
        )
        self.use(client)

    def new_lock(self, key, ttl_ms, wait_ms):
        return self.redis.lock(key, timeout=ttl_ms / 1000, sleep=self.sleep, blocking_timeout=wait_ms / 1000)


if __name__ == "__main__":
    sys.exit(lw.main(RedisPyCluster))
