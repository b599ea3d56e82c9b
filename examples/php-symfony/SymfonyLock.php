<?php

declare(strict_types=1);

/*
 * The mapping of the protocol onto symfony/lock, shared by worker.php
 * (RedisStore, one server) and worker_combined.php (CombinedStore over one
 * RedisStore per independent master). symfony/lock is used unchanged,
 * through its LockFactory:
 *
 *   acquire  $factory->createLock(key, ttl, autoRelease: false)->acquire():
 *            true -> ok; false -> fail (taken); LockExpiredException (the
 *            key's lifetime ran out before acquire returned; the library
 *            released it) -> fail; LockAcquiringException (a server error)
 *            -> info. symfony/lock's blocking acquire(true) waits without
 *            end on these stores, so for wait_ms the worker retries
 *            acquire() every 100 ms +- 10 ms (the interval of symfony's own
 *            loop) until wait_ms has passed, as an application must.
 *   release  $lock->release(): ok; LockReleasingException caused by a server
 *            error -> info, without one (the key is still this grant's on
 *            the servers after the delete) -> fail. symfony/lock deletes a
 *            grant only where it is this grant's, and releasing a lease it
 *            no longer holds returns normally (nothing deleted): the worker
 *            asks $lock->isAcquired() first, and a lease that is gone is a
 *            fail (a server error on that question -> info).
 *   extend   $lock->refresh(ttl): LockConflictedException (not this grant's
 *            any more), LockExpiredException -> fail; LockAcquiringException
 *            -> info.
 *
 * Validity: symfony's Key keeps the instant its lifetime ends, started
 * before each write that set it (the TTL counted from before the request,
 * never after) and read on the wall clock (microtime); getRemainingLifetime()
 * is what it claims. valid_until is that remainder on CLOCK_MONOTONIC.
 * The servers measure the TTL on their own clocks (Redis TIME inside the
 * script), so the claim is the client's, not the key's.
 */

require __DIR__ . '/../php-lockfault/Worker.php';
require_once 'Symfony/Component/Lock/autoload.php';

use Lockfault\Adapter;
use Lockfault\Fail;
use Lockfault\Grant;
use Lockfault\Unknown;
use Lockfault\Worker;
use Symfony\Component\Lock\Exception\LockAcquiringException;
use Symfony\Component\Lock\Exception\LockConflictedException;
use Symfony\Component\Lock\Exception\LockExpiredException;
use Symfony\Component\Lock\Exception\LockReleasingException;
use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\LockInterface;
use Symfony\Component\Lock\PersistingStoreInterface;

abstract class SymfonyLock extends Adapter
{
    public array $caps = ['extend'];
    public bool $readsWallClock = true;
    private ?LockFactory $factory = null;

    public function version(): string
    {
        $deb = Worker::debianVersion('php-symfony-lock');
        return sprintf('symfony/lock %s (php-symfony-lock %s), phpredis %s (php-redis %s)',
            Worker::upstream($deb), $deb, phpversion('redis'), Worker::debianVersion('php-redis'));
    }

    /** The store for new grants: held grants keep the store they were granted by. */
    abstract protected function store(): PersistingStoreInterface;

    protected function newStore(): void
    {
        $this->factory = null;
    }

    /** Called before each acquire (a Sentinel client asks for the master here). */
    protected function beforeAcquire(): void
    {
    }

    public function acquire(string $key, int $ttlMs, int $waitMs): Grant
    {
        $this->beforeAcquire();
        $this->factory ??= new LockFactory($this->store());
        $lock = $this->factory->createLock($key, $ttlMs / 1000, false);
        $deadline = Lockfault\now() + $waitMs * 1000000;
        try {
            while (!$lock->acquire()) {
                // symfony's own blocking loop sleeps 100 ms +- 10 ms: the
                // jitter keeps contending clients from retrying in step
                // (split votes over several stores, again and again).
                $sleep = 100 + random_int(-10, 10);
                $leftNs = $deadline - Lockfault\now();
                if ($leftNs <= 0) {
                    throw new Fail('lock not acquired within wait_ms');
                }
                // The last try falls at the deadline, not a sleep before it:
                // wait_ms is how long to keep trying. What is left is
                // rounded up to whole ms, never down: 0.4 ms left is a
                // sleep of 1 ms and one more try, not a fail 0.4 ms early.
                $this->worker->idle(min($sleep, intdiv($leftNs + 999999, 1000000)));
            }
        } catch (LockExpiredException $e) {
            throw new Fail('LockExpiredException: ' . $e->getMessage());
        } catch (LockAcquiringException $e) {
            throw new Unknown(self::why($e));
        }
        return new Grant($lock, '', 0, self::validUntil($lock));
    }

    public function release(mixed $lock): void
    {
        try {
            // symfony's release of a key that is no longer this lease's
            // deletes nothing and says nothing (its check afterwards finds
            // no key of this token): ask first, so that releasing a lease
            // that is gone is a refusal, as the protocol wants.
            try {
                $held = $lock->isAcquired();
            } catch (\RedisException $e) {
                throw new Unknown('RedisException: ' . $e->getMessage());
            }
            if (!$held) {
                throw new Fail('the lease is not held (symfony: isAcquired is false)');
            }
            $lock->release();
        } catch (LockReleasingException $e) {
            if ($e->getPrevious() !== null) {
                throw new Unknown(self::why($e));
            }
            throw new Fail(self::why($e));
        }
    }

    public function extend(mixed $lock, int $ttlMs): Grant
    {
        try {
            $lock->refresh($ttlMs / 1000);
        } catch (LockConflictedException|LockExpiredException $e) {
            throw new Fail(self::why($e));
        } catch (LockAcquiringException $e) {
            throw new Unknown(self::why($e));
        }
        return new Grant(null, '', 0, self::validUntil($lock));
    }

    private static function validUntil(LockInterface $lock): int
    {
        $left = $lock->getRemainingLifetime();
        return $left === null ? 0 : Lockfault\now() + (int) ($left * 1e9);
    }

    private static function why(\Throwable $e): string
    {
        $msg = (new \ReflectionClass($e))->getShortName() . ': ' . $e->getMessage();
        for ($p = $e->getPrevious(); $p !== null; $p = $p->getPrevious()) {
            $msg .= ': ' . (new \ReflectionClass($p))->getShortName() . ': ' . $p->getMessage();
        }
        return $msg;
    }
}
