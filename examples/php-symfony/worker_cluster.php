<?php

declare(strict_types=1);

/*
 * A lockfault worker for symfony/lock's RedisStore on a Redis Cluster
 * (php-redis's \RedisCluster, which RedisStore accepts), unchanged. The
 * mapping is in SymfonyLock.php, as for worker.php.
 *
 * The client is seeded with endpoints.cluster (this client's own proxies).
 * phpredis has no address remap: once it has the slot map it dials the
 * addresses the cluster announces, the nodes' peer proxies. The worker
 * runs under lockfault's connect remap (Worker::remapConnects,
 * faults/clockshim/connectremap.c), which sends each of those connects to
 * this client's own proxy to that node (endpoints.cluster_remap), so a
 * fault cut on this client's links reaches it alone.
 *
 *   ./bin/simulate suite -backend process -worker '/usr/bin/php examples/php-symfony/worker_cluster.php'
 */

require __DIR__ . '/SymfonyLock.php';

use Lockfault\Worker;
use Symfony\Component\Lock\PersistingStoreInterface;
use Symfony\Component\Lock\Store\RedisStore;

final class SymfonyRedisCluster extends SymfonyLock
{
    public string $lock = 'symfony-redis-cluster';
    public string $needs = 'cluster';
    private array $ep = [];

    public function connect(array $ep): void
    {
        $this->ep = $ep;
        $this->newStore();
    }

    protected function store(): PersistingStoreInterface
    {
        return new RedisStore(Worker::phpredisCluster($this->ep));
    }
}

Worker::main(SymfonyRedisCluster::class);
