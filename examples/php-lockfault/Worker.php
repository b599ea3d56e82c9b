<?php

declare(strict_types=1);

/*
 * The lockfault worker protocol (docs/PROTOCOL.md) for a lock library in PHP.
 *
 * One file holds everything a PHP worker needs besides its lock: strict line
 * parsing (exact keys, bounds, op ids, the 1 MiB line limit, error codes),
 * operations run one at a time and in order while control commands
 * (failpoint, clock, cut, endpoints) take effect at once, the critical
 * section against the harness's resource server, the failpoints every worker
 * hits (before-acquire, before-release, cs-after-read, cs-before-write),
 * `round`, and `shutdown`. A worker is a small adapter (a subclass of
 * Adapter) run with Worker::main(MyAdapter::class).
 *
 * PHP runs one thread. Every failpoint, hold and sleep of the worker is the
 * worker's own code, so the worker reads its commands there (and between
 * operations): a failpoint armed, a cut or new endpoints sent while a
 * library call blocks take effect at the first point where they can matter.
 * The clock is the exception: a library that reads the wall clock must see a
 * step while it runs. So the worker runs under lockfault's clock shim
 * (faults/clockshim, `make shim`; it moves only CLOCK_REALTIME, by an offset
 * kept in a file), and a reader process forked at start-up reads stdin,
 * hands every line to the worker over a socket pair, and writes a valid
 * `clock` command's offset into that file at once, whatever the worker is
 * doing. hrtime(), on which every validity here is measured, reads
 * CLOCK_MONOTONIC on Linux and is not moved.
 */

namespace Lockfault;

const MAX_LINE = 1 << 20;
const MAX_OP = (1 << 53) - 1;
const MAX_MS = 3600000;
const MAX_COUNT = 1000000;
const MAX_OFFSET_MS = 366 * 86400000;
const MAX_STRING = 4096;
const MAX_ERROR = 2000;
const MAX_DEPTH = 64;
const RESOURCE_TIMEOUT = 5.0;
const ENV_CLOCK_FD = 'LOCKFAULT_WORKER_CLOCK_FD';
const ENV_REMAP = 'LOCKFAULT_CONNECT_REMAP';
const REMAP_SHIM = 'libconnectremap.so';
const MAX_REMAP = 1024; // entries of the connect remap (the library's bound)

const WORKER_FAILPOINTS = ['before-acquire', 'before-release', 'cs-after-read', 'cs-before-write'];
const COMMANDS = [
    'init' => ['client', 'lock', 'options', 'endpoints', 'resource'],
    'acquire' => ['op', 'key', 'lease', 'ttl_ms', 'wait_ms'],
    'cs' => ['op', 'lease', 'hold_ms', 'write_if_valid_ms'],
    'release' => ['op', 'lease'],
    'extend' => ['op', 'lease', 'ttl_ms'],
    'round' => ['op', 'op_cs', 'op_release', 'key', 'lease', 'ttl_ms', 'wait_ms', 'hold_ms'],
    'failpoint' => ['name', 'action', 'count', 'ms'],
    'clock' => ['offset_ms'],
    'cut' => [],
    'endpoints' => ['endpoints'],
    'shutdown' => [],
];
const OPERATIONS = ['acquire', 'cs', 'release', 'extend', 'round'];
const ENDPOINT_KEYS = ['cluster', 'cluster_remap', 'master', 'masters', 'etcd', 'password', 'primary', 'sentinels'];
const COMMAND_NAMES = 'init, acquire, cs, release, extend, round, failpoint, clock, cut, endpoints, shutdown';

/** CLOCK_MONOTONIC in ns, the harness's clock. */
function now(): int
{
    return hrtime(true);
}

/** The answer to a clock command: the offset asked and the wall time this process reads now (Unix ms). */
function clockMessage(int $offsetMs, ?int $wallMs = null): array
{
    $m = ['type' => 'clock', 'wall_ms' => $wallMs ?? (int) floor(microtime(true) * 1000)];
    if ($offsetMs !== 0) {
        $m['offset_ms'] = $offsetMs;
    }
    return $m;
}

/** The end of a validity of $ms milliseconds that began at $startNs. */
function until(int $startNs, int $ms): int
{
    return $startNs + $ms * 1000000;
}

function clip(string $s): string
{
    return strlen($s) <= MAX_ERROR ? $s : substr($s, 0, MAX_ERROR) . '...';
}

function q(mixed $v): string
{
    return json_encode(is_string($v) ? substr($v, 0, 100) : $v, JSON_UNESCAPED_SLASHES | JSON_INVALID_UTF8_SUBSTITUTE);
}

/** A command the worker refuses; code is malformed or not-supported. */
final class Refused extends \Exception
{
    public function __construct(public readonly string $protocolCode, string $msg)
    {
        parent::__construct($msg);
    }

    public static function malformed(string $msg): self
    {
        return new self('malformed', $msg);
    }

    public static function notSupported(string $msg): self
    {
        return new self('not-supported', $msg);
    }
}

/** The operation certainly did not happen (the lock is taken, the grant is gone). */
final class Fail extends \Exception
{
}

/** The outcome is unknown (timeout, lost connection): replied as info. */
final class Unknown extends \Exception
{
}

/** The lock cannot do this operation. */
final class NotSupported extends \Exception
{
}

/** What an adapter's acquire or extend returns. */
final class Grant
{
    /** @param int $validUntil the end of the validity the library claims, CLOCK_MONOTONIC ns (0: no end) */
    public function __construct(public mixed $handle = null, public string $token = '', public int $fence = 0, public int $validUntil = 0)
    {
    }
}

/** One lock library: set the properties, implement connect, acquire, release (extend if it has one). */
abstract class Adapter
{
    public string $lock = '';
    public string $needs = 'single';
    /** @var list<string> only what the library itself promises */
    public array $caps = [];
    /** @var list<string> failpoints the library's code hits, beyond WORKER_FAILPOINTS */
    public array $failpoints = [];
    /** @var array<string, array{0: ?list<string>, 1: string}> option name => [allowed values or null, help] */
    public array $options = [];
    /** false: `clock` moves nothing this lock reads, even without the shim */
    public bool $readsWallClock = true;

    public function __construct(protected Worker $worker)
    {
    }

    abstract public function version(): string;

    /** Checks option values (names were checked against $this->options). */
    public function configure(array $options): void
    {
    }

    abstract public function connect(array $endpoints): void;

    abstract public function acquire(string $key, int $ttlMs, int $waitMs): Grant;

    abstract public function release(mixed $handle): void;

    public function extend(mixed $handle, int $ttlMs): Grant
    {
        throw new NotSupported("lock {$this->lock} cannot extend");
    }

    public function close(): void
    {
    }
}

/** A strict JSON reader: exactly one value, no duplicate keys, bounded depth. Objects are JsonObject. */
final class Json
{
    private int $i = 0;

    private function __construct(private readonly string $s)
    {
    }

    public static function decode(string $s): mixed
    {
        if (!mb_check_encoding($s, 'UTF-8')) {
            throw Refused::malformed('not UTF-8');
        }
        $p = new self($s);
        $v = $p->value(0);
        $p->ws();
        if ($p->i !== strlen($s)) {
            throw Refused::malformed('data after the JSON object (one object per line)');
        }
        return $v;
    }

    private function ws(): void
    {
        $this->i += strspn($this->s, " \t\r\n", $this->i);
    }

    private function bad(string $what): Refused
    {
        return Refused::malformed("not JSON: $what at byte " . ($this->i + 1));
    }

    private function value(int $depth): mixed
    {
        if ($depth > MAX_DEPTH) {
            throw Refused::malformed('not JSON: nested too deep');
        }
        $this->ws();
        $c = $this->s[$this->i] ?? '';
        if ($c === '{') {
            $this->i++;
            $m = [];
            $this->ws();
            if (($this->s[$this->i] ?? '') === '}') {
                $this->i++;
                return new JsonObject($m);
            }
            while (true) {
                $this->ws();
                if (($this->s[$this->i] ?? '') !== '"') {
                    throw $this->bad('want a key');
                }
                $k = $this->string();
                if (array_key_exists($k, $m)) {
                    throw Refused::malformed('field ' . substr((string) $k, 0, 100) . ': given twice');
                }
                $this->ws();
                if (($this->s[$this->i] ?? '') !== ':') {
                    throw $this->bad("want ':'");
                }
                $this->i++;
                $m[$k] = $this->value($depth + 1);
                $this->ws();
                $c = $this->s[$this->i++] ?? '';
                if ($c === '}') {
                    return new JsonObject($m);
                }
                if ($c !== ',') {
                    throw $this->bad("want ',' or '}'");
                }
            }
        }
        if ($c === '[') {
            $this->i++;
            $l = [];
            $this->ws();
            if (($this->s[$this->i] ?? '') === ']') {
                $this->i++;
                return $l;
            }
            while (true) {
                $l[] = $this->value($depth + 1);
                $this->ws();
                $c = $this->s[$this->i++] ?? '';
                if ($c === ']') {
                    return $l;
                }
                if ($c !== ',') {
                    throw $this->bad("want ',' or ']'");
                }
            }
        }
        if ($c === '"') {
            return $this->string();
        }
        foreach (['true' => true, 'false' => false, 'null' => null] as $lit => $v) {
            if (substr_compare($this->s, $lit, $this->i, strlen($lit)) === 0) {
                $this->i += strlen($lit);
                return $v;
            }
        }
        if (preg_match('/\G-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/', $this->s, $mm, 0, $this->i) && $mm[0] !== '') {
            $this->i += strlen($mm[0]);
            $v = json_decode($mm[0]); // an integer beyond PHP_INT_MAX is a float: "not an integer"
            return (isset($mm[1]) && $mm[1] !== '') || (isset($mm[2]) && $mm[2] !== '') ? (float) $v : $v;
        }
        throw $this->bad('unexpected ' . ($c === '' ? 'end' : q($c)));
    }

    private function string(): string
    {
        if (!preg_match('/\G"(?:[^"\\\\\x00-\x1f]++|\\\\(?:["\\\\\/bfnrt]|u[0-9a-fA-F]{4}))*+"/', $this->s, $mm, 0, $this->i)) {
            throw $this->bad('bad string');
        }
        $this->i += strlen($mm[0]);
        $v = json_decode($mm[0]);
        if (!is_string($v)) {
            throw $this->bad('bad string');
        }
        return $v;
    }
}

/** A JSON object (PHP arrays cannot tell {} from []). */
final class JsonObject
{
    public function __construct(public array $m)
    {
    }
}

/** The harness's commands, checked: exact keys, required fields, bounds. */
final class Command
{
    public static function validate(mixed $v): array
    {
        if (!$v instanceof JsonObject) {
            throw Refused::malformed('not a JSON object');
        }
        $c = $v->m;
        if (!array_key_exists('cmd', $c)) {
            throw Refused::malformed('field cmd: missing (allowed: ' . COMMAND_NAMES . ')');
        }
        $cmd = $c['cmd'];
        if (!is_string($cmd)) {
            throw Refused::malformed('field cmd: not a string');
        }
        if (!array_key_exists($cmd, COMMANDS)) {
            throw Refused::notSupported('field cmd: unknown command ' . q($cmd) . ' (allowed: ' . COMMAND_NAMES . ')');
        }
        $allowed = array_merge(['cmd'], COMMANDS[$cmd]);
        foreach ($c as $k => $x) {
            if (!in_array((string) $k, $allowed, true)) {
                $sorted = $allowed;
                sort($sorted);
                throw Refused::malformed("$cmd: field " . substr((string) $k, 0, 100) . ': unknown key (allowed: ' . implode(', ', $sorted) . ')');
            }
            if ($x === null) {
                throw Refused::malformed("field $k: null is not allowed (leave the key out)");
            }
        }
        self::strings($c, ['client', 'lock', 'resource', 'key', 'lease', 'name', 'action']);
        if (in_array($cmd, OPERATIONS, true)) {
            self::num($c, 'op', 1, MAX_OP);
        }
        if ($cmd === 'init') {
            if (!isset($c['client'])) {
                throw Refused::malformed('field client: init needs the client name');
            }
            if (isset($c['options'])) {
                $o = $c['options'];
                foreach ($o instanceof JsonObject ? $o->m : [] as $ok => $ov) {
                    if ($ov === null) {
                        throw Refused::malformed('field options.' . substr((string) $ok, 0, 100) . ': null is not allowed (leave the key out)');
                    }
                }
                if (!$o instanceof JsonObject || count(array_filter($o->m, 'is_string')) !== count($o->m)) {
                    throw Refused::malformed('field options: want an object of strings');
                }
                self::strings($o->m, array_map('strval', array_keys($o->m)));
                $c['options'] = $o->m;
            }
        }
        if (isset($c['endpoints'])) {
            $c['endpoints'] = self::endpoints($c['endpoints']);
        }
        if ($cmd === 'endpoints' && !isset($c['endpoints'])) {
            throw Refused::malformed('field endpoints: missing');
        }
        if ($cmd === 'acquire' || $cmd === 'round') {
            if (!isset($c['key'])) {
                throw Refused::malformed("field key: $cmd needs the key the lock guards");
            }
            self::num($c, 'ttl_ms', 1, MAX_MS);
            self::num($c, 'wait_ms', 0, MAX_MS, 0);
        }
        if (in_array($cmd, ['cs', 'release', 'extend', 'round'], true) && !isset($c['lease'])) {
            throw Refused::malformed("field lease: $cmd needs the lease");
        }
        if ($cmd === 'cs' || $cmd === 'round') {
            self::num($c, 'hold_ms', 0, MAX_MS, 0);
        }
        if ($cmd === 'cs') {
            self::num($c, 'write_if_valid_ms', 0, MAX_MS, 0);
        }
        if ($cmd === 'round') {
            $ids = [$c['op']];
            foreach (['op_cs', 'op_release'] as $k) {
                $id = self::num($c, $k, 1, MAX_OP);
                if (in_array($id, $ids, true)) {
                    throw Refused::malformed("field $k: round needs op, op_cs and op_release all different");
                }
                $ids[] = $id;
            }
        }
        if ($cmd === 'extend') {
            self::num($c, 'ttl_ms', 1, MAX_MS);
        }
        if ($cmd === 'failpoint') {
            if (!isset($c['name'])) {
                throw Refused::malformed('field name: a failpoint needs a name');
            }
            if (!in_array($c['action'] ?? null, ['crash', 'sleep', 'stop', 'off'], true)) {
                throw Refused::malformed('field action: ' . q($c['action'] ?? null) . ' is not allowed (allowed: crash, sleep, stop, off)');
            }
            self::num($c, 'count', 0, MAX_COUNT, 0);
            self::num($c, 'ms', 0, MAX_MS, 0);
        }
        if ($cmd === 'clock') {
            self::num($c, 'offset_ms', -MAX_OFFSET_MS, MAX_OFFSET_MS, 0);
        }
        return $c;
    }

    /** The op id of an operation line if it is in range (the order rules decide whether it is new). */
    public static function opIds(mixed $v): array
    {
        if (!$v instanceof JsonObject || !in_array($v->m['cmd'] ?? null, OPERATIONS, true)) {
            return [];
        }
        $ids = [];
        foreach ($v->m['cmd'] === 'round' ? ['op', 'op_cs', 'op_release'] : ['op'] as $k) {
            $id = $v->m[$k] ?? null;
            if (!is_int($id) || $id < 1 || $id > MAX_OP) {
                return [];
            }
            $ids[] = $id;
        }
        return $ids;
    }

    private static function strings(array $c, array $keys): void
    {
        foreach ($keys as $k) {
            if (!array_key_exists($k, $c)) {
                continue;
            }
            if (!is_string($c[$k])) {
                throw Refused::malformed("field $k: not a string");
            }
            if ($c[$k] === '') {
                throw Refused::malformed("field $k: empty (leave the key out)");
            }
            if (strlen($c[$k]) > MAX_STRING) {
                throw Refused::malformed("field $k: longer than " . MAX_STRING . ' bytes');
            }
        }
    }

    private static function num(array $c, string $k, int $lo, int $hi, ?int $default = null): int
    {
        if (!array_key_exists($k, $c)) {
            if ($default === null) {
                throw Refused::malformed("field $k: missing");
            }
            return $default;
        }
        $v = $c[$k];
        if (!is_int($v)) {
            throw Refused::malformed("field $k: not an integer");
        }
        if ($v < $lo || $v > $hi) {
            throw Refused::malformed("field $k: $v is out of range (allowed: $lo to $hi)");
        }
        return $v;
    }

    private static function endpoints(mixed $ep): array
    {
        if (!$ep instanceof JsonObject) {
            throw Refused::malformed('field endpoints: not an object');
        }
        foreach ($ep->m as $k => $v) {
            $k = (string) $k;
            if (!in_array($k, ENDPOINT_KEYS, true)) {
                throw Refused::malformed('field endpoints.' . substr($k, 0, 100) . ': unknown key (allowed: ' . implode(', ', ENDPOINT_KEYS) . ')');
            }
            if ($v === null) {
                throw Refused::malformed("field endpoints.$k: null is not allowed (leave the key out)");
            }
            if ($k === 'cluster_remap') {
                if (!$v instanceof JsonObject || count($v->m) > 1000) {
                    throw Refused::malformed("field endpoints.cluster_remap: want an object of addresses (announced -> this client's)");
                }
                foreach ($v->m as $from => $to) {
                    $from = (string) $from;
                    if ($to === null) {
                        throw Refused::malformed('field endpoints.cluster_remap.' . substr($from, 0, 100) . ': null is not allowed');
                    }
                    if (!is_string($to) || strlen($from) > MAX_STRING || strlen($to) > MAX_STRING) {
                        throw Refused::malformed('field endpoints.cluster_remap.' . substr($from, 0, 100) . ': not a string');
                    }
                    Worker::hostPort($from, 'endpoints.cluster_remap');
                    Worker::hostPort($to, 'endpoints.cluster_remap.' . substr($from, 0, 100));
                }
                $ep->m[$k] = $v->m;
            } elseif (in_array($k, ['sentinels', 'masters', 'etcd', 'cluster'], true)) {
                if (!is_array($v) || count($v) > 1000) {
                    throw Refused::malformed("field endpoints.$k: want a list of addresses");
                }
                foreach ($v as $i => $x) {
                    if ($x === null) {
                        throw Refused::malformed("field endpoints.{$k}[$i]: null is not allowed");
                    }
                    if (!is_string($x) || $x === '' || strlen($x) > MAX_STRING) {
                        throw Refused::malformed("field endpoints.$k: want a list of addresses");
                    }
                }
            } elseif (!is_string($v) || strlen($v) > MAX_STRING) {
                throw Refused::malformed("field endpoints.$k: not a string");
            }
        }
        return $ep->m;
    }
}

final class Worker
{
    private Adapter $adapter;
    /** @var resource|null the socket pair end the reader process writes lines to */
    private $in = null;
    private string $inBuf = '';
    private bool $inEOF = false;
    private int $reader = 0;
    private int $lineNo = 0;
    /** whether this process runs under the clock shim (the reader process steps the clock) */
    private bool $shim;
    /** @var resource|null the reader's handle on the clock file */
    private $clockFile = null;
    /** the reader's copy of "init succeeded" (the worker says so over the socket pair) */
    private bool $readerInited = false;
    /** The wall time (Unix ms) the reader read right after applying the clock line being handled; null for none. */
    private ?int $clockWall = null;
    private bool $inited = false;
    private ?string $initError = null;
    private bool $connected = false;
    /** @var array<int, true> */
    private array $seenOps = [];
    public string $clientName = '';
    private ?array $resource = null;
    /** @var resource|null */
    private $res = null;
    private bool $resKeyed = true;
    /** @var array<string, array{0: mixed, 1: string, 2: int}> lease => [handle, key, fence]; kept after release */
    private array $leases = [];
    /** @var array<string, int> lease => end of its validity as last reported */
    private array $valid = [];
    /** @var array<string, array{0: string, 1: int, 2: int, 3: int}> name => [action, count, ms, hits] */
    private array $fps = [];
    private array $ops = [];
    private bool $cut = false;

    /** @param class-string<Adapter> $adapterClass */
    public static function main(string $adapterClass): never
    {
        self::underClockShim();
        $w = new self($adapterClass);
        $w->serve();
        $w->finish();
    }

    private function __construct(string $adapterClass)
    {
        $this->adapter = new $adapterClass($this);
        $this->shim = getenv(ENV_CLOCK_FD) !== false;
    }

    // -- the clock shim and the reader process --

    private static function shimPath(): string
    {
        $p = getenv('LOCKFAULT_CLOCK_SHIM');
        if ($p !== false && $p !== '') {
            return $p;
        }
        $p = dirname(__DIR__, 2) . '/faults/clockshim/libclockshim.so';
        return is_file($p) ? $p : '';
    }

    /**
     * The connect remap (faults/clockshim/connectremap.c, built by `make
     * shim` beside the clock shim): preloaded with it, so a cluster client
     * reaches every node it is told of at this client's own address for it.
     */
    private static function remapShimPath(string $clockShim): string
    {
        return dirname($clockShim) . '/' . REMAP_SHIM;
    }

    /**
     * Re-executes this process under the clock shim, once, before it reads
     * anything. The connect remap (REMAP_SHIM) is preloaded with it when
     * it was built beside it. The offset lives in a file unlinked at once
     * (nothing is left behind); its descriptor survives the exec and the
     * shim opens it by its /proc/self/fd name.
     */
    private static function underClockShim(): void
    {
        if (getenv(ENV_CLOCK_FD) !== false || ($shim = self::shimPath()) === '') {
            return;
        }
        $path = tempnam(sys_get_temp_dir(), 'lockfault-clock-');
        $f = fopen($path, 'r+');
        $fd = null;
        foreach (scandir('/proc/self/fd') as $e) {
            if (@readlink("/proc/self/fd/$e") === $path) {
                $fd = (int) $e;
            }
        }
        unlink($path);
        if ($fd === null || !ftruncate($f, 4096)) {
            return;
        }
        $env = getenv();
        $remap = self::remapShimPath($shim);
        $env['LD_PRELOAD'] = $shim . (is_file($remap) ? " $remap" : '') . (($env['LD_PRELOAD'] ?? '') !== '' ? ' ' . $env['LD_PRELOAD'] : '');
        $env['LOCKFAULT_CLOCK_FILE'] = "/proc/self/fd/$fd";
        $env['LOCKFAULT_FSYNC_LOG'] = ''; // the durability log is for servers
        $env[ENV_CLOCK_FD] = (string) $fd;
        pcntl_exec(PHP_BINARY, $_SERVER['argv'], $env);
        // exec failed: run without the shim
    }

    /**
     * Forks the reader: it reads stdin, passes each line on ("L" + line, or
     * "X" for a line over MAX_LINE bytes) and applies a valid `clock` at once.
     */
    private function startReader(): void
    {
        $pair = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
        $parent = getmypid();
        $pid = pcntl_fork();
        if ($pid < 0) {
            throw new \RuntimeException('cannot fork the stdin reader');
        }
        if ($pid === 0) {
            fclose($pair[0]);
            // Only the reader touches the clock file (php://fd duplicates the descriptor).
            $this->clockFile = $this->shim ? (fopen('php://fd/' . getenv(ENV_CLOCK_FD), 'r+') ?: null) : null;
            fclose(STDOUT); // the harness sees the worker's stdout close when the worker dies
            $this->readerLoop($pair[1], $parent);
            exit(0);
        }
        fclose($pair[1]);
        fclose(STDIN);
        $this->reader = $pid;
        $this->in = $pair[0];
        stream_set_blocking($this->in, false);
        stream_set_read_buffer($this->in, 0);
    }

    private function readerLoop($out, int $parent): never
    {
        $buf = '';
        $skipping = false;
        stream_set_blocking(STDIN, false);
        stream_set_read_buffer(STDIN, 0);
        stream_set_blocking($out, false);
        while (true) {
            $r = [STDIN, $out];
            $w = $e = null;
            if (@stream_select($r, $w, $e, 1) === 0) {
                if (posix_getppid() !== $parent) {
                    exit(0); // the worker died (crash): so does its reader
                }
                continue;
            }
            if (in_array($out, $r, true)) {
                $d = fread($out, 64);
                if (($d === '' || $d === false) && feof($out)) {
                    exit(0); // the worker is gone
                }
                $this->readerInited = $this->readerInited || str_contains((string) $d, '1');
                if (!in_array(STDIN, $r, true)) {
                    continue;
                }
            }
            while (($chunk = fread(STDIN, 1 << 16)) !== false && $chunk !== '') {
                $buf .= $chunk;
                if (strlen($buf) > 2 * MAX_LINE) {
                    break; // bounded: split what we have first
                }
            }
            $eof = feof(STDIN);
            while (($nl = strpos($buf, "\n")) !== false) {
                $line = substr($buf, 0, $nl);
                $buf = substr($buf, $nl + 1);
                if ($skipping) {
                    $skipping = false;
                    continue;
                }
                $this->pass($out, $line);
            }
            if (!$skipping && strlen($buf) > MAX_LINE) {
                $skipping = true;
                $buf = '';
                fwrite($out, "X\n");
            } elseif ($skipping) {
                $buf = '';
            }
            if ($eof) {
                if ($buf !== '' && !$skipping) {
                    $this->pass($out, $buf);
                }
                exit(0);
            }
        }
    }

    private function pass($out, string $line): void
    {
        if (str_ends_with($line, "\r")) {
            $line = substr($line, 0, -1);
        }
        if (strlen($line) > MAX_LINE) {
            $line = null;
        }
        $wall = null;
        if ($line !== null && $this->clockFile !== null && str_contains($line, '"clock"')) {
            try {
                $c = Command::validate(Json::decode($line));
                if ($c['cmd'] === 'clock' && $this->readerInited) {
                    fseek($this->clockFile, 0);
                    fwrite($this->clockFile, pack('q', ($c['offset_ms'] ?? 0) * 1000000));
                    fflush($this->clockFile);
                    // The step's evidence: the wall time this process (under
                    // the same shim) reads right after it, passed on with the
                    // line; the worker answers with it.
                    $wall = (int) floor(microtime(true) * 1000);
                }
            } catch (Refused) {
                // the worker refuses it and says why
            }
        }
        $framed = $line === null ? "X\n" : ($wall !== null ? "C$wall $line\n" : "L$line\n");
        if (!self::writeAll($out, $framed)) {
            exit(0);
        }
    }

    /**
     * Writes all of $data to a non-blocking stream: a long line (up to
     * MAX_LINE) does not fit the socket's buffer at once, and a partial
     * fwrite would cut it.
     */
    private static function writeAll($out, string $data): bool
    {
        while ($data !== '') {
            $n = @fwrite($out, $data);
            if ($n === false) {
                return false;
            }
            if ($n === 0) {
                $r = $e = null;
                $w = [$out];
                if (@stream_select($r, $w, $e, 1) === false) {
                    return false;
                }
                continue;
            }
            $data = substr($data, $n);
        }
        return true;
    }

    // -- commands --

    /** Reads and applies the commands that arrived, waiting up to $timeout seconds (null: until one does). */
    public function pump(?float $timeout = 0.0): void
    {
        if ($this->inEOF) {
            if ($timeout === null) {
                return;
            }
            usleep((int) ($timeout * 1e6));
            return;
        }
        $r = [$this->in];
        $w = $e = null;
        $sec = $timeout === null ? null : (int) $timeout;
        $usec = $timeout === null ? 0 : (int) (($timeout - (int) $timeout) * 1e6);
        if (@stream_select($r, $w, $e, $sec, $usec) > 0) {
            while (($chunk = fread($this->in, 1 << 20)) !== false && $chunk !== '') {
                $this->inBuf .= $chunk;
            }
            if (feof($this->in)) {
                $this->inEOF = true;
            }
        }
        while (($nl = strpos($this->inBuf, "\n")) !== false) {
            $line = substr($this->inBuf, 0, $nl);
            $this->inBuf = substr($this->inBuf, $nl + 1);
            $this->line($line);
        }
    }

    private function line(string $framed): void
    {
        $n = ++$this->lineNo;
        $v = null;
        $fresh = [];
        try {
            if ($framed === 'X') {
                throw Refused::malformed('line longer than ' . MAX_LINE . ' bytes');
            }
            $this->clockWall = null;
            if ($framed[0] === 'C') {
                // A clock the reader applied: "C<wall_ms> <line>".
                [$wall, $framed] = explode(' ', $framed, 2);
                $this->clockWall = (int) substr($wall, 1);
                $framed = 'L' . $framed;
            }
            $v = Json::decode(substr($framed, 1));
            // An operation with valid, new op ids owns them from here on: if
            // the line is refused, the error ends that op.
            $ids = Command::opIds($v);
            if ($ids !== [] && count(array_unique($ids)) === count($ids) && !array_filter($ids, fn ($id) => isset($this->seenOps[$id]))) {
                foreach ($ids as $id) {
                    $this->seenOps[$id] = true;
                }
                $fresh = $ids;
            }
            $c = Command::validate($v);
            if (in_array($c['cmd'], OPERATIONS, true) && $fresh === []) {
                throw Refused::malformed("field op: op id {$c['op']} was used before (op ids are unique)");
            }
            $this->handle($c);
        } catch (\Throwable $e) {
            $m = ['type' => 'error', 'line' => $n, 'error' => clip("stdin:$n: " . ($e instanceof Refused ? '' : get_class($e) . ': ') . $e->getMessage())];
            if ($e instanceof Refused) {
                $m['code'] = $e->protocolCode;
            }
            if ($fresh !== []) {
                $m['op'] = $fresh[0];
            }
            if ($e instanceof Refused && $e->protocolCode === 'not-supported' && $v instanceof JsonObject && ($v->m['cmd'] ?? null) === 'failpoint') {
                $m['name'] = $v->m['name'];
                $m['action'] = $v->m['action'];
            }
            $this->send($m);
        }
    }

    private function handle(array $c): void
    {
        $cmd = $c['cmd'];
        if ($cmd === 'shutdown') {
            $this->finish();
        }
        if ($cmd === 'init' && $this->inited) {
            throw Refused::malformed('init: the worker was already initialised (init comes exactly once)');
        }
        if ($cmd !== 'init' && !$this->inited) {
            throw Refused::malformed("$cmd before init (init comes exactly once and first)");
        }
        if ($cmd !== 'init' && $this->initError !== null) {
            throw Refused::malformed("$cmd after a failed init ({$this->initError}): restart the worker");
        }
        switch ($cmd) {
            case 'init':
                $this->inited = true;
                try {
                    $this->init($c);
                } catch (\Throwable $e) {
                    $this->initError = clip($e->getMessage());
                    throw $e;
                }
                if ($this->shim) {
                    @fwrite($this->in, '1'); // the reader may step the clock from now on
                }
                $a = $this->adapter;
                $opts = array_map('strval', array_keys($a->options));
                sort($opts);
                $this->send(['type' => 'ready', 'pid' => getmypid(), 'lock' => $a->lock, 'needs' => $a->needs, 'caps' => $a->caps,
                    'failpoints' => $this->failpointNames(), 'options' => $opts, 'version' => substr($a->version(), 0, 200)]);
                break;
            case 'failpoint':
                if (!in_array($c['name'], $this->failpointNames(), true)) {
                    throw Refused::notSupported('failpoint ' . q($c['name']) . ": lock {$this->adapter->lock} cannot hit it (allowed: " . implode(', ', $this->failpointNames()) . ')');
                }
                if ($c['action'] === 'off') {
                    unset($this->fps[$c['name']]);
                } else {
                    $this->fps[$c['name']] = [$c['action'], ($c['count'] ?? 0) ?: 1, $c['ms'] ?? 0, 0];
                }
                break;
            case 'cut':
                $this->cut = true;
                break;
            case 'clock':
                // With the shim, the reader process has already stepped the
                // clock, and read the wall time right after (clockWall).
                if (!$this->shim && $this->adapter->readsWallClock) {
                    throw Refused::notSupported("clock: lock {$this->adapter->lock} reads the wall clock and the clock shim is not built (make shim), so the step cannot reach it");
                }
                // Without the shim nothing this lock reads moves: the
                // unmoved reading says so.
                $this->send(clockMessage($c['offset_ms'] ?? 0, $this->clockWall));
                break;
            case 'endpoints':
                if ($this->resource === null) {
                    throw Refused::malformed('endpoints: init carried no resource address, so the lock cannot run critical sections');
                }
                $this->connect($c['endpoints']);
                break;
            default: // an operation
                if (!$this->connected) {
                    throw Refused::malformed("$cmd before the lock has endpoints (send endpoints first)");
                }
                $this->ops[] = $c;
        }
    }

    private function failpointNames(): array
    {
        $n = array_values(array_unique(array_merge(WORKER_FAILPOINTS, $this->adapter->failpoints)));
        sort($n);
        return $n;
    }

    private function init(array $c): void
    {
        $a = $this->adapter;
        if (isset($c['lock']) && $c['lock'] !== $a->lock) {
            throw Refused::notSupported("field lock: this worker runs {$a->lock}, not " . q($c['lock']));
        }
        $opts = $c['options'] ?? [];
        foreach ($opts as $k => $v) {
            $k = (string) $k;
            if (!array_key_exists($k, $a->options)) {
                $allowed = array_keys($a->options);
                sort($allowed);
                throw Refused::notSupported("field options: lock {$a->lock} has no option " . q($k) . ' (allowed: ' . ($allowed ? implode(', ', $allowed) : 'none') . ')');
            }
            $values = $a->options[$k][0];
            if ($values !== null && !in_array($v, $values, true)) {
                throw Refused::malformed("field options.$k: " . q($v) . ' is not allowed (allowed: ' . implode(', ', $values) . ')');
            }
        }
        $a->configure($opts);
        $this->clientName = $c['client'];
        if (isset($c['resource'])) {
            $this->resource = self::hostPort($c['resource'], 'resource');
        }
        $ep = $c['endpoints'] ?? [];
        if (!empty($ep['primary']) || !empty($ep['sentinels']) || !empty($ep['masters']) || !empty($ep['etcd']) || !empty($ep['cluster'])) {
            if ($this->resource === null) {
                throw Refused::malformed('field resource: init with endpoints needs the resource address');
            }
            $this->connect($ep);
        }
    }

    private function connect(array $ep): void
    {
        $a = $this->adapter;
        if ($a->needs === 'masters' && empty($ep['masters'])) {
            throw Refused::notSupported("field endpoints: lock {$a->lock} needs masters (independent masters)");
        }
        if ($a->needs === 'cluster' && empty($ep['cluster'])) {
            throw Refused::notSupported("field endpoints: lock {$a->lock} needs cluster (the seeds of a Redis Cluster)");
        }
        if ($a->needs === 'single' && empty($ep['primary']) && empty($ep['sentinels'])) {
            throw Refused::notSupported("field endpoints: lock {$a->lock} needs primary (or sentinels + master)");
        }
        if (!empty($ep['sentinels']) && empty($ep['master'])) {
            throw Refused::malformed('field endpoints.master: sentinels need the master name');
        }
        if ($a->needs === 'cluster') {
            self::remapConnects($ep);
        }
        $a->connect($ep);
        $this->connected = true;
    }

    /** @return array{0: string, 1: int} */
    public static function hostPort(string $s, string $field): array
    {
        $i = strrpos($s, ':');
        $host = $i === false ? '' : trim(substr($s, 0, $i), '[]');
        $port = $i === false ? '' : substr($s, $i + 1);
        if ($host === '' || !ctype_digit($port) || (int) $port < 1 || (int) $port > 65535) {
            throw Refused::malformed("field $field: want host:port, got " . q($s));
        }
        return [$host, (int) $port];
    }

    public function send(array $m): void
    {
        fwrite(STDOUT, json_encode($m, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_INVALID_UTF8_SUBSTITUTE) . "\n");
        fflush(STDOUT);
    }

    public static function log(string $msg): void
    {
        fwrite(STDERR, basename($_SERVER['argv'][0] ?? 'worker') . ": $msg\n");
    }

    private function serve(): void
    {
        $this->startReader();
        while (true) {
            if ($this->ops !== []) {
                $this->runOp(array_shift($this->ops));
                continue;
            }
            if ($this->inEOF && $this->inBuf === '') {
                return;
            }
            $this->pump(null);
        }
    }

    /** Ends the worker: closes the lock's connections (bounded by their timeouts) and exits 0. */
    private function finish(): never
    {
        try {
            $this->adapter->close();
        } catch (\Throwable) {
        }
        if ($this->reader > 0) {
            posix_kill($this->reader, SIGKILL);
            pcntl_waitpid($this->reader, $status);
        }
        exit(0);
    }

    // -- failpoints --

    public function hit(string $name): void
    {
        $this->pump(0.0); // a failpoint armed while the operation ran
        if (!isset($this->fps[$name])) {
            return;
        }
        $fp = &$this->fps[$name];
        $fp[3]++;
        if ($fp[3] !== $fp[1]) {
            return;
        }
        [$action, , $ms] = $fp;
        unset($fp, $this->fps[$name]);
        $this->send(['type' => 'fired', 'name' => $name, 'action' => $action]);
        if ($action === 'crash') {
            posix_kill($this->reader, SIGKILL);
            posix_kill(getmypid(), SIGKILL);
        } elseif ($action === 'sleep') {
            $this->wait($ms, false);
        } elseif ($action === 'stop') {
            $this->send(['type' => 'stopping', 'name' => $name, 'ms' => $ms]);
            posix_kill(getmypid(), SIGSTOP);
        }
    }

    /** Waits $ms milliseconds, applying the commands that arrive meanwhile (an adapter's retry loop). */
    public function idle(int $ms): void
    {
        $this->wait($ms, false);
    }

    /** Waits $ms milliseconds, applying commands meanwhile; a `cut` ends it early when $cuttable. */
    private function wait(int $ms, bool $cuttable): void
    {
        $end = now() + $ms * 1000000;
        while (($left = $end - now()) > 0 && !($cuttable && $this->cut)) {
            $this->pump($left / 1e9);
        }
    }

    // -- operations, one at a time, in order --

    private function runOp(array $c): void
    {
        if ($c['cmd'] === 'round') {
            $this->round($c);
            return;
        }
        $this->send(['type' => 'reply', 'op' => $c['op']] + $this->run($c));
    }

    /** acquire, then cs and release with no harness round trip: each later step announced by `invoke`, each reply stamped. */
    private function round(array $c): void
    {
        $m = $this->run(['cmd' => 'acquire', 'op' => $c['op'], 'key' => $c['key'], 'lease' => $c['lease'], 'ttl_ms' => $c['ttl_ms'], 'wait_ms' => $c['wait_ms'] ?? 0]);
        $this->send(['type' => 'reply', 'op' => $c['op']] + $m + ['t' => now()]);
        if ($m['status'] !== 'ok') {
            return;
        }
        foreach ([[$c['op_cs'], ['cmd' => 'cs', 'hold_ms' => $c['hold_ms'] ?? 0]], [$c['op_release'], ['cmd' => 'release']]] as [$op, $step]) {
            $this->send(['type' => 'invoke', 'op' => $op, 't' => now()]);
            $m = $this->run($step + ['op' => $op, 'lease' => $c['lease']]);
            $this->send(['type' => 'reply', 'op' => $op] + $m + ['t' => now()]);
        }
    }

    private function run(array $c): array
    {
        try {
            return $this->operation($c);
        } catch (Fail $e) {
            return ['status' => 'fail', 'error' => clip($e->getMessage())];
        } catch (NotSupported $e) {
            return ['status' => 'fail', 'code' => 'not-supported', 'error' => clip($e->getMessage())];
        } catch (Unknown $e) {
            return ['status' => 'info', 'error' => clip($e->getMessage())];
        } catch (\Throwable $e) { // anything else: the outcome is unknown
            self::log("op {$c['op']}: " . get_class($e) . ': ' . $e->getMessage());
            return ['status' => 'info', 'error' => clip(get_class($e) . ': ' . $e->getMessage())];
        }
    }

    private function operation(array $c): array
    {
        $cmd = $c['cmd'];
        if ($cmd === 'acquire') {
            $this->hit('before-acquire');
            $g = $this->adapter->acquire($c['key'], $c['ttl_ms'], $c['wait_ms'] ?? 0);
            $lease = $c['lease'] ?? "{$this->clientName}-{$c['op']}";
            $this->leases[$lease] = [$g->handle, $c['key'], $g->fence];
            $m = ['status' => 'ok', 'lease' => $lease];
            if ($g->token !== '') {
                $m['token'] = $g->token;
            }
            if ($g->fence !== 0) {
                $m['fence'] = $g->fence;
            }
            return $this->validity($m, $lease, $g->validUntil);
        }
        if (!isset($this->leases[$c['lease']])) {
            throw new Fail('unknown lease ' . $c['lease']);
        }
        [$handle, $key, $fence] = $this->leases[$c['lease']];
        switch ($cmd) {
            case 'cs':
                return $this->criticalSection($c, $key, $fence);
            case 'release':
                // The lease stays known: releasing it again is for the lock to refuse.
                $this->hit('before-release');
                $this->adapter->release($handle);
                return ['status' => 'ok'];
            case 'extend':
                $g = $this->adapter->extend($handle, $c['ttl_ms']);
                return $this->validity(['status' => 'ok'], $c['lease'], $g->validUntil);
        }
        throw new Fail("not an operation: $cmd");
    }

    private function validity(array $m, string $lease, int $validUntil): array
    {
        $this->valid[$lease] = $validUntil; // what write_if_valid_ms checks
        if ($validUntil !== 0) {
            $m['valid_until'] = $validUntil;
            $m['validity_ms'] = max(0, intdiv($validUntil - now(), 1000000));
        }
        return $m;
    }

    // -- the critical section and the resource --

    /**
     * One request line to the resource, one answer line back. The key goes
     * last; a resource server older than per-key registers answers ERR to the
     * extra word, and the worker then drops the key for good.
     */
    private function resourceCall(string $req, string $key): string
    {
        if ($this->resKeyed) {
            $resp = $this->resourceLine("$req $key");
            if (!(str_starts_with($resp, 'ERR') && str_contains($resp, 'argument'))) {
                return $resp;
            }
            $this->resKeyed = false;
        }
        return $this->resourceLine($req);
    }

    private function resourceLine(string $req): string
    {
        if ($this->res === null) {
            [$host, $port] = $this->resource;
            $s = @stream_socket_client("tcp://$host:$port", $errno, $errstr, RESOURCE_TIMEOUT);
            if ($s === false) {
                throw new \RuntimeException("resource: $errstr");
            }
            stream_set_timeout($s, 86400); // a paused peer is not an error; the harness bounds the op
            $this->res = $s;
        }
        $ok = fwrite($this->res, "$req\n") !== false;
        $line = $ok ? fgets($this->res, 1 << 16) : false;
        if ($line === false) {
            fclose($this->res);
            $this->res = null;
            throw new \RuntimeException('resource closed the connection');
        }
        return trim($line);
    }

    private function criticalSection(array $c, string $key, int $fence): array
    {
        $lease = $c['lease'];
        $this->cut = false; // a cut from now on ends this section's hold
        try {
            $resp = $this->resourceCall("READ {$this->clientName} $lease $fence", $key);
        } catch (\RuntimeException $e) {
            return ['status' => 'info', 'error' => $e->getMessage()];
        }
        if (str_starts_with($resp, 'REJECTED')) {
            return ['status' => 'fail', 'rejected' => true, 'error' => "rejected by the resource: $resp"];
        }
        if (!str_starts_with($resp, 'OK ')) {
            return ['status' => 'info', 'error' => "resource: $resp"];
        }
        $v = (int) substr($resp, 3);
        $this->hit('cs-after-read');
        $this->wait($c['hold_ms'] ?? 0, true);
        $this->hit('cs-before-write');
        $margin = $c['write_if_valid_ms'] ?? 0;
        if ($margin > 0) {
            $end = $this->valid[$lease] ?? 0;
            $left = intdiv($end - now(), 1000000);
            if ($end !== 0 && $left < $margin) {
                return ['status' => 'fail', 'read' => $v, 'error' => "lease validity has $left ms left, less than write_if_valid_ms $margin: the write was given up"];
            }
        }
        try {
            $resp = $this->resourceCall("WRITE {$this->clientName} $lease $fence " . ($v + 1), $key);
        } catch (\RuntimeException $e) {
            return ['status' => 'info', 'read' => $v, 'error' => $e->getMessage()];
        }
        if (str_starts_with($resp, 'REJECTED')) {
            return ['status' => 'fail', 'rejected' => true, 'read' => $v, 'error' => "rejected by the resource: $resp"];
        }
        if ($resp !== 'OK') {
            return ['status' => 'info', 'read' => $v, 'error' => "resource: $resp"];
        }
        return ['status' => 'ok', 'read' => $v, 'wrote' => $v + 1];
    }

    // -- helpers for adapters --

    /** The Debian package's version ("" if dpkg-query cannot tell), read without the clock shim. */
    public static function debianVersion(string $pkg): string
    {
        $env = getenv();
        unset($env['LD_PRELOAD'], $env['LOCKFAULT_CLOCK_FILE']);
        $p = proc_open(['dpkg-query', '-W', '-f=${Version}', $pkg], [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, $env);
        if (!is_resource($p)) {
            return '';
        }
        $out = stream_get_contents($pipes[1], 200);
        fclose($pipes[1]);
        fclose($pipes[2]);
        return proc_close($p) === 0 ? trim((string) $out) : '';
    }

    /** The upstream part of a Debian version: "2.2.1+ds-1" -> "2.2.1". */
    public static function upstream(string $debian): string
    {
        return preg_replace('/^\d+:|[+~][^-]*(?=-)|-[^-]*$/', '', $debian) ?? $debian;
    }

    /** A connected phpredis client: 5 s connect and read timeouts, AUTH when the scenario has a password. */
    public static function phpredis(string $hostPort, string $password): \Redis
    {
        [$host, $port] = self::hostPort($hostPort, 'endpoints');
        $r = new \Redis();
        try {
            $r->connect($host, $port, 5.0, null, 0, 5.0);
            if ($password !== '') {
                $r->auth($password);
            }
        } catch (\RedisException $e) {
            // The server may be down right now (a node restart): the lock
            // meets the error at its first command, as an application would.
            Worker::log("connect $hostPort: " . $e->getMessage());
        }
        return $r;
    }

    /**
     * Makes every connect() of this process to an address of
     * endpoints.cluster_remap (what the cluster announces) go to its
     * mapped address (this client's own path to that node): the map goes
     * into LOCKFAULT_CONNECT_REMAP (PHP's putenv sets libc's environment),
     * which the preloaded connect remap (REMAP_SHIM, faults/clockshim/
     * connectremap.c) reads at each connect. phpredis (5.3.7) has no remap
     * of its own: its RedisCluster dials the addresses the slot map, MOVED
     * and ASK name, and reaches them through PHP's streams, which call
     * libc's connect() (nonblocking, then poll: the remap changes only the
     * address). Refused (not-supported) when the library is not loaded
     * (`make shim` not run): the client would dial the nodes' shared peer
     * proxies, and a fault cut on this client's own links would not reach
     * it. An address that is not IPv4 host:port is refused too: the library
     * remaps IPv4 only.
     */
    public static function remapConnects(array $ep): void
    {
        $remap = $ep['cluster_remap'] ?? [];
        if ($remap === []) {
            throw Refused::malformed("field endpoints.cluster_remap: missing: a cluster client must map every address the cluster announces to this client's own");
        }
        if (count($remap) > MAX_REMAP) {
            throw Refused::malformed('field endpoints.cluster_remap: more than ' . MAX_REMAP . ' addresses');
        }
        $entries = [];
        foreach ($remap as $from => $to) {
            $from = (string) $from;
            $field = 'endpoints.cluster_remap.' . substr($from, 0, 100);
            $key = self::ipv4Port($from, 'endpoints.cluster_remap');
            if (isset($entries[$key])) {
                throw Refused::malformed("field $field: the address " . q($key) . ' is mapped twice');
            }
            $entries[$key] = "$key=" . self::ipv4Port($to, $field);
        }
        $maps = @file_get_contents('/proc/self/maps');
        if ($maps === false || !preg_match('~/' . preg_quote(REMAP_SHIM, '~') . '$~m', $maps)) {
            throw Refused::notSupported('the connect remap (' . REMAP_SHIM . ', built by `make shim` beside the clock shim) is not loaded: phpredis would dial the addresses the cluster announces, not this client\'s own, so a cluster lock cannot run here');
        }
        $v = implode(',', $entries);
        if (!putenv(ENV_REMAP . "=$v") || getenv(ENV_REMAP) !== $v) {
            throw Refused::notSupported('cannot set ' . ENV_REMAP . ' in the environment');
        }
    }

    /** "a.b.c.d:port" as the connect remap reads it (no leading zeros), or refused. */
    private static function ipv4Port(string $s, string $field): string
    {
        [$host, $port] = self::hostPort($s, $field);
        if (!preg_match('/^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$/', $host)) {
            throw Refused::notSupported("field $field: " . q($s) . ' is not an IPv4 address (the connect remap maps IPv4 host:port only)');
        }
        return "$host:$port";
    }

    /**
     * A phpredis cluster client seeded with endpoints.cluster: 5 s connect
     * and read timeouts, AUTH when the scenario has a password. phpredis
     * (5.3.7) has no address remap: after it reads the slot map from a seed
     * it dials the addresses the cluster announces (every one a proxy's,
     * the node's peer proxy); remapConnects makes those connects go to
     * endpoints.cluster_remap's addresses, this client's own proxies, and
     * the client is refused (not-supported) without it. A seed it cannot
     * map the keyspace from is a Fail: no command was sent.
     */
    public static function phpredisCluster(array $ep): \RedisCluster
    {
        foreach ($ep['cluster'] as $s) {
            self::hostPort($s, 'endpoints.cluster');
        }
        try {
            self::remapConnects($ep);
        } catch (Refused $e) {
            throw new NotSupported($e->getMessage());
        }
        $password = $ep['password'] ?? '';
        try {
            return new \RedisCluster(null, $ep['cluster'], 5.0, 5.0, false, $password === '' ? null : $password);
        } catch (\RedisClusterException $e) {
            throw new Fail('RedisClusterException: ' . $e->getMessage());
        }
    }

    /**
     * The current master's address: endpoints.primary, or the answer of the
     * first Sentinel that knows the master (phpredis's RedisSentinel). A
     * PHP lock library takes a connection, not a Sentinel: the worker asks
     * again before each acquire, as an application must.
     */
    public static function masterAddress(array $ep): string
    {
        if (!empty($ep['primary'])) {
            return $ep['primary'];
        }
        foreach ($ep['sentinels'] as $s) {
            [$host, $port] = self::hostPort($s, 'endpoints.sentinels');
            try {
                $a = (new \RedisSentinel($host, $port, 2.0, null, 0, 2.0))->getMasterAddrByName($ep['master']);
                if (is_array($a) && count($a) === 2) {
                    return "{$a[0]}:{$a[1]}";
                }
            } catch (\RedisException) {
            }
        }
        throw new Unknown("no Sentinel knows master {$ep['master']}");
    }
}
