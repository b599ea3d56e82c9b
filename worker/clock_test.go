package worker

import (
	"testing"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/lockimpl"
)

// TestMonoFollowsTheClockTheLeaseWasReadOn: a validity read from time.Now
// (monotonic) is placed on the timeline whatever the client's wall clock
// does; one read from the wall clock (Config.Now) moves with a step of it.
func TestMonoFollowsTheClockTheLeaseWasReadOn(t *testing.T) {
	w := New(nil)
	const ttl = 2 * time.Second
	mono := &lockimpl.Lease{ValidUntil: time.Now().Add(ttl)}
	wall := &lockimpl.Lease{ValidUntil: w.clock.Now().Add(ttl)}
	within := func(got int64, want time.Duration) bool {
		d := time.Duration(got-history.Now()) - want
		return d.Abs() < 100*time.Millisecond
	}
	if got := w.mono(mono); !within(got, ttl) {
		t.Fatalf("monotonic lease before the step: %v left, want about %v", time.Duration(got-history.Now()), ttl)
	}
	if got := w.mono(wall); !within(got, ttl) {
		t.Fatalf("wall-clock lease before the step: %v left, want about %v", time.Duration(got-history.Now()), ttl)
	}
	w.clock.offset.Store(int64(-10 * time.Second)) // the wall clock steps back
	if got := w.mono(mono); !within(got, ttl) {
		t.Errorf("monotonic lease after a wall-clock step: %v left, want about %v (the step must not move it)", time.Duration(got-history.Now()), ttl)
	}
	if got := w.mono(wall); !within(got, ttl+10*time.Second) {
		t.Errorf("wall-clock lease after a step back of 10s: %v left, want about %v", time.Duration(got-history.Now()), ttl+10*time.Second)
	}
}
