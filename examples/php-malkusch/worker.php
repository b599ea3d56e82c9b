<?php

declare(strict_types=1);

/*
 * A lockfault worker for malkusch/lock's PHPRedisMutex (Redlock over N
 * independent masters through php-redis), unchanged.
 *
 * The protocol is examples/php-lockfault/Worker.php; this file only maps it.
 *
 * malkusch/lock's API is one call around a callback:
 * $mutex->synchronized(fn () => ...) takes the lock, runs the callback and
 * releases. The worker drives it step by step with a PHP Fiber (PHP 8.1+):
 *   acquire  new PHPRedisMutex($masters, key, timeout) and a fiber that
 *            calls synchronized() with a callback that suspends the fiber;
 *            starting the fiber returns when the callback suspends (held:
 *            ok) or throws: TimeoutException (not acquired within the
 *            timeout) -> fail, another LockAcquireException (half of the
 *            servers or more unreachable) -> info.
 *   release  resume the fiber: the callback returns and synchronized()
 *            unlocks. ExecutionOutsideLockException (the callback outlived
 *            the timeout: the library refuses to delete the key) -> fail;
 *            LockReleaseException -> info when the library logged a
 *            server it could not reach, else fail (a majority answered
 *            that the key is not this grant's). A lease whose
 *            synchronized() has returned cannot be released again: that
 *            API has no way to say it (not-supported).
 *   extend   none (not-supported).
 *
 * The TTL. PHPRedisMutex takes one integer `timeout` in seconds (ttl_ms
 * rounded up) that is at once how long acquire keeps trying (wait_ms is not
 * expressible: an acquire of a taken lock blocks up to the timeout) and how
 * long the lock is held: the keys are set with timeout + 1 s, and
 * synchronized() claims the lock for `timeout` seconds from the start of the
 * attempt that won, measured with microtime(true), the wall clock (unlock
 * refuses with ExecutionOutsideLockException past it). valid_until is that
 * claim, read from the mutex (its private `acquired` timestamp, read only)
 * and moved onto CLOCK_MONOTONIC: hrtime now + (acquired + timeout -
 * microtime now).
 *
 *   ./bin/simulate run -backend process -worker '/usr/bin/php examples/php-malkusch/worker.php' suite/exclusion-no-faults.yaml
 */

require __DIR__ . '/../php-lockfault/Worker.php';
require_once 'Malkusch/Lock/autoload.php';

use Lockfault\Adapter;
use Lockfault\Fail;
use Lockfault\Grant;
use Lockfault\NotSupported;
use Lockfault\Unknown;
use Lockfault\Worker;
use malkusch\lock\exception\ExecutionOutsideLockException;
use malkusch\lock\exception\LockAcquireException;
use malkusch\lock\exception\LockReleaseException;
use malkusch\lock\exception\TimeoutException;
use malkusch\lock\mutex\PHPRedisMutex;
use malkusch\lock\mutex\RedisMutex;
use malkusch\lock\mutex\SpinlockMutex;

/** Counts the servers the mutex logged it could not reach (its PSR-3 logger, LoggerAwareInterface). */
final class Unreached extends Psr\Log\AbstractLogger
{
    public int $n = 0;

    public function log($level, $message, array $context = []): void
    {
        if ($level === Psr\Log\LogLevel::WARNING) {
            $this->n++;
            Worker::log('malkusch: ' . strtr((string) $message, ['{key}' => (string) ($context['key'] ?? ''), '{token}' => '', '{index}' => (string) ($context['index'] ?? '')]));
        }
    }
}

/** One grant: the fiber suspended inside synchronized(). */
final class Held
{
    public function __construct(public Fiber $fiber, public Unreached $log)
    {
    }
}

final class Malkusch extends Adapter
{
    public string $lock = 'malkusch-phpredis';
    public string $needs = 'masters';
    public array $caps = [];
    public array $options = [];
    public bool $readsWallClock = true;
    /** @var list<\Redis> */
    private array $masters = [];

    public function version(): string
    {
        $deb = Worker::debianVersion('php-malkusch-lock');
        return sprintf('malkusch/lock %s (php-malkusch-lock %s), phpredis %s (php-redis %s)',
            Worker::upstream($deb), $deb, phpversion('redis'), Worker::debianVersion('php-redis'));
    }

    public function connect(array $ep): void
    {
        // Held grants keep the connections they were granted on (their
        // mutex holds them); new grants use these.
        $this->masters = array_map(fn ($m) => Worker::phpredis($m, $ep['password'] ?? ''), $ep['masters']);
    }

    public function acquire(string $key, int $ttlMs, int $waitMs): Grant
    {
        $timeout = max(1, intdiv($ttlMs + 999, 1000));
        $mutex = new PHPRedisMutex($this->masters, $key, $timeout);
        $log = new Unreached();
        $mutex->setLogger($log);
        $fiber = new Fiber(fn () => $mutex->synchronized(fn () => Fiber::suspend('held')));
        try {
            $held = $fiber->start();
        } catch (TimeoutException $e) {
            throw new Fail('TimeoutException: ' . $e->getMessage());
        } catch (LockAcquireException $e) {
            throw new Unknown('LockAcquireException: ' . $e->getMessage() . ($e->getPrevious() ? ': ' . $e->getPrevious()->getMessage() : ''));
        }
        if ($held !== 'held') {
            throw new Unknown('synchronized() returned without running its callback');
        }
        $acquired = Closure::bind(fn () => $this->acquired, $mutex, SpinlockMutex::class)();
        $token = Closure::bind(fn () => $this->token, $mutex, RedisMutex::class)();
        $validUntil = Lockfault\now() + (int) (($acquired + $timeout - microtime(true)) * 1e9);
        return new Grant(new Held($fiber, $log), (string) $token, 0, $validUntil);
    }

    public function release(mixed $held): void
    {
        if ($held->fiber->isTerminated()) {
            throw new NotSupported("malkusch/lock releases a grant once, when synchronized()'s callback returns: a second release cannot be expressed");
        }
        $before = $held->log->n;
        try {
            $held->fiber->resume();
        } catch (ExecutionOutsideLockException $e) {
            throw new Fail('ExecutionOutsideLockException: ' . $e->getMessage());
        } catch (LockReleaseException $e) {
            $msg = 'LockReleaseException: ' . $e->getMessage();
            if ($held->log->n > $before) {
                throw new Unknown("$msg (a server could not be reached)");
            }
            throw new Fail($msg);
        }
    }
}

Worker::main(Malkusch::class);
