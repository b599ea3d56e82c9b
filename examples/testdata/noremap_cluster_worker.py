#!/usr/bin/python3
"""The redis-py cluster worker with its remap taken out: RedisCluster dials
the addresses the cluster announces (the nodes' peer proxies), not the
client's own proxies. examples/cluster_test.go shows the path check
catches it."""

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "python-redis"))
sys.path.insert(0, os.path.join(here, "..", "python-lockfault"))
import lockfault_worker as lw  # noqa: E402
import redis.connection  # noqa: E402
import worker_cluster  # noqa: E402

worker_cluster.remapping = lambda remap: redis.connection.Connection
sys.exit(lw.main(worker_cluster.RedisPyCluster))
