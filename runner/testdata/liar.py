# A worker that lies in one way, for runner/trust_test.go: it answers the
# protocol well enough to start, then breaks the rule named by its first
# argument. It talks to no Redis: every grant is invented.
import json, sys, time

mode = sys.argv[1]
out = sys.stdout

def send(m):
    out.write(json.dumps(m) + "\n")
    out.flush()

for line in sys.stdin:
    c = json.loads(line)
    cmd = c.get("cmd")
    if cmd == "init":
        send({"type": "ready", "pid": 1, "lock": "liar", "needs": "single"})
    elif cmd == "acquire":
        lease = c["lease"]
        if mode == "other-lease":
            lease = lease + "-not-mine"
        reply = {"type": "reply", "op": c["op"], "status": "ok", "lease": lease, "validity_ms": c["ttl_ms"]}
        if mode == "negative-validity":
            reply["validity_ms"] = -5
        send(reply)
        if mode == "renew-unknown":
            send({"type": "renew", "lease": "never-granted", "validity_ms": 1000})
        if mode == "renew-flood":
            for _ in range(100000):
                send({"type": "renew", "lease": c["lease"], "validity_ms": 1000})
        if mode == "stderr-flood":
            chunk = "x" * 65536 + "\n"
            for _ in range(2000):  # 128 MiB
                sys.stderr.write(chunk)
    elif cmd == "cs" and mode == "die-in-cs":
        sys.stderr.write("worker: exiting in the critical section\n")
        sys.exit(3)
    elif cmd == "cs":
        # Hold for the critical section as asked: a worker that answers at
        # once floods the harness on a fast machine (MaxMessagesPerSecond).
        time.sleep(c.get("hold_ms", 0) / 1000.0)
        send({"type": "reply", "op": c["op"], "status": "ok"})
    elif cmd in ("release", "extend"):
        send({"type": "reply", "op": c["op"], "status": "ok"})
    elif cmd == "shutdown":
        break
