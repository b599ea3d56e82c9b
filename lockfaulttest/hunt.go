package lockfaulttest

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault/hunt"
	"github.com/lockfault/lockfault/internal/interrupt"
	"github.com/lockfault/lockfault/pages"
)

// Budget bounds a Hunt: at most Runs schedules and Time of wall time (at
// least one of them), drawn from Seed (0: from the time, logged).
type Budget struct {
	Seed      int64
	Runs      int
	Time      time.Duration
	KeepGoing bool // go on after a violation, collecting distinct ones
}

// Hunt draws random schedules of faults against the lock until the budget
// is spent or a violation is found, shrinks each violation to a minimal
// scenario and fails t with it: the path of its minimal.yaml (keep it as a
// regression with Options.Extra) and its reproduction rate over 20 runs.
// Options.KnownViolations are the lock's known limits: the faults of the
// properties listed there are never drawn. The hunt's card is logged.
func Hunt(t *testing.T, def LockDef, opts Options, b Budget) {
	t.Helper()
	subj := serve(t, def)
	so, err := opts.resolve(def.Info.Name, false)
	if err != nil {
		t.Fatal("lockfaulttest:", err)
	}
	ho := hunt.Options{Seed: b.Seed, Runs: b.Runs, Time: b.Time, KeepGoing: b.KeepGoing, Run: so.Run,
		KnownViolations: hunt.LimitsOf(slices.Sorted(maps.Keys(opts.KnownViolations))), Log: testWriter{t}}
	ho.Run.ReportsDir = filepath.Join(so.Run.ReportsDir, "gotest", def.Info.Name)
	ctx, stop := interrupt.Context()
	defer stop()
	res, err := hunt.Run(ctx, subj, ho)
	if err != nil {
		t.Fatal("lockfaulttest:", err)
	}
	t.Logf("hunt: %d schedules (seed %d) in %v; card: %s", len(res.Tried), res.Seed, res.Took.Round(time.Second), filepath.Join(res.Dir, pages.FileHuntCard))
	for _, f := range res.Findings {
		t.Errorf("%s: %s\nminimal scenario (%d faults): %s\nreproduces in %d of %d runs; a failing run: %s",
			f.Fingerprint.ID(), f.Fingerprint.Detail, len(f.Minimal.Events), f.MinimalYAML, f.Rate[0], f.Rate[1], f.MinimalDir)
	}
}

// testWriter logs each line written to it.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
