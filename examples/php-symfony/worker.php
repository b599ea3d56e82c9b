<?php

declare(strict_types=1);

/*
 * A lockfault worker for symfony/lock's RedisStore on one Redis server
 * (php-redis), unchanged. The mapping is in SymfonyLock.php.
 *
 * With Sentinel endpoints the worker asks the Sentinels for the master
 * before each acquire (symfony's RedisStore takes a connection, not a
 * Sentinel) and builds a new store when the master moved; grants keep the
 * store that made them.
 *
 *   ./bin/simulate run -backend process -worker '/usr/bin/php examples/php-symfony/worker.php' suite/exclusion-no-faults.yaml
 */

require __DIR__ . '/SymfonyLock.php';

use Lockfault\Worker;
use Symfony\Component\Lock\PersistingStoreInterface;
use Symfony\Component\Lock\Store\RedisStore;

final class SymfonyRedis extends SymfonyLock
{
    public string $lock = 'symfony-redis';
    public string $needs = 'single';
    private array $ep = [];
    private string $addr = '';

    public function connect(array $ep): void
    {
        $this->ep = $ep;
        $this->addr = '';
        $this->newStore();
    }

    protected function beforeAcquire(): void
    {
        if (!empty($this->ep['sentinels']) && Worker::masterAddress($this->ep) !== $this->addr) {
            $this->newStore();
        }
    }

    protected function store(): PersistingStoreInterface
    {
        $this->addr = Worker::masterAddress($this->ep);
        return new RedisStore(Worker::phpredis($this->addr, $this->ep['password'] ?? ''));
    }
}

Worker::main(SymfonyRedis::class);
