package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/suite"
	"github.com/lockfault/lockfault/worker"
)

// clockSteps runs property clock/client-steps (1 cycle) against a lock of
// a worker binary, through lockfault-ext's worker exactly as the published
// libraries run, and returns its card row.
func clockSteps(t *testing.T, bin, lock string) card.Row {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	subj, err := runner.External(ctx, []string{bin}, lock)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := suite.Run(ctx, subj, suite.Options{Only: []string{"clock/client-steps"}, Cycles: 1, Parallel: 1,
		Run: runner.Options{Backend: "process", ReportsDir: t.TempDir()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != 1 {
		t.Fatalf("%d rows, want clock/client-steps alone", len(c.Rows))
	}
	r := c.Rows[0]
	t.Logf("%s (%s): %s %s", lock, filepath.Base(bin), r.Outcome, r.Finding)
	return r
}

// A Go lock library that dates its key's expiry from
// time.Now().UnixMilli() calls time.Now itself, never Config.Now: a client
// clock step reaches it only in a worker built with the clock overlay.
// There, clock/client-steps catches it and its monotonic twin holds;
// without the overlay, both are not exercised (unknown), never held.
func TestClockClientStepsReachAGoLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds this test binary with the clock overlay and runs real nodes")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "run", "github.com/lockfault/lockfault/faults/clockoverlay", "-out", filepath.Join(dir, "clock")).Output()
	if err != nil {
		t.Fatalf("clockoverlay: %v", err)
	}
	moved := filepath.Join(dir, "lockfault-ext.test")
	if b, err := exec.CommandContext(ctx, "go", "test", "-c", "-overlay", strings.TrimSpace(string(out)), "-tags", "lockfault_clock", "-o", moved, ".").CombinedOutput(); err != nil {
		t.Fatalf("go test -c with the overlay: %v\n%s", err, b)
	}
	if r := clockSteps(t, moved, "wallclock-broken"); r.Outcome != card.Violated {
		t.Errorf("wallclock-broken with the overlay: %s (%s), want violated", r.Outcome, r.Finding)
	}
	if r := clockSteps(t, moved, "wallclock-correct"); r.Outcome != card.Held {
		t.Errorf("wallclock-correct with the overlay: %s (%s), want held", r.Outcome, r.Finding)
	}
	if worker.ClockInProcess {
		return // this binary has the overlay too: there is no plain one to run
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, lock := range []string{"wallclock-broken", "wallclock-correct"} {
		r := clockSteps(t, self, lock)
		if r.Outcome != card.Unknown || !strings.Contains(r.Finding, "had no effect on the lock") {
			t.Errorf("%s without the overlay: %s (%s), want unknown: the step had no effect", lock, r.Outcome, r.Finding)
		}
	}
}
