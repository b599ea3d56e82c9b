// Package workercheck is the conformance check of the worker protocol
// (docs/PROTOCOL.md): it starts a worker, whatever its language, sends it
// real lines, and judges the lines it writes back, one named check per rule,
// as testing/slogtest does for a slog.Handler and nettest for a net.Conn.
//
// Run starts the worker with LOCKFAULT_ROLE=worker in a process group of its
// own, a real redis-server on a free loopback port (several for a lock that
// needs independent masters) and lockfault's protected resource, and runs
// every check. Each check has a stable id ("rules/unknown-key"), sends its
// lines to a fresh worker or to one a passing check left in a known state,
// and is reported ok, FAIL (with the line sent, the line that came back and
// the rule of PROTOCOL.md it breaks) or skip (with the reason: a check that
// cannot apply is never reported as passed). Every wait is bounded by a named
// constant, and every process Run starts is gone when it returns.
package workercheck
