package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/lockfault/lockfault/hunt"
	"github.com/lockfault/lockfault/pages"
	"github.com/lockfault/lockfault/runner"
)

// cmdHunt draws schedules (at random, or learning from what each run covered) against one lock until a violation is
// found or the budget is spent, and shrinks what it finds.
func cmdHunt(args []string, stdout, stderr io.Writer) int {
	f := newFlags("hunt", "", stdout, stderr)
	var opt hunt.Options
	backend := f.backend()
	lock := f.String("lock", "", "the lock to hunt: a built-in (see simulate list), or with -worker the name the worker should declare")
	workerLine := f.String("worker", "", "start this command as every client's worker (docs/PROTOCOL.md)")
	known := f.String("known", "", "comma-separated known limits of the lock: their faults are never drawn (allowed: "+strings.Join(hunt.LimitNames(), ", ")+"); a built-in lock's come from its promise table")
	f.IntVar(&opt.Runs, "runs", 0, fmt.Sprintf("schedules to try at most (1 to %d; 0: only -time bounds the hunt)", hunt.MaxRuns))
	f.DurationVar(&opt.Time, "time", 0, "wall time to spend at most (e.g. 10m; 0: only -runs bounds the hunt)")
	f.Int64Var(&opt.Seed, "seed", 0, "the generator's seed (0: from the time; printed, recorded)")
	f.BoolVar(&opt.KeepGoing, "keep-going", false, "go on after a violation, collecting the distinct ones")
	f.IntVar(&opt.Tries, "tries", 3, fmt.Sprintf("a shrinking candidate still fails when its violation reappears within this many runs (1 to %d)", hunt.MaxTries))
	f.IntVar(&opt.RateRuns, "rate-runs", 20, fmt.Sprintf("runs of the minimal scenario for its reproduction rate (1 to %d)", hunt.MaxRateRuns))
	f.IntVar(&opt.ShrinkRuns, "shrink-runs", 60, fmt.Sprintf("runs the shrinker may spend per finding (1 to %d)", hunt.MaxShrinkRun))
	f.BoolVar(&opt.NoShrink, "no-shrink", false, "keep the failing schedule as it was found")
	f.StringVar(&opt.Search, "search", hunt.SearchRandom, "how schedules are drawn (allowed: "+strings.Join(hunt.Searches, ", ")+"; docs/HUNT.md)")
	f.IntVar(&opt.Parallel, "parallel", 1, fmt.Sprintf("schedules run at once (1 to %d)", hunt.MaxParallel))
	f.StringVar(&opt.Run.ReportsDir, "reports", "reports", "report root: the hunt goes to <reports>/hunt/<lock>/<run-id>/")
	if code, ok := f.noArgs(args); !ok {
		return code
	}
	opt.KnownViolations = list(*known)
	opt.Run.Backend = *backend
	opt.Log = stdout
	if err := opt.Check(); err != nil { // before anything starts
		return f.fail("%v", err)
	}
	ctx, stop := interruptible()
	defer stop()
	defer writeIndex(opt.Run.ReportsDir, stderr)
	subj, err := runner.Resolve(ctx, *lock, *workerLine)
	if err != nil {
		return f.fail("%v", err)
	}
	res, err := hunt.Run(ctx, subj, opt)
	if res != nil {
		fmt.Fprintf(stdout, "\nhunt of %s: %d schedules, %d violations; card: %s\n", res.Lock, len(res.Tried), len(res.Findings), filepath.Join(res.Dir, pages.FileHuntCard))
		for _, fd := range res.Findings {
			fmt.Fprintf(stdout, "  %s: %s (reproduces in %d of %d runs)\n", fd.Fingerprint.ID(), fd.MinimalYAML, fd.Rate[0], fd.Rate[1])
		}
	}
	switch {
	case err != nil:
		return f.fail("%v", err)
	case res.Interrupted:
		fmt.Fprintln(stdout, "INTERRUPTED: every finding so far is kept")
		return 2
	case len(res.Findings) > 0:
		return 1
	}
	return 0
}
