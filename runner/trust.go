package runner

import (
	"fmt"
	"sync"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/worker"
)

// The harness trusts nothing a worker says: every reply is checked against
// the operation that was sent, every validity and time must be in range,
// renewals must name a lease the worker was granted, and what a worker can
// cost the harness is bounded. The first breach ends the run at once as a
// harness error naming the worker, its stdout line and the rule.
const (
	// MaxMessagesPerSecond bounds one worker's messages in any one-second
	// window (a busy round-mode worker sends a few thousand).
	MaxMessagesPerSecond = 20000
	// MaxRenewalsPerSecond bounds one worker's renew messages per second
	// (a watchdog renews a few times per lease).
	MaxRenewalsPerSecond = 200
	// MaxEvents bounds the events of one run's history.
	MaxEvents = 5_000_000
	// MaxWorkerLog bounds workers.log (the workers' stderr) per run; the
	// rest is dropped and counted.
	MaxWorkerLog = 64 << 20
	// maxValidity bounds a validity or a valid_until's distance from now.
	maxValidity = 366 * 24 * time.Hour
)

// pendingOp is an operation sent to a worker and not yet answered.
type pendingOp struct {
	cmd worker.Command
	ch  chan worker.Message
	// round: a step of a worker round, which the worker reports with an
	// invoke before its reply; any other op gets its reply only.
	round bool
}

// checkReply checks a reply against the operation it answers.
func checkReply(cmd worker.Command, m worker.Message) error {
	if m.Type != "reply" {
		return nil
	}
	if m.Lease != "" && cmd.Lease != "" && m.Lease != cmd.Lease {
		return fmt.Errorf("reply to %s op %d names lease %q, but the %s was for lease %q", cmd.Cmd, m.Op, m.Lease, cmd.Cmd, cmd.Lease)
	}
	grants := cmd.Cmd == "acquire" || cmd.Cmd == "extend"
	if !grants && (m.ValidityMs != 0 || m.ValidUntil != 0 || m.Token != "" || m.Fence != 0) {
		return fmt.Errorf("reply to %s op %d carries grant fields (validity_ms, valid_until, token, fence): only an acquire or an extend grants", cmd.Cmd, m.Op)
	}
	if cmd.Cmd != "cs" && (m.Read != nil || m.Wrote != nil || m.Rejected) {
		return fmt.Errorf("reply to %s op %d carries critical-section fields (read, wrote, rejected): only a cs has them", cmd.Cmd, m.Op)
	}
	return checkValidity(fmt.Sprintf("reply to %s op %d", cmd.Cmd, m.Op), m.ValidityMs, m.ValidUntil)
}

// checkValidity: a validity is never negative, and neither it nor a
// valid_until lies absurdly far away.
func checkValidity(what string, ms, until int64) error {
	switch {
	case ms < 0:
		return fmt.Errorf("%s: validity_ms %d is negative (allowed: 0 to %d)", what, ms, maxValidity.Milliseconds())
	case ms > maxValidity.Milliseconds():
		return fmt.Errorf("%s: validity_ms %d is more than a year (allowed: 0 to %d)", what, ms, maxValidity.Milliseconds())
	case until < 0:
		return fmt.Errorf("%s: valid_until %d is negative (CLOCK_MONOTONIC nanoseconds, 0 for no end)", what, until)
	case until > 0 && time.Duration(until-history.Now()) > maxValidity:
		return fmt.Errorf("%s: valid_until %d is more than a year from now (%d on CLOCK_MONOTONIC)", what, until, history.Now())
	}
	return nil
}

// rate counts events in one-second windows.
type rate struct {
	start time.Time
	n     int
}

// add counts one event and reports whether the window's bound is passed.
func (r *rate) add(now time.Time, bound int) bool {
	if now.Sub(r.start) >= time.Second {
		r.start, r.n = now, 0
	}
	r.n++
	return r.n > bound
}

// capWriter passes on at most max bytes and counts the rest; it is safe for
// concurrent use (every worker's stderr goes to one workers.log).
type capWriter struct {
	mu      sync.Mutex
	w       interface{ Write([]byte) (int, error) }
	max     int64
	written int64
	dropped int64
}

func (c *capWriter) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := int64(len(b))
	if room := c.max - c.written; room < n {
		c.dropped += n - max(room, 0)
		b = b[:max(room, 0)]
	}
	if len(b) > 0 {
		if _, err := c.w.Write(b); err != nil {
			return 0, err
		}
		c.written += int64(len(b))
	}
	return int(n), nil
}
