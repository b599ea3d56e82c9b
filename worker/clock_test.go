package worker

import (
	"bytes"
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
	w.clock.set(-10 * time.Second) // the wall clock steps back
	defer w.clock.set(0)
	if got := w.mono(mono); !within(got, ttl) {
		t.Errorf("monotonic lease after a wall-clock step: %v left, want about %v (the step must not move it)", time.Duration(got-history.Now()), ttl)
	}
	if got := w.mono(wall); !within(got, ttl+10*time.Second) {
		t.Errorf("wall-clock lease after a step back of 10s: %v left, want about %v", time.Duration(got-history.Now()), ttl+10*time.Second)
	}
}

// The clock message reports the wall time the lock reads after the step:
// moved when the step reaches it (the overlay moved time.Now, or the lock
// reads Config.Now), else the process's unmoved clock, so the harness sees
// a step that reached nothing.
func TestClockMessageSaysWhatTheLockReads(t *testing.T) {
	var out bytes.Buffer
	w := New(&out)
	step := func(ms int64) time.Duration {
		t.Helper()
		out.Reset()
		before := time.Now().Round(0) // real time, once the overlay's offset is taken off
		if ClockInProcess {
			before = before.Add(-time.Duration(w.clock.offset.Load()))
		}
		if err := w.control(Command{Cmd: "clock", OffsetMs: ms}); err != nil {
			t.Fatal(err)
		}
		m, err := DecodeMessage(bytes.TrimSpace(out.Bytes()))
		if err != nil || m.Type != TypeClock || m.OffsetMs != ms {
			t.Fatalf("answer %q (%v), want a clock message with offset_ms %d", out.String(), err, ms)
		}
		return time.UnixMilli(m.WallMs).Sub(before).Round(time.Second)
	}
	w.inited = true
	defer w.clock.set(0)
	want := time.Duration(0)
	if ClockInProcess {
		want = -time.Hour
	}
	if got := step(-3_600_000); got != want {
		t.Errorf("before the lock read Config.Now: the reading is %v from real time, want %v (ClockInProcess %v)", got, want, ClockInProcess)
	}
	w.clock.Now() // the lock reads Config.Now
	if got := step(-3_600_000); got != -time.Hour {
		t.Errorf("once the lock reads Config.Now: %v from real time, want -1h", got)
	}
}
