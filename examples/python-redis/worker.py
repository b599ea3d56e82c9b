#!/usr/bin/python3
"""A lockfault worker for redis-py's own lock, redis.lock.Lock, unchanged.

It speaks the worker protocol of docs/PROTOCOL.md: one JSON object per line,
commands on stdin, messages on stdout, anything for a person on stderr. Only
the standard library and redis-py are used.

    ./bin/simulate run -backend process -worker '/usr/bin/python3 examples/redis-py/worker.py' gc-pause

What it maps:
  acquire  redis.lock.Lock(r, key, timeout=ttl, blocking_timeout=wait).acquire()
           True -> ok, False -> fail (the lock is taken), connection or
           timeout error -> info (the SET may have happened).
  release  Lock.release(): LockError (not owned, or not locked) -> fail,
           connection or timeout error -> info.
  extend   Lock.extend(ttl, replace_ttl=True): same mapping.
  cs       read the harness's resource, hold, write value + 1.
  clock    accepted, and it moves nothing: redis-py's Lock reads only
           time.monotonic() (it never computes how long a grant is good
           for, and valid_until below is monotonic), so a step of the wall
           clock reaches no decision of the lock, as a real NTP step would
           not (property clock/client-steps: held).

valid_until is the start of the acquire (or extend) call plus the TTL, on
time.monotonic_ns(), which on Linux reads CLOCK_MONOTONIC like the harness.
Counting from the start of the call is conservative: the key cannot expire
before that instant, because the SET that created it came later.
"""

import json
import os
import queue
import signal
import socket
import sys
import threading
import time

import redis
import redis.exceptions
import redis.lock
import redis.sentinel

LOCK = "redis-py"
NEEDS = "single"
CAPS = ["extend"]
FAILPOINTS = ["before-acquire", "before-release", "cs-after-read", "cs-before-write"]
OPTIONS = []  # the worker understands no lock options

MAX_LINE = 1 << 20
MAX_OP = (1 << 53) - 1
MAX_MS = 3_600_000
MAX_COUNT = 1_000_000
MAX_OFFSET_MS = 366 * 86_400_000
MAX_STRING = 4096
SOCKET_TIMEOUT = 5.0  # seconds: a dead or partitioned server gives info, not a hang

COMMANDS = {
    "init": {"client", "lock", "options", "endpoints", "resource"},
    "acquire": {"op", "key", "lease", "ttl_ms", "wait_ms"},
    "cs": {"op", "lease", "hold_ms", "write_if_valid_ms"},
    "release": {"op", "lease"},
    "extend": {"op", "lease", "ttl_ms"},
    "failpoint": {"name", "action", "count", "ms"},
    "clock": {"offset_ms"},
    "cut": set(),
    "endpoints": {"endpoints"},
    "shutdown": set(),
}
OPERATIONS = {"acquire", "cs", "release", "extend"}
ENDPOINT_KEYS = {"primary", "sentinels", "master", "masters", "etcd", "password"}
COMMAND_NAMES = "init, acquire, cs, release, extend, failpoint, clock, cut, endpoints, shutdown"


class Refused(Exception):
    """A command the worker refuses; code is malformed or not-supported."""

    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


def malformed(msg):
    return Refused("malformed", msg)


def not_supported(msg):
    return Refused("not-supported", msg)


out_lock = threading.Lock()


def send(msg):
    line = json.dumps(msg, separators=(",", ":")) + "\n"
    with out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def log(*a):
    print("worker.py:", *a, file=sys.stderr, flush=True)


# --- strict decoding --------------------------------------------------------


def _pairs(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError("field %s: given twice" % k)
        d[k] = v
    return d


def _no_constant(name):
    raise ValueError("%s is not JSON" % name)


def parse(line):
    """One JSON object, no duplicate keys, nothing after it."""
    try:
        c = json.loads(line, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except ValueError as e:
        # json.JSONDecodeError is a ValueError; "Extra data" is trailing data.
        msg = str(e)
        if msg.startswith("Extra data"):
            msg = "data after the JSON object (one object per line)"
        raise malformed(msg)
    if not isinstance(c, dict):
        raise malformed("not a JSON object")
    return c


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
            raise malformed("%s: field %s: unknown key (allowed: %s)" % (cmd, k, ", ".join(sorted(allowed))))
        if v is None:
            raise malformed("field %s: null is not allowed (leave the key out)" % k)
    for k in ("client", "lock", "resource", "key", "lease", "name", "action"):
        if k in c:
            if not isinstance(c[k], str):
                raise malformed("field %s: not a string" % k)
            if c[k] == "":
                raise malformed("field %s: empty (leave the key out)" % k)
            if len(c[k]) > MAX_STRING:
                raise malformed("field %s: longer than %d bytes" % (k, MAX_STRING))

    def num(k, lo, hi, default=None):
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

    if cmd in OPERATIONS:
        num("op", 1, MAX_OP)
    if cmd == "init":
        if "client" not in c:
            raise malformed("field client: init needs the client name")
        if "options" in c:
            if not isinstance(c["options"], dict) or not all(isinstance(v, str) for v in c["options"].values()):
                raise malformed("field options: want an object of strings")
    if cmd in ("init", "endpoints") and "endpoints" in c:
        ep = c["endpoints"]
        if not isinstance(ep, dict):
            raise malformed("field endpoints: not an object")
        for k in ep:
            if k not in ENDPOINT_KEYS:
                raise malformed("field endpoints.%s: unknown key (allowed: %s)" % (k, ", ".join(sorted(ENDPOINT_KEYS))))
    if cmd == "endpoints" and "endpoints" not in c:
        raise malformed("field endpoints: missing")
    if cmd == "acquire":
        if "key" not in c:
            raise malformed("field key: acquire needs the key the lock guards")
        num("ttl_ms", 1, MAX_MS)
        num("wait_ms", 0, MAX_MS, 0)
    if cmd in ("cs", "release", "extend") and "lease" not in c:
        raise malformed("field lease: %s needs the lease" % cmd)
    if cmd == "cs":
        num("hold_ms", 0, MAX_MS, 0)
        num("write_if_valid_ms", 0, MAX_MS, 0)
    if cmd == "extend":
        num("ttl_ms", 1, MAX_MS)
    if cmd == "failpoint":
        if "name" not in c:
            raise malformed("field name: a failpoint needs a name")
        if c.get("action") not in ("crash", "sleep", "stop", "off"):
            raise malformed("field action: %s is not allowed (allowed: crash, sleep, stop, off)" % json.dumps(c.get("action")))
        num("count", 0, MAX_COUNT, 0)
        num("ms", 0, MAX_MS, 0)
    if cmd == "clock":
        num("offset_ms", -MAX_OFFSET_MS, MAX_OFFSET_MS, 0)
    return c


# --- the worker -------------------------------------------------------------


class Worker:
    def __init__(self):
        self.mu = threading.Lock()
        self.cut = threading.Event()  # set by `cut`: the hold under way ends now
        self.inited = False
        self.init_error = None
        self.seen_ops = set()
        self.client_name = None
        self.redis = None
        self.resource = None
        self.res_sock = None
        self.res_file = None
        self.leases = {}  # lease id -> (redis.lock.Lock, key); kept after release
        self.valid = {}  # lease id -> end of its validity (CLOCK_MONOTONIC ns)
        self.res_keyed = True  # send the key on resource requests (see resource_call)
        self.failpoints = {}  # name -> [action, count, ms, hits]
        self.ops = queue.Queue()
        self.op_thread = threading.Thread(target=self.run_ops, daemon=True)
        self.op_thread.start()

    # -- commands --

    def handle(self, lineno, c):
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
            raise malformed("%s after a failed init (%s): restart the worker" % (cmd, init_error))
        if cmd == "init":
            try:
                self.init(c)
            except Exception as e:
                with self.mu:
                    self.inited, self.init_error = True, str(e)
                raise
            with self.mu:
                self.inited = True
            send({"type": "ready", "pid": os.getpid(), "lock": LOCK, "needs": NEEDS, "caps": CAPS, "failpoints": FAILPOINTS})
        elif cmd in OPERATIONS:
            if self.redis is None:
                raise malformed("%s before the lock has endpoints (send endpoints first)" % cmd)
            self.ops.put(c)
        elif cmd == "failpoint":
            name, action = c["name"], c["action"]
            if name not in FAILPOINTS:
                raise not_supported("failpoint %s: lock %s cannot hit it (allowed: %s)" % (json.dumps(name), LOCK, ", ".join(FAILPOINTS)))
            with self.mu:
                if action == "off":
                    self.failpoints.pop(name, None)
                else:
                    self.failpoints[name] = [action, c.get("count", 0) or 1, c.get("ms", 0), 0]
        elif cmd == "cut":
            self.cut.set()
        elif cmd == "clock":
            pass  # the client's wall clock is stepped; nothing here reads it
        elif cmd == "endpoints":
            if self.resource is None:
                raise malformed("endpoints: init carried no resource address, so the lock cannot run critical sections")
            self.connect(c["endpoints"])
        return True

    def claim_op(self, op):
        with self.mu:
            if op in self.seen_ops:
                return False
            self.seen_ops.add(op)
            return True

    def init(self, c):
        if "lock" in c and c["lock"] != LOCK:
            raise not_supported("field lock: this worker runs %s, not %s" % (LOCK, json.dumps(c["lock"])))
        for k in c.get("options", {}):
            raise not_supported("field options: lock %s has no option %s (it takes none)" % (LOCK, json.dumps(k)))
        self.client_name = c["client"]
        if "resource" in c:
            host, _, port = c["resource"].rpartition(":")
            if not host or not port.isdigit():
                raise malformed("field resource: want host:port, got %s" % json.dumps(c["resource"]))
            self.resource = (host, int(port))
        ep = c.get("endpoints", {})
        if any(ep.get(k) for k in ("primary", "sentinels", "masters", "etcd")):
            if self.resource is None:
                raise malformed("field resource: init with endpoints needs the resource address")
            self.connect(ep)

    def connect(self, ep):
        """A client for the current primary. Held locks are re-pointed too:
        their grant is a key and a token, valid on whichever server now
        serves the primary's data."""
        password = ep.get("password") or None
        kw = dict(password=password, socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=SOCKET_TIMEOUT)
        if ep.get("primary"):
            host, _, port = ep["primary"].rpartition(":")
            client = redis.Redis(host=host, port=int(port), **kw)
        elif ep.get("sentinels"):
            if not ep.get("master"):
                raise malformed("field endpoints.master: sentinels need the master name")
            nodes = []
            for s in ep["sentinels"]:
                h, _, p = s.rpartition(":")
                nodes.append((h, int(p)))
            sentinel = redis.sentinel.Sentinel(nodes, socket_timeout=SOCKET_TIMEOUT, sentinel_kwargs={"password": password, "socket_timeout": SOCKET_TIMEOUT})
            client = sentinel.master_for(ep["master"], **kw)
        else:
            raise not_supported("field endpoints: lock %s needs primary (or sentinels + master)" % LOCK)
        with self.mu:
            old, self.redis = self.redis, client
            for lk, _ in self.leases.values():
                lk.redis = client
        if old is not None:
            try:
                old.close()
            except Exception:
                pass

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

    # -- operations, one at a time, in order --

    def run_ops(self):
        while True:
            c = self.ops.get()
            try:
                m = self.do(c)
            except Exception as e:  # a bug here must not hang the harness
                log("op %d: %r" % (c["op"], e))
                m = {"status": "info", "error": "worker.py: %r" % e}
            m.update({"type": "reply", "op": c["op"]})
            send(m)

    def do(self, c):
        cmd = c["cmd"]
        if cmd == "acquire":
            return self.acquire(c)
        with self.mu:
            lk, key = self.leases.get(c["lease"], (None, None))
        if lk is None:
            return {"status": "fail", "error": "unknown lease " + c["lease"]}
        if cmd == "cs":
            return self.critical_section(c, key)
        if cmd == "release":
            self.hit("before-release")
            # The lease stays known: releasing it again is refused by the
            # lock itself (LockError: "Cannot release an unlocked lock").
            try:
                lk.release()
            except redis.exceptions.LockError as e:  # LockNotOwnedError too: certainly not released
                return {"status": "fail", "error": "%s: %s" % (type(e).__name__, e)}
            except redis.exceptions.RedisError as e:  # connection, timeout: unknown
                return {"status": "info", "error": "%s: %s" % (type(e).__name__, e)}
            return {"status": "ok"}
        if cmd == "extend":
            start = time.monotonic_ns()
            try:
                lk.extend(c["ttl_ms"] / 1000, replace_ttl=True)
            except redis.exceptions.LockError as e:
                return {"status": "fail", "error": "%s: %s" % (type(e).__name__, e)}
            except redis.exceptions.RedisError as e:
                return {"status": "info", "error": "%s: %s" % (type(e).__name__, e)}
            return self.validity({"status": "ok"}, c["lease"], start, c["ttl_ms"])

    def validity(self, m, lease, start, ttl_ms):
        until = start + ttl_ms * 1_000_000
        with self.mu:
            self.valid[lease] = until  # what write_if_valid_ms checks
        m["valid_until"] = until
        m["validity_ms"] = max(0, (until - time.monotonic_ns()) // 1_000_000)
        return m

    def acquire(self, c):
        self.hit("before-acquire")
        with self.mu:
            client = self.redis
        lk = redis.lock.Lock(client, c["key"], timeout=c["ttl_ms"] / 1000, blocking_timeout=c.get("wait_ms", 0) / 1000)
        start = time.monotonic_ns()
        try:
            ok = lk.acquire()
        except redis.exceptions.RedisError as e:
            return {"status": "info", "error": "%s: %s" % (type(e).__name__, e)}
        if not ok:
            return {"status": "fail", "error": "lock not acquired within wait_ms"}
        lease = c.get("lease") or "%s-%d" % (self.client_name, c["op"])
        with self.mu:
            self.leases[lease] = (lk, c["key"])
        token = lk.local.token
        m = {"status": "ok", "lease": lease, "token": token.decode() if isinstance(token, bytes) else str(token)}
        return self.validity(m, lease, start, c["ttl_ms"])

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
            s = socket.create_connection(self.resource, timeout=SOCKET_TIMEOUT)
            s.settimeout(None)  # a paused peer is not an error; the harness bounds the op
            self.res_sock, self.res_file = s, s.makefile("rwb")
        try:
            self.res_file.write((req + "\n").encode())
            self.res_file.flush()
            line = self.res_file.readline()
            if not line:
                raise ConnectionError("resource closed the connection")
        except OSError:
            self.res_close()
            raise
        return line.decode().strip()

    def res_close(self):
        for x in (self.res_file, self.res_sock):
            try:
                if x is not None:
                    x.close()
            except OSError:
                pass
        self.res_file = self.res_sock = None

    def critical_section(self, c, key):
        lease, fence = c["lease"], 0  # redis-py's lock has no fencing token
        self.cut.clear()  # a cut from now on ends this section's hold
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
        self.cut.wait(c.get("hold_ms", 0) / 1000)
        self.hit("cs-before-write")
        margin = c.get("write_if_valid_ms", 0)
        if margin:
            with self.mu:
                until = self.valid.get(lease, 0)
            left_ms = (until - time.monotonic_ns()) // 1_000_000
            if until and left_ms < margin:
                return {"status": "fail", "error": "lease validity has %d ms left, less than write_if_valid_ms %d: the write was given up" % (left_ms, margin)}
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
    """Yields (line number, bytes or None for an over-long line)."""
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
        yield n, b.rstrip(b"\r\n")


def main():
    w = Worker()
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
            # An operation with a valid, new op id owns it from here on: if
            # the line is refused, the error ends that op.
            op = c.get("op")
            if c.get("cmd") in OPERATIONS and type(op) is int and 1 <= op <= MAX_OP and w.claim_op(op):
                fresh = op
            validate(c)
            if c["cmd"] in OPERATIONS and fresh is None:
                raise malformed("field op: op id %d was used before (op ids are unique)" % op)
            if not w.handle(n, c):
                return 0
        except Refused as e:
            m = {"type": "error", "line": n, "code": e.code, "error": "stdin:%d: %s" % (n, e)}
            if fresh is not None:
                m["op"] = fresh
            if c is not None and c.get("cmd") == "failpoint" and e.code == "not-supported":
                m["name"], m["action"] = c["name"], c["action"]
            send(m)
        except Exception as e:  # e.g. a server that cannot be reached at init
            m = {"type": "error", "line": n, "error": "stdin:%d: %s: %s" % (n, type(e).__name__, e)}
            if fresh is not None:
                m["op"] = fresh
            send(m)
    return 0


if __name__ == "__main__":
    sys.exit(main())
