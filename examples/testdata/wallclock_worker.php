<?php

declare(strict_types=1);

/*
 * Test code only: a small phpredis lock (SET NX PX, compare-and-delete
 * release) broken on purpose the way many locks are (wallclock=1, the
 * default): it dates the key's expiry from the wall clock (microtime(),
 * Unix ms) before the SET and trusts it, claiming as validity what that
 * date says is left. Under the clock shim, a client clock step back during
 * the acquire makes it claim time the key does not have: clock/client-steps
 * catches it. Its twin (option wallclock=0) dates it on hrtime (the
 * monotonic clock) and holds.
 */

require __DIR__ . '/../php-lockfault/Worker.php';

use Lockfault\Adapter;
use Lockfault\Fail;
use Lockfault\Grant;
use Lockfault\Unknown;
use Lockfault\Worker;

final class WallClockLock extends Adapter
{
    public string $lock = 'phpredis-wallclock';
    public string $needs = 'single';
    public array $caps = [];
    public array $options = ['wallclock' => [['0', '1'], 'date the expiry on the wall clock (1, the slip, default) or on hrtime (0)']];
    public bool $readsWallClock = true;
    private array $ep = [];
    private ?\Redis $redis = null;
    private bool $wall = true;

    public function version(): string
    {
        return 'lockfault test code, phpredis ' . phpversion('redis');
    }

    public function configure(array $options): void
    {
        $this->wall = ($options['wallclock'] ?? '1') === '1';
    }

    public function connect(array $ep): void
    {
        $this->ep = $ep;
        $this->redis = null;
    }

    private function redis(): \Redis
    {
        if ($this->redis === null) {
            [$host, $port] = Worker::hostPort(Worker::masterAddress($this->ep), 'endpoints');
            $r = new \Redis();
            $r->connect($host, $port, 5.0, null, 0, 5.0);
            if (($this->ep['password'] ?? '') !== '') {
                $r->auth($this->ep['password']);
            }
            $this->redis = $r;
        }
        return $this->redis;
    }

    /** Now in ms on the clock the lock dates its expiry on. */
    private function nowMs(): int
    {
        return $this->wall ? (int) floor(microtime(true) * 1000) : intdiv(hrtime(true), 1000000);
    }

    public function acquire(string $key, int $ttlMs, int $waitMs): Grant
    {
        $token = bin2hex(random_bytes(16));
        $deadline = Lockfault\now() + $waitMs * 1000000;
        try {
            while (true) {
                $expires = $this->nowMs() + $ttlMs;
                if ($this->redis()->set($key, $token, ['nx', 'px' => $ttlMs])) {
                    $left = $expires - $this->nowMs();
                    return new Grant([$key, $token], $token, 0, Lockfault\now() + $left * 1000000);
                }
                if (Lockfault\now() >= $deadline) {
                    throw new Fail('lock not acquired within wait_ms');
                }
                $this->worker->idle(5);
            }
        } catch (\RedisException $e) {
            throw new Unknown('RedisException: ' . $e->getMessage());
        }
    }

    public function release(mixed $h): void
    {
        try {
            $n = $this->redis()->eval('if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end', [$h[0], $h[1]], 1);
        } catch (\RedisException $e) {
            throw new Unknown('RedisException: ' . $e->getMessage());
        }
        if ($n !== 1) {
            throw new Fail('release refused: the key is not this owner\'s');
        }
    }
}

Worker::main(WallClockLock::class);
