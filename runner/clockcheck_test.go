package runner

import (
	"testing"
	"time"
)

// A clock answer shows the step only when it is real time moved by the
// offset and cannot be real time unmoved.
func TestClockEffect(t *testing.T) {
	sent := time.UnixMilli(1_800_000_000_000)
	for _, c := range []struct {
		name     string
		offsetMs int64
		took     time.Duration
		read     time.Duration // the reading, from sent
		seen     bool
	}{
		{"moved", -1000, 2 * time.Millisecond, -999 * time.Millisecond, true},
		{"moved forward", 5000, time.Millisecond, 5 * time.Second, true},
		{"unmoved", -1000, 2 * time.Millisecond, time.Millisecond, false},
		{"moved by another amount", -1000, 2 * time.Millisecond, -2 * time.Second, false},
		{"an answer slower than the offset", -1000, 3 * time.Second, 500 * time.Millisecond, false},
	} {
		seen, why := clockEffect(clockSent{offsetMs: c.offsetMs, sent: sent}, sent.Add(c.took), sent.Add(c.read).UnixMilli())
		if seen != c.seen {
			t.Errorf("%s: seen %v (%s), want %v", c.name, seen, why, c.seen)
		}
	}
}
