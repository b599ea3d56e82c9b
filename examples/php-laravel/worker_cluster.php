<?php

declare(strict_types=1);

/*
 * A lockfault worker for Laravel's Redis cache lock on a Redis Cluster,
 * unchanged: the lock worker.php runs (PhpRedisLock, acquire, release and
 * their outcomes are its), on a phpredis cluster connection made as a
 * Laravel application configures one: database.redis.clusters.<name>, one
 * seed per node, with the phpredis client (RedisManager::resolveCluster,
 * PhpRedisConnector::connectToCluster: a PhpRedisClusterConnection, a
 * PhpRedisConnection, so RedisStore::lock() returns a PhpRedisLock).
 *
 * The seeds are endpoints.cluster (this client's own proxies). phpredis
 * has no address remap: once it has the slot map it dials the addresses
 * the cluster announces, the nodes' peer proxies; lockfault's connect
 * remap, set up before the adapter connects (Worker::remapConnects), sends
 * each of those connects to this client's own proxy to that node, so a
 * fault cut on this client's links reaches it alone.
 *
 *   ./bin/simulate suite -backend process -worker '/usr/bin/php examples/php-laravel/worker_cluster.php'
 */

require __DIR__ . '/worker.php';

use Illuminate\Cache\RedisStore;
use Illuminate\Redis\RedisManager;
use Lockfault\Worker;

final class LaravelCluster extends Laravel
{
    public string $lock = 'laravel-redis-cluster';
    public string $needs = 'cluster';

    protected function store(): RedisStore
    {
        if ($this->store === null) {
            $seeds = [];
            foreach ($this->ep['cluster'] as $s) {
                [$host, $port] = Worker::hostPort($s, 'endpoints.cluster');
                $seeds[] = ['host' => $host, 'port' => $port];
            }
            // Laravel passes the cluster's options (timeouts, password) to
            // the RedisCluster constructor (createRedisClusterInstance).
            $options = ['timeout' => 5.0, 'read_timeout' => 5.0];
            if (($this->ep['password'] ?? '') !== '') {
                $options['password'] = $this->ep['password'];
            }
            $config = ['clusters' => ['default' => $seeds, 'options' => $options]];
            try {
                $manager = new RedisManager(null, 'phpredis', $config);
                $manager->connection('default');
            } catch (\RedisClusterException $e) {
                // The keyspace could not be mapped from any seed: nothing was sent.
                throw new Lockfault\Fail('RedisClusterException: ' . $e->getMessage());
            }
            $this->store = new RedisStore($manager, '', 'default');
        }
        return $this->store;
    }
}

Worker::main(LaravelCluster::class);
