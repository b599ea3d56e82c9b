"""The lockfault worker protocol (docs/PROTOCOL.md) for a lock library in Python.

One module holds everything a Python worker needs besides its lock: strict
line parsing (exact keys, bounds, op ids, the 1 MiB line limit, error codes),
operations run one at a time and in order on their own thread while control
commands (failpoint, clock, cut, endpoints) take effect at once, the
critical section against the harness's resource server, the failpoints every
worker hits (before-acquire, before-release, cs-after-read, cs-before-write),
`round`, `renew` messages sent safely from any thread, and `shutdown`.

A worker is then a small adapter (a subclass of Adapter) around its library,
run with main(MyAdapter). Only the standard library is used here.

The clock: the harness's `clock` command steps the client's wall clock. A
library that reads the wall clock can only see that step if its process
does, so under_clock_shim() re-executes the worker under lockfault's clock
shim (faults/clockshim, built by `make shim`): the shim moves only
CLOCK_REALTIME, by an offset the worker writes into an anonymous memory file
at once when `clock` arrives; CLOCK_MONOTONIC, on which every validity here
is measured, is untouched.
"""

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time

MAX_LINE = 1 << 20
MAX_OP = (1 << 53) - 1
MAX_MS = 3_600_000
MAX_COUNT = 1_000_000
MAX_OFFSET_MS = 366 * 86_400_000
MAX_STRING = 4096
MAX_ERROR = 2000  # bytes of an error message we send (messages stay well under a pipe's atomic write)
RESOURCE_TIMEOUT = 5.0  # seconds to connect to the resource

WORKER_FAILPOINTS = ["before-acquire", "before-release", "cs-after-read", "cs-before-write"]

COMMANDS = {
    "init": {"client", "lock", "options", "endpoints", "resource"},
    "acquire": {"op", "key", "lease", "ttl_ms", "wait_ms"},
    "cs": {"op", "lease", "hold_ms", "write_if_valid_ms"},
    "release": {"op", "lease"},
    "extend": {"op", "lease", "ttl_ms"},
    "round": {"op", "op_cs", "op_release", "key", "lease", "ttl_ms", "wait_ms", "hold_ms"},
    "failpoint": {"name", "action", "count", "ms"},
    "clock": {"offset_ms"},
    "cut": set(),
    "endpoints": {"endpoints"},
    "shutdown": set(),
}
OPERATIONS = {"acquire", "cs", "release", "extend", "round"}
ENDPOINT_KEYS = {"primary", "sentinels", "master", "masters", "etcd", "cluster", "cluster_remap", "password"}
COMMAND_NAMES = "init, acquire, cs, release, extend, round, failpoint, clock, cut, endpoints, shutdown"

# The environment of a worker re-executed under the clock shim.
ENV_CLOCK_FD = "LOCKFAULT_WORKER_CLOCK_FD"

# When this process began running Python (after the re-exec): the harness
# allows 20 s from start to `ready`, and a slow adapter budgets from here.
STARTED = time.monotonic()
VERSION_WAIT_S = 5  # how long ready waits for the version (dpkg-query) before going without it


def now():
    """CLOCK_MONOTONIC in ns, the harness's clock (time.monotonic_ns reads it on Linux)."""
    return time.monotonic_ns()


def until(start_ns, ms):
    """The end of a validity of ms milliseconds that began at start_ns."""
    return start_ns + ms * 1_000_000


# --- outcomes an adapter raises ---------------------------------------------


class Refused(Exception):
    """A command the worker refuses; code is malformed or not-supported."""

    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


def malformed(msg):
    return Refused("malformed", msg)


def not_supported(msg):
    return Refused("not-supported", msg)


class Fail(Exception):
    """The operation certainly did not happen (the lock is taken, the grant is gone)."""


class Unknown(Exception):
    """The outcome is unknown (timeout, lost connection): replied as info."""


class NotSupported(Exception):
    """The lock cannot do this operation (an extend of a lock without one)."""


class Grant:
    """What an adapter's acquire or extend returns. handle is the adapter's
    own object for the grant; valid_until is the end of the validity the
    library claims on CLOCK_MONOTONIC (0: it claims no end)."""

    def __init__(self, handle=None, token="", fence=0, valid_until=0):
        self.handle, self.token, self.fence, self.valid_until = handle, token, fence, valid_until


class Adapter:
    """One lock library. Subclasses set the class attributes and implement
    connect, acquire and release (extend if the library has one)."""

    lock = ""  # the name ready declares
    needs = "single"  # single, masters or cluster
    caps = []  # only what the library itself promises
    failpoints = []  # failpoints the library's code hits, beyond WORKER_FAILPOINTS
    options = {}  # option name -> (allowed values or None for any, help text)
    reads_wall_clock = True  # False: `clock` moves nothing this lock reads, even without the shim

    def __init__(self, worker):
        self.worker = worker

    def version(self):
        return ""

    def configure(self, options):
        """Check option values (names were checked against self.options)."""

    def connect(self, endpoints):
        raise NotImplementedError

    def acquire(self, key, ttl_ms, wait_ms):
        raise NotImplementedError

    def release(self, handle):
        raise NotImplementedError

    def extend(self, handle, ttl_ms):
        raise NotSupported("lock %s cannot extend" % self.lock)

    def close(self):
        pass


def debian_version(pkg):
    """The Debian package's version ("" if dpkg-query cannot tell), read
    without the clock shim."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "LOCKFAULT_CLOCK_FILE")}
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, timeout=10, env=env)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.decode(errors="replace").strip() if out.returncode == 0 else ""


def host_port(s, field):
    host, _, port = s.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise malformed("field %s: want host:port, got %s" % (field, json.dumps(s[:100])))
    return host.strip("[]"), int(port)


# --- the clock shim ------------------------------------------------------------


def shim_path():
    p = os.environ.get("LOCKFAULT_CLOCK_SHIM")
    if p:
        return p
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = os.path.join(root, "faults", "clockshim", "libclockshim.so")
    return p if os.path.exists(p) else ""


def under_clock_shim():
    """Re-executes this process under the clock shim, once, before it reads
    anything: the clock offset lives in an anonymous memory file (no file
    to leave behind) whose descriptor survives the exec. Without the shim
    (not built) the worker runs as it is and `clock` is handled by
    Worker.clock."""
    if ENV_CLOCK_FD in os.environ:
        return
    shim = shim_path()
    if not shim:
        return
    fd = os.memfd_create("lockfault-clock", 0)
    os.ftruncate(fd, 32)
    os.set_inheritable(fd, True)
    env = dict(os.environ)
    env["LD_PRELOAD"] = shim + (" " + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env["LOCKFAULT_CLOCK_FILE"] = "/proc/self/fd/%d" % fd
    env["LOCKFAULT_FSYNC_LOG"] = ""  # the durability log is for servers
    env[ENV_CLOCK_FD] = str(fd)
    sys.stdout.flush()
    os.execve(sys.executable, sys.orig_argv, env)


# --- output ------------------------------------------------------------------

_out_lock = threading.Lock()


_announced = set()  # leases whose grant has been written
_pending_renew = {}  # lease -> a renew that came before its grant's reply


def _write(msg):
    sys.stdout.write(json.dumps(msg, separators=(",", ":")) + "\n")


def send(msg):
    """One message line; safe from any thread. A renew of a lease whose
    grant has not been written yet (a renewing thread can run between the
    library's acquire and the reply) is held back and written right after
    the grant: the harness refuses a renew of a lease it was not granted."""
    with _out_lock:
        lease = msg.get("lease")
        if msg.get("type") == "renew" and lease not in _announced:
            _pending_renew[lease] = msg
            return
        _write(msg)
        if msg.get("type") == "reply" and msg.get("status") == "ok" and lease and lease not in _announced:
            _announced.add(lease)
            if lease in _pending_renew:
                _write(_pending_renew.pop(lease))
        sys.stdout.flush()


def log(*a):
    print("%s:" % os.path.basename(sys.argv[0]), *a, file=sys.stderr, flush=True)


def clip(s):
    """s as a string of at most MAX_ERROR bytes."""
    s = str(s)
    b = s.encode("utf-8", "replace")
    return s if len(b) <= MAX_ERROR else b[:MAX_ERROR].decode("utf-8", "ignore") + "..."


# --- strict decoding ---------------------------------------------------------


def _pairs(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError("field %s: given twice" % k[:100])
        d[k] = v
    return d


def _no_constant(name):
    raise ValueError("%s is not JSON" % name)


def parse(line):
    """One JSON object, no duplicate keys, nothing after it."""
    try:
        c = json.loads(line, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except RecursionError:
        raise malformed("not JSON: nested too deep")
    except ValueError as e:
        msg = str(e)
        if msg.startswith("Extra data"):
            msg = "data after the JSON object (one object per line)"
        raise malformed(msg)
    if not isinstance(c, dict):
        raise malformed("not a JSON object")
    return c


def _strings(c, keys):
    for k in keys:
        if k in c:
            if not isinstance(c[k], str):
                raise malformed("field %s: not a string" % k)
            if c[k] == "":
                raise malformed("field %s: empty (leave the key out)" % k)
            if len(c[k].encode("utf-8", "surrogatepass")) > MAX_STRING:
                raise malformed("field %s: longer than %d bytes" % (k, MAX_STRING))


def _num(c, k, lo, hi, default=None):
    if k not in c:
        if default is None:
            raise malformed("field %s: missing" % k)
        return default
    v = c[k]
    if type(v) is not int:  # bool is an int in Python: refuse it too
        raise malformed("field %s: not an integer" % k)
    if v < lo or v > hi:
        raise malformed("field %s: %d is out of range (allowed: %d to %d)" % (k, v, lo, hi))
    return v


def _endpoints(ep):
    if not isinstance(ep, dict):
        raise malformed("field endpoints: not an object")
    for k, v in ep.items():
        if k not in ENDPOINT_KEYS:
            raise malformed("field endpoints.%s: unknown key (allowed: %s)" % (k[:100], ", ".join(sorted(ENDPOINT_KEYS))))
        if v is None:
            raise malformed("field endpoints.%s: null is not allowed (leave the key out)" % k)
        if k == "cluster_remap":
            if not isinstance(v, dict) or len(v) > 1000:
                raise malformed("field endpoints.cluster_remap: want an object of addresses (announced -> this client's)")
            for a, b in v.items():
                if b is None:
                    raise malformed("field endpoints.cluster_remap.%s: null is not allowed" % a[:100])
                if not isinstance(b, str) or len(a) > MAX_STRING or len(b) > MAX_STRING:
                    raise malformed("field endpoints.cluster_remap.%s: not a string" % a[:100])
                host_port(a, "endpoints.cluster_remap")
                host_port(b, "endpoints.cluster_remap.%s" % a[:100])
        elif k in ("sentinels", "masters", "etcd", "cluster"):
            if isinstance(v, list) and None in v:
                raise malformed("field endpoints.%s[%d]: null is not allowed" % (k, v.index(None)))
            if not isinstance(v, list) or not all(isinstance(x, str) and 0 < len(x) <= MAX_STRING for x in v) or len(v) > 1000:
                raise malformed("field endpoints.%s: want a list of addresses" % k)
        elif not isinstance(v, str) or len(v) > MAX_STRING:
            raise malformed("field endpoints.%s: not a string" % k)


def validate(c):
    """Exact keys of its command, required fields, numbers in bounds."""
    if "cmd" not in c:
        raise malformed("field cmd: missing (allowed: %s)" % COMMAND_NAMES)
    cmd = c["cmd"]
    if not isinstance(cmd, str):
        raise malformed("field cmd: not a string")
    if cmd not in COMMANDS:
        raise not_supported("field cmd: unknown command %s (allowed: %s)" % (json.dumps(cmd[:100]), COMMAND_NAMES))
    allowed = COMMANDS[cmd] | {"cmd"}
    for k, v in c.items():
        if k not in allowed:
            raise malformed("%s: field %s: unknown key (allowed: %s)" % (cmd, k[:100], ", ".join(sorted(allowed))))
        if v is None:
            raise malformed("field %s: null is not allowed (leave the key out)" % k)
    _strings(c, ("client", "lock", "resource", "key", "lease", "name", "action"))
    if cmd in OPERATIONS:
        _num(c, "op", 1, MAX_OP)
    if cmd == "init":
        if "client" not in c:
            raise malformed("field client: init needs the client name")
        if "options" in c:
            o = c["options"]
            for k, v in (o.items() if isinstance(o, dict) else ()):
                if v is None:
                    raise malformed("field options.%s: null is not allowed (leave the key out)" % k[:100])
            if not isinstance(o, dict) or not all(isinstance(v, str) for v in o.values()):
                raise malformed("field options: want an object of strings")
            _strings(o, list(o))
    if "endpoints" in c:
        _endpoints(c["endpoints"])
    if cmd == "endpoints" and "endpoints" not in c:
        raise malformed("field endpoints: missing")
    if cmd in ("acquire", "round"):
        if "key" not in c:
            raise malformed("field key: %s needs the key the lock guards" % cmd)
        _num(c, "ttl_ms", 1, MAX_MS)
        _num(c, "wait_ms", 0, MAX_MS, 0)
    if cmd in ("cs", "release", "extend", "round") and "lease" not in c:
        raise malformed("field lease: %s needs the lease" % cmd)
    if cmd in ("cs", "round"):
        _num(c, "hold_ms", 0, MAX_MS, 0)
    if cmd == "cs":
        _num(c, "write_if_valid_ms", 0, MAX_MS, 0)
    if cmd == "round":
        ids = [c["op"]]
        for k in ("op_cs", "op_release"):
            v = _num(c, k, 1, MAX_OP)
            if v in ids:
                raise malformed("field %s: round needs op, op_cs and op_release all different" % k)
            ids.append(v)
    if cmd == "extend":
        _num(c, "ttl_ms", 1, MAX_MS)
    if cmd == "failpoint":
        if "name" not in c:
            raise malformed("field name: a failpoint needs a name")
        if c.get("action") not in ("crash", "sleep", "stop", "off"):
            raise malformed("field action: %s is not allowed (allowed: crash, sleep, stop, off)" % json.dumps(c.get("action"))[:100])
        _num(c, "count", 0, MAX_COUNT, 0)
        _num(c, "ms", 0, MAX_MS, 0)
    if cmd == "clock":
        _num(c, "offset_ms", -MAX_OFFSET_MS, MAX_OFFSET_MS, 0)
    return c


# --- the worker ------------------------------------------------------------------


class Worker:
    def __init__(self, adapter_cls):
        self.adapter = adapter_cls(self)
        self.mu = threading.Lock()
        self.cut = threading.Event()  # set by `cut`: the hold under way ends now
        self.inited = False
        self.init_error = None
        self.connected = False
        self.seen_ops = set()
        self.client_name = None
        self.resource = None
        self.res_sock = self.res_file = None
        self.res_keyed = True  # send the key on resource requests (see resource_call)
        self.leases = {}  # lease id -> [handle, key, fence]; kept after release
        self.valid = {}  # lease id -> end of its validity as last reported (CLOCK_MONOTONIC ns)
        self.failpoints = {}  # name -> [action, count, ms, hits]
        self.clock_fd = int(os.environ[ENV_CLOCK_FD]) if ENV_CLOCK_FD in os.environ else None
        self.ops = queue.Queue()
        threading.Thread(target=self.run_ops, daemon=True).start()
        # The version (dpkg-query) is read while the harness sends init.
        self.version = ""
        self.version_read = threading.Thread(target=self.read_version, daemon=True)
        self.version_read.start()

    def read_version(self):
        try:
            self.version = self.adapter.version()[:200]
        except Exception as e:
            log("version: %r" % e)

    def supported_failpoints(self):
        return sorted(set(WORKER_FAILPOINTS) | set(self.adapter.failpoints))

    # -- commands (the reading thread) --

    def claim_op(self, op):
        with self.mu:
            if op in self.seen_ops:
                return False
            self.seen_ops.add(op)
            return True

    def fresh_op(self, c):
        """The op id of an operation if it is in range and new (claimed now), else None."""
        op = c.get("op")
        if c.get("cmd") not in OPERATIONS or type(op) is not int or not 1 <= op <= MAX_OP or not self.claim_op(op):
            return None
        if c.get("cmd") == "round":
            for k in ("op_cs", "op_release"):
                v = c.get(k)
                if type(v) is not int or not 1 <= v <= MAX_OP or not self.claim_op(v):
                    return None
        return op

    def handle(self, c):
        """Applies one valid command; False on shutdown."""
        cmd = c["cmd"]
        if cmd == "shutdown":
            return False
        with self.mu:
            inited, init_error = self.inited, self.init_error
        if cmd == "init" and inited:
            raise malformed("init: the worker was already initialised (init comes exactly once)")
        if cmd != "init" and not inited:
            raise malformed("%s before init (init comes exactly once and first)" % cmd)
        if cmd != "init" and init_error is not None:
            raise malformed("%s after a failed init (%s): restart the worker" % (cmd, clip(init_error)))
        if cmd == "init":
            try:
                self.init(c)
            except Exception as e:
                with self.mu:
                    self.inited, self.init_error = True, str(e) or type(e).__name__
                raise
            with self.mu:
                self.inited = True
            a = self.adapter
            self.version_read.join(VERSION_WAIT_S)
            m = {"type": "ready", "pid": os.getpid(), "lock": a.lock, "needs": a.needs, "caps": list(a.caps),
                 "failpoints": self.supported_failpoints(), "options": sorted(a.options)}
            if self.version:
                m["version"] = self.version
            send(m)
        elif cmd in OPERATIONS:
            if not self.connected:
                raise malformed("%s before the lock has endpoints (send endpoints first)" % cmd)
            self.ops.put(c)
        elif cmd == "failpoint":
            name, action = c["name"], c["action"]
            if name not in self.supported_failpoints():
                raise not_supported("failpoint %s: lock %s cannot hit it (allowed: %s)" % (json.dumps(name[:100]), self.adapter.lock, ", ".join(self.supported_failpoints())))
            with self.mu:
                if action == "off":
                    self.failpoints.pop(name, None)
                else:
                    self.failpoints[name] = [action, c.get("count", 0) or 1, c.get("ms", 0), 0]
        elif cmd == "cut":
            self.cut.set()
        elif cmd == "clock":
            self.clock(c.get("offset_ms", 0))
        elif cmd == "endpoints":
            if self.resource is None:
                raise malformed("endpoints: init carried no resource address, so the lock cannot run critical sections")
            self.connect(c["endpoints"])
        return True

    def init(self, c):
        a = self.adapter
        if "lock" in c and c["lock"] != a.lock:
            raise not_supported("field lock: this worker runs %s, not %s" % (a.lock, json.dumps(c["lock"][:100])))
        opts = c.get("options", {})
        for k, v in opts.items():
            if k not in a.options:
                allowed = ", ".join(sorted(a.options)) or "none"
                raise not_supported("field options: lock %s has no option %s (allowed: %s)" % (a.lock, json.dumps(k[:100]), allowed))
            values = a.options[k][0]
            if values is not None and v not in values:
                raise malformed("field options.%s: %s is not allowed (allowed: %s)" % (k, json.dumps(v[:100]), ", ".join(values)))
        a.configure(opts)
        self.client_name = c["client"]
        if "resource" in c:
            self.resource = host_port(c["resource"], "resource")
        ep = c.get("endpoints", {})
        if any(ep.get(k) for k in ("primary", "sentinels", "masters", "etcd", "cluster")):
            if self.resource is None:
                raise malformed("field resource: init with endpoints needs the resource address")
            self.connect(ep)

    def connect(self, ep):
        a = self.adapter
        if a.needs == "masters" and not ep.get("masters"):
            raise not_supported("field endpoints: lock %s needs masters (independent masters)" % a.lock)
        if a.needs == "cluster" and not ep.get("cluster"):
            raise not_supported("field endpoints: lock %s needs cluster (the seeds of a Redis Cluster)" % a.lock)
        if a.needs == "single" and not (ep.get("primary") or ep.get("sentinels")):
            raise not_supported("field endpoints: lock %s needs primary (or sentinels + master)" % a.lock)
        if ep.get("sentinels") and not ep.get("master"):
            raise malformed("field endpoints.master: sentinels need the master name")
        a.connect(ep)
        self.connected = True

    def clock(self, offset_ms):
        """Steps this process's wall clock (CLOCK_REALTIME) through the shim,
        then answers with the wall time the process reads now (the step's
        evidence: the harness checks it against its own clock)."""
        if self.clock_fd is None:
            if self.adapter.reads_wall_clock:
                raise not_supported("clock: lock %s reads the wall clock and the clock shim is not built (make shim), so the step cannot reach it" % self.adapter.lock)
            # nothing this lock reads moves: the unmoved reading says so
        else:
            # bytes 0..7: the offset in ns, native-endian; drift and epoch stay 0
            os.pwrite(self.clock_fd, (offset_ms * 1_000_000).to_bytes(8, sys.byteorder, signed=True), 0)
        m = {"type": "clock", "wall_ms": time.time_ns() // 1_000_000}
        if offset_ms:
            m["offset_ms"] = offset_ms
        send(m)

    # -- failpoints --

    def hit(self, name):
        with self.mu:
            fp = self.failpoints.get(name)
            if fp is None:
                return
            fp[3] += 1
            if fp[3] != fp[1]:
                return
            del self.failpoints[name]
        action, ms = fp[0], fp[2]
        send({"type": "fired", "name": name, "action": action})
        if action == "crash":
            os.kill(os.getpid(), signal.SIGKILL)
        elif action == "sleep":
            time.sleep(ms / 1000)
        elif action == "stop":
            send({"type": "stopping", "name": name, "ms": ms})
            # Sent to this very thread, the stop takes effect before the
            # call returns: nothing after the failpoint runs until SIGCONT.
            signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)

    # -- renewals (any thread) --

    def renewed(self, handle, valid_until):
        """A watchdog adapter's renewal of a grant: recorded for write_if_valid
        and sent as `renew` (after the grant's reply: see send). Unknown
        handles (inside the library's acquire, before the lease has an id)
        are dropped: the grant's reply carries that validity."""
        with self.mu:
            ids = [i for i, l in self.leases.items() if l[0] is handle]
            for i in ids:
                self.valid[i] = valid_until
        for i in ids:
            send({"type": "renew", "lease": i, "validity_ms": max(0, (valid_until - now()) // 1_000_000), "valid_until": valid_until})

    # -- operations, one at a time, in order --

    def run_ops(self):
        while True:
            c = self.ops.get()
            if c["cmd"] == "round":
                self.round(c)
                continue
            m = self.do(c)
            m.update({"type": "reply", "op": c["op"]})
            send(m)

    def round(self, c):
        """acquire, then cs and release with no harness round trip: each
        step after the acquire announced by `invoke`, each reply stamped."""
        m = self.do({"cmd": "acquire", "op": c["op"], "key": c["key"], "lease": c["lease"], "ttl_ms": c["ttl_ms"], "wait_ms": c.get("wait_ms", 0)})
        m.update({"type": "reply", "op": c["op"], "t": now()})
        send(m)
        if m["status"] != "ok":
            return
        for op, step in ((c["op_cs"], {"cmd": "cs", "hold_ms": c.get("hold_ms", 0)}), (c["op_release"], {"cmd": "release"})):
            send({"type": "invoke", "op": op, "t": now()})
            step.update({"op": op, "lease": c["lease"]})
            m = self.do(step)
            m.update({"type": "reply", "op": op, "t": now()})
            send(m)

    def do(self, c):
        try:
            return self.operation(c)
        except Fail as e:
            return {"status": "fail", "error": clip(e)}
        except NotSupported as e:
            return {"status": "fail", "code": "not-supported", "error": clip(e)}
        except Unknown as e:
            return {"status": "info", "error": clip(e)}
        except Exception as e:  # anything else: the outcome is unknown
            log("op %d: %r" % (c["op"], e))
            return {"status": "info", "error": clip("%s: %s" % (type(e).__name__, e))}

    def operation(self, c):
        cmd = c["cmd"]
        if cmd == "acquire":
            self.hit("before-acquire")
            g = self.adapter.acquire(c["key"], c["ttl_ms"], c.get("wait_ms", 0))
            lease = c.get("lease") or "%s-%d" % (self.client_name, c["op"])
            with self.mu:
                self.leases[lease] = [g.handle, c["key"], g.fence]
            m = {"status": "ok", "lease": lease}
            if g.token:
                m["token"] = g.token
            if g.fence:
                m["fence"] = g.fence
            return self.validity(m, lease, g.valid_until)
        with self.mu:
            l = self.leases.get(c["lease"])
        if l is None:
            raise Fail("unknown lease " + c["lease"])
        handle, key, fence = l
        if cmd == "cs":
            return self.critical_section(c, key, fence)
        if cmd == "release":
            # The lease stays known: releasing it again is for the lock to refuse.
            self.hit("before-release")
            self.adapter.release(handle)
            return {"status": "ok"}
        if cmd == "extend":
            g = self.adapter.extend(handle, c["ttl_ms"])
            return self.validity({"status": "ok"}, c["lease"], g.valid_until)
        raise Fail("not an operation: " + cmd)

    def validity(self, m, lease, valid_until):
        with self.mu:
            self.valid[lease] = valid_until  # what write_if_valid_ms checks
        if valid_until:
            m["valid_until"] = valid_until
            m["validity_ms"] = max(0, (valid_until - now()) // 1_000_000)
        return m

    # -- the critical section and the resource --

    def resource_call(self, req, key):
        """One request line to the resource, one answer line back. The key
        goes last on the line; a resource server older than per-key
        registers answers ERR to the extra word, and the worker then drops
        the key for good (that server has only one register)."""
        if self.res_keyed:
            resp = self.resource_line(req + " " + key)
            if not (resp.startswith("ERR") and "argument" in resp):
                return resp
            self.res_keyed = False
        return self.resource_line(req)

    def resource_line(self, req):
        if self.res_file is None:
            s = socket.create_connection(self.resource, timeout=RESOURCE_TIMEOUT)
            s.settimeout(None)  # a paused peer is not an error; the harness bounds the op
            self.res_sock, self.res_file = s, s.makefile("rwb")
        try:
            self.res_file.write((req + "\n").encode())
            self.res_file.flush()
            line = self.res_file.readline(1 << 16)
            if not line:
                raise ConnectionError("resource closed the connection")
        except OSError:
            self.res_close()
            raise
        return line.decode(errors="replace").strip()

    def res_close(self):
        for x in (self.res_file, self.res_sock):
            try:
                if x is not None:
                    x.close()
            except OSError:
                pass
        self.res_file = self.res_sock = None

    def critical_section(self, c, key, fence):
        lease = c["lease"]
        self.cut.clear()  # a cut from now on ends this section's hold (one during the read too)
        try:
            resp = self.resource_call("READ %s %s %d" % (self.client_name, lease, fence), key)
        except OSError as e:
            return {"status": "info", "error": "resource: %s" % e}
        if resp.startswith("REJECTED"):
            return {"status": "fail", "rejected": True, "error": "rejected by the resource: " + resp}
        if not resp.startswith("OK "):
            return {"status": "info", "error": "resource: " + resp}
        v = int(resp[3:])
        self.hit("cs-after-read")
        hold = c.get("hold_ms", 0)
        if hold:
            self.cut.wait(hold / 1000)
        self.hit("cs-before-write")
        margin = c.get("write_if_valid_ms", 0)
        if margin:
            with self.mu:
                end = self.valid.get(lease, 0)
            left_ms = (end - now()) // 1_000_000
            if end and left_ms < margin:
                return {"status": "fail", "read": v, "error": "lease validity has %d ms left, less than write_if_valid_ms %d: the write was given up" % (left_ms, margin)}
        try:
            resp = self.resource_call("WRITE %s %s %d %d" % (self.client_name, lease, fence, v + 1), key)
        except OSError as e:
            return {"status": "info", "read": v, "error": "resource: %s" % e}
        if resp.startswith("REJECTED"):
            return {"status": "fail", "rejected": True, "read": v, "error": "rejected by the resource: " + resp}
        if resp != "OK":
            return {"status": "info", "read": v, "error": "resource: " + resp}
        return {"status": "ok", "read": v, "wrote": v + 1}


def read_lines(stream):
    """Yields (line number, bytes, or None for a line over MAX_LINE bytes)."""
    n = 0
    while True:
        b = stream.readline(MAX_LINE + 2)
        if not b:
            return
        n += 1
        if len(b) > MAX_LINE + 1 or (len(b) == MAX_LINE + 1 and not b.endswith(b"\n")):
            while not b.endswith(b"\n"):  # skip to the end of the line
                b = stream.readline(MAX_LINE)
                if not b:
                    break
            yield n, None
            continue
        yield n, b.rstrip(b"\n").removesuffix(b"\r")


def main(adapter_cls):
    w = Worker(adapter_cls)
    try:
        for n, b in read_lines(sys.stdin.buffer):
            c, fresh = None, None
            try:
                if b is None:
                    raise malformed("line longer than %d bytes" % MAX_LINE)
                try:
                    text = b.decode("utf-8")
                except UnicodeDecodeError:
                    raise malformed("not UTF-8")
                c = parse(text)
                # An operation with a valid, new op id owns it from here on:
                # if the line is refused, the error ends that op.
                fresh = w.fresh_op(c)
                validate(c)
                if c["cmd"] in OPERATIONS and fresh is None:
                    raise malformed("field op: op id %d was used before (op ids are unique)" % c["op"])
                if not w.handle(c):
                    return 0
            except Exception as e:
                m = {"type": "error", "line": n, "error": clip("stdin:%d: %s" % (n, e if isinstance(e, Refused) else "%s: %s" % (type(e).__name__, e)))}
                if isinstance(e, Refused):
                    m["code"] = e.code
                if fresh is not None:
                    m["op"] = fresh
                if c is not None and c.get("cmd") == "failpoint" and isinstance(e, Refused) and e.code == "not-supported":
                    m["name"], m["action"] = c["name"], c["action"]
                send(m)
        return 0
    finally:
        # Closing may reach servers (a library that releases what it holds
        # when stopped): bounded, so a dead server cannot keep the worker.
        t = threading.Thread(target=w.adapter.close, daemon=True)
        t.start()
        t.join(2)
