<?php

declare(strict_types=1);

/*
 * A lockfault worker for symfony/lock's CombinedStore over one RedisStore
 * per independent master (php-redis), with ConsensusStrategy (a majority)
 * as symfony documents it for high availability, unchanged. The option
 * strategy=unanimous uses UnanimousStrategy instead. The mapping is in
 * SymfonyLock.php.
 *
 *   ./bin/simulate suite -backend process -worker '/usr/bin/php examples/php-symfony/worker_combined.php'
 */

require __DIR__ . '/SymfonyLock.php';

use Lockfault\Worker;
use Symfony\Component\Lock\PersistingStoreInterface;
use Symfony\Component\Lock\Store\CombinedStore;
use Symfony\Component\Lock\Store\RedisStore;
use Symfony\Component\Lock\Strategy\ConsensusStrategy;
use Symfony\Component\Lock\Strategy\UnanimousStrategy;

final class SymfonyCombined extends SymfonyLock
{
    public string $lock = 'symfony-combined';
    public string $needs = 'masters';
    public array $options = ['strategy' => [['consensus', 'unanimous'], 'the CombinedStore strategy (default consensus: a majority of the masters)']];
    private array $ep = [];
    private string $strategy = 'consensus';

    public function configure(array $options): void
    {
        $this->strategy = $options['strategy'] ?? 'consensus';
    }

    public function connect(array $ep): void
    {
        $this->ep = $ep;
        $this->newStore();
    }

    protected function store(): PersistingStoreInterface
    {
        $stores = array_map(fn ($m) => new RedisStore(Worker::phpredis($m, $this->ep['password'] ?? '')), $this->ep['masters']);
        return new CombinedStore($stores, $this->strategy === 'unanimous' ? new UnanimousStrategy() : new ConsensusStrategy());
    }
}

Worker::main(SymfonyCombined::class);
