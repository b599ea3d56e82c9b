<?php

declare(strict_types=1);

/*
 * A lockfault worker for Laravel's Redis cache lock (illuminate/cache
 * RedisLock, as PhpRedisLock over a php-redis connection), unchanged.
 *
 * The lock is made the way Cache::lock() makes it in a Laravel application
 * whose cache store is redis with the phpredis client: an
 * Illuminate\Redis\RedisManager (driver phpredis, one connection `default`)
 * behind an Illuminate\Cache\RedisStore, whose lock() returns a
 * PhpRedisLock. The protocol is examples/php-lockfault/Worker.php; this
 * file only maps it:
 *
 *   acquire  $store->lock(key, seconds)->get() (one SET NX EX), again
 *            every 250 ms (the option block_sleep_ms, as block() would)
 *            until wait_ms has passed: block() itself counts its wait in
 *            whole seconds of time() and gives up early. true -> ok; false
 *            -> fail; a RedisException -> info.
 *   release  $lock->release() (compare the owner and delete, in Lua): true
 *            -> ok, false (not this owner's) -> fail, RedisException -> info.
 *   extend   none in Laravel 8 (not-supported).
 *
 * The TTL is whole seconds (ttl_ms rounded up). Laravel claims no validity
 * of its own; valid_until is the start of the acquire call plus the TTL
 * (the key cannot expire before that instant: the SET that made it came
 * later).
 *
 * With Sentinel endpoints the worker asks the Sentinels for the master
 * before each acquire (Laravel 8's phpredis connector has no Sentinel
 * support) and builds a new connection when the master moved.
 *
 *   ./bin/simulate run -backend process -worker '/usr/bin/php examples/php-laravel/worker.php' suite/exclusion-no-faults.yaml
 */

require __DIR__ . '/../php-lockfault/Worker.php';
require_once 'Illuminate/Cache/autoload.php';
require_once 'Illuminate/Redis/autoload.php';

use Illuminate\Cache\RedisStore;
use Illuminate\Contracts\Cache\LockTimeoutException;
use Illuminate\Redis\RedisManager;
use Lockfault\Adapter;
use Lockfault\Fail;
use Lockfault\Grant;
use Lockfault\Unknown;
use Lockfault\Worker;

class Laravel extends Adapter
{
    public string $lock = 'laravel-redis';
    public string $needs = 'single';
    public array $caps = [];
    public array $options = ['block_sleep_ms' => [null, "the wait between attempts of a blocking acquire (betweenBlockedAttemptsSleepFor, default 250)"]];
    public bool $readsWallClock = false; // SET NX EX: the server keeps the time; the wait is measured on hrtime
    protected array $ep = [];
    private string $addr = '';
    protected ?RedisStore $store = null;
    private int $sleepMs = 250;

    public function version(): string
    {
        $deb = Worker::debianVersion('php-illuminate-cache');
        return sprintf('illuminate/cache %s (php-illuminate-cache %s, php-illuminate-redis %s), phpredis %s (php-redis %s)',
            Worker::upstream($deb), $deb, Worker::debianVersion('php-illuminate-redis'), phpversion('redis'), Worker::debianVersion('php-redis'));
    }

    public function configure(array $options): void
    {
        $v = $options['block_sleep_ms'] ?? '250';
        if (!ctype_digit($v) || (int) $v < 1 || (int) $v > Lockfault\MAX_MS) {
            throw Lockfault\Refused::malformed('field options.block_sleep_ms: ' . Lockfault\q($v) . ' is not a number of milliseconds from 1 to ' . Lockfault\MAX_MS);
        }
        $this->sleepMs = (int) $v;
    }

    public function connect(array $ep): void
    {
        $this->ep = $ep;
        $this->store = null;
    }

    /** The store for the next acquire: a connection to the current master. */
    protected function store(): RedisStore
    {
        $addr = Worker::masterAddress($this->ep);
        if ($this->store === null || $addr !== $this->addr) {
            [$host, $port] = Worker::hostPort($addr, 'endpoints');
            $conf = ['host' => $host, 'port' => $port, 'timeout' => 5.0, 'read_timeout' => 5.0];
            if (($this->ep['password'] ?? '') !== '') {
                $conf['password'] = $this->ep['password'];
            }
            $this->store = new RedisStore(new RedisManager(null, 'phpredis', ['default' => $conf]), '', 'default');
            $this->addr = $addr;
        }
        return $this->store;
    }

    public function acquire(string $key, int $ttlMs, int $waitMs): Grant
    {
        $seconds = max(1, intdiv($ttlMs + 999, 1000));
        $start = Lockfault\now();
        try {
            $lock = $this->store()->lock($key, $seconds);
            // Laravel's block($seconds) measures its wait in whole seconds of
            // time(): started at x.9 s, block(1) gives up after one sleep.
            // The worker keeps trying, get() every sleep_ms, until wait_ms
            // (in ms) has run out.
            $deadline = Lockfault\now() + $waitMs * 1000000;
            // The sleep is the worker's idle, which applies control
            // commands meanwhile (PROTOCOL.md: at once, even while an
            // operation blocks), and what is left is rounded up to whole
            // ms: the last try falls at the deadline, never before it.
            while (!($ok = $lock->get())) {
                $leftNs = $deadline - Lockfault\now();
                if ($leftNs <= 0) {
                    break;
                }
                $this->worker->idle(min($this->sleepMs, intdiv($leftNs + 999999, 1000000)));
            }
        } catch (\RedisException $e) {
            throw new Unknown('RedisException: ' . $e->getMessage());
        }
        if (!$ok) {
            throw new Fail('lock not acquired within wait_ms');
        }
        return new Grant($lock, $lock->owner(), 0, Lockfault\until($start, $seconds * 1000));
    }

    public function release(mixed $lock): void
    {
        try {
            $ok = $lock->release();
        } catch (\RedisException $e) {
            throw new Unknown('RedisException: ' . $e->getMessage());
        }
        if (!$ok) {
            throw new Fail('release refused: the key is not this owner\'s');
        }
    }
}

// worker_cluster.php requires this file for the class.
if (realpath($_SERVER['SCRIPT_FILENAME']) === __FILE__) {
    Worker::main(Laravel::class);
}
