package examples

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/suite"
)

// A Python and a PHP lock that date their key's expiry from the wall clock
// (time.time(), microtime(): testdata/wallclock_worker.*) are caught by
// clock/client-steps, through the clock shim, as the Go one is through the
// clock overlay (adapters/cmd/lockfault-ext); their correct twins (redis-py's
// lock, the PHP lock dating it on hrtime) hold, each step seen to take
// effect.
func TestWallClockWorkersAreCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real nodes")
	}
	if out, err := exec.Command("bash", "../faults/clockshim/build.sh").CombinedOutput(); err != nil {
		t.Fatalf("the clock shim does not build (make deps installs gcc): %v\n%s", err, out)
	}
	for _, c := range []struct {
		argv   []string
		lock   string
		cycles int // 0: the property's own 3
		want   card.Outcome
	}{
		// redis-py sleeps 100 ms between attempts: its acquire spans fewer
		// steps, and one cycle does not always catch it (its own 3 do).
		{[]string{"/usr/bin/python3", "testdata/wallclock_worker.py"}, "", 0, card.Violated},
		{[]string{"/usr/bin/python3", "python-redis/worker.py"}, "", 1, card.Held},
		{[]string{"/usr/bin/php", "testdata/wallclock_worker.php"}, "", 1, card.Violated},
		{[]string{"/usr/bin/php", "testdata/wallclock_worker.php"}, "phpredis-wallclock+wallclock=0", 1, card.Held},
	} {
		t.Run(c.argv[1]+c.lock, func(t *testing.T) {
			if err := exec.Command(c.argv[0], "--version").Run(); err != nil {
				t.Skipf("%s is missing (make deps installs it): %v", c.argv[0], err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			subj, err := runner.External(ctx, c.argv, c.lock)
			if err != nil {
				t.Fatal(err)
			}
			cd, _, err := suite.Run(ctx, subj, suite.Options{Only: []string{"clock/client-steps"}, Cycles: c.cycles, Parallel: 1,
				Run: runner.Options{Backend: "process", ReportsDir: t.TempDir()}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(cd.Rows) != 1 || cd.Rows[0].Outcome != c.want {
				t.Fatalf("%s: rows %+v, want clock/client-steps %s", subj.Label(), cd.Rows, c.want)
			}
			t.Logf("%s: %s %s", subj.Label(), cd.Rows[0].Outcome, cd.Rows[0].Finding)
		})
	}
}
